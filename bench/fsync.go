package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// This file measures the raw fsync rate of a disk: the floor under any
// durable write a server on it makes.

// Defaults for zero FsyncConfig fields.
const (
	DefaultFsyncSizeBytes = 4096
	DefaultFsyncDuration  = 5 * time.Second
	// DefaultPreallocBytes matches Apache ZooKeeper's default preAllocSize
	// (64 MiB), the size its transaction log files are grown by.
	DefaultPreallocBytes = 64 << 20
)

// FsyncConfig describes a disk measurement.
type FsyncConfig struct {
	// Dir is where the test files go (they are removed afterwards); it
	// must be on the disk to measure.
	Dir string
	// SizeBytes is written before each sync (default DefaultFsyncSizeBytes).
	SizeBytes int
	// Duration is how long each mode runs (default DefaultFsyncDuration).
	Duration time.Duration
	// PreallocBytes is the size of the overwrite mode's file (default
	// DefaultPreallocBytes).
	PreallocBytes int64
	// Parallel writers (default 1), each on its own file, start each
	// write+sync together, and a latency lasts until the last of them is
	// done: the floor under a write several processes on the same disk
	// must each make durable, such as a ledger add acknowledged by two
	// bookies that share a disk.
	Parallel int
}

// Validate reports the first invalid field.
func (c FsyncConfig) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("bench: fsync: no directory")
	case c.SizeBytes < 0 || c.SizeBytes > 64<<20:
		return fmt.Errorf("bench: fsync: size %d out of range [0, 64 MiB]", c.SizeBytes)
	case c.Duration < 0:
		return fmt.Errorf("bench: fsync: negative duration %v", c.Duration)
	case c.PreallocBytes < 0:
		return fmt.Errorf("bench: fsync: negative preallocation %d", c.PreallocBytes)
	case c.Parallel < 0 || c.Parallel > 64:
		return fmt.Errorf("bench: fsync: %d parallel writers out of range [1, 64]", c.Parallel)
	}
	return nil
}

func (c FsyncConfig) withDefaults() FsyncConfig {
	if c.SizeBytes == 0 {
		c.SizeBytes = DefaultFsyncSizeBytes
	}
	if c.Duration == 0 {
		c.Duration = DefaultFsyncDuration
	}
	if c.PreallocBytes == 0 {
		c.PreallocBytes = DefaultPreallocBytes
	}
	c.PreallocBytes = max(c.PreallocBytes, int64(c.SizeBytes))
	c.Parallel = max(c.Parallel, 1)
	return c
}

// FsyncResult is the outcome of Fsync, marshalled as one JSON line.
type FsyncResult struct {
	Dir         string  `json:"dir"`
	SizeBytes   int     `json:"size_bytes"`
	DurationSec float64 `json:"duration_sec"` // per mode
	Parallel    int     `json:"parallel"`     // writers per latency
	// Append writes at the end of a growing file, so every sync also
	// commits the file's new size (a metadata update): a log without
	// preallocation.
	Append FsyncMode `json:"append"`
	// Overwrite writes inside a file whose blocks were written and synced
	// beforehand (PreallocBytes, wrapping around), so a sync only flushes
	// data: a preallocated log.
	Overwrite FsyncMode `json:"overwrite"`
}

// FsyncMode is the measurement of one way of writing.
type FsyncMode struct {
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Us     float64 `json:"p50_us"`
	P99Us     float64 `json:"p99_us"`
	// P999Us shows stalls too rare for the p99: a disk that stalls every
	// 100 ms under two syncing writers does so for ≈ 0.4% of their syncs.
	P999Us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
}

// MarshalLine returns r as one line of JSON, newline included.
func (r FsyncResult) MarshalLine() ([]byte, error) { return marshalLine(r) }

// Fsync measures write-then-fdatasync in cfg.Dir, appending and then
// overwriting, each for cfg.Duration. A latency is one write plus one
// fdatasync (fsync where fdatasync does not exist).
func Fsync(ctx context.Context, cfg FsyncConfig) (FsyncResult, error) {
	if err := cfg.Validate(); err != nil {
		return FsyncResult{}, err
	}
	cfg = cfg.withDefaults()
	res := FsyncResult{Dir: cfg.Dir, SizeBytes: cfg.SizeBytes, DurationSec: cfg.Duration.Seconds(), Parallel: cfg.Parallel}
	var err error
	if res.Append, err = fsyncMode(ctx, cfg, false); err != nil {
		return FsyncResult{}, err
	}
	if res.Overwrite, err = fsyncMode(ctx, cfg, true); err != nil {
		return FsyncResult{}, err
	}
	return res, nil
}

// fsyncMode runs one mode in fresh temporary files, one per writer.
func fsyncMode(ctx context.Context, cfg FsyncConfig, overwrite bool) (FsyncMode, error) {
	files := make([]*os.File, cfg.Parallel)
	for i := range files {
		f, err := os.CreateTemp(cfg.Dir, "keeper-fsync-*.tmp")
		if err != nil {
			return FsyncMode{}, fmt.Errorf("bench: fsync: %w", err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		if overwrite {
			if err := preallocate(f, cfg.PreallocBytes); err != nil {
				return FsyncMode{}, fmt.Errorf("bench: fsync: preallocate %s: %w", f.Name(), err)
			}
		}
		files[i] = f
	}
	block := make([]byte, cfg.SizeBytes)
	for i := range block {
		block[i] = byte(i)
	}
	slots := cfg.PreallocBytes / int64(cfg.SizeBytes)
	writeSync := func(f *os.File, n int64) error {
		var err error
		if overwrite {
			_, err = f.WriteAt(block, (n%slots)*int64(cfg.SizeBytes))
		} else {
			_, err = f.Write(block)
		}
		if err == nil {
			err = datasync(f)
		}
		if err != nil {
			return fmt.Errorf("bench: fsync: %s: %w", f.Name(), err)
		}
		return nil
	}
	errs := make([]error, len(files))
	h := NewHistogram()
	end := time.Now().Add(cfg.Duration)
	var n int64
	for now := time.Now(); now.Before(end) && ctx.Err() == nil; n++ {
		var wg sync.WaitGroup
		for i := 1; i < len(files); i++ {
			wg.Go(func() { errs[i] = writeSync(files[i], n) })
		}
		errs[0] = writeSync(files[0], n)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return FsyncMode{}, err
		}
		done := time.Now()
		h.Record(done.Sub(now))
		now = done
	}
	if err := ctx.Err(); err != nil {
		return FsyncMode{}, context.Cause(ctx)
	}
	return FsyncMode{
		Ops:       n,
		OpsPerSec: round3(float64(n) / cfg.Duration.Seconds()),
		P50Us:     micros(h.Quantile(0.5)),
		P99Us:     micros(h.Quantile(0.99)),
		P999Us:    micros(h.Quantile(0.999)),
		MaxUs:     micros(h.Max()),
	}, nil
}

// preallocate fills f with size bytes of zeros and syncs it, so that
// later writes inside it allocate nothing.
func preallocate(f *os.File, size int64) error {
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off); err != nil {
			return err
		}
	}
	return f.Sync()
}
