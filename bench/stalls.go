package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"
)

// This file measures whether the machine itself stops: a virtual machine
// whose host caps its CPU time per period is descheduled whole, every
// vCPU and its disk with it, once its use in a period passes the cap. A
// server on such a machine meets those stops as latency no change of its
// own can remove, except doing less work per second. Stalls tells them
// apart from a slow disk by running, in turn, threads that only spin,
// writers that only write and sync, and both at once: a stop that comes
// only with both, at a fixed period, is the host's cap.

// Defaults for zero StallsConfig fields.
const (
	DefaultStallsWriters  = 3
	DefaultStallsRate     = 1000
	DefaultStallsDuration = 4 * time.Second
	DefaultStallsGap      = 4 * time.Millisecond
	// stallsWriteBytes is one write before each sync: about one small
	// txn, as a log appends it.
	stallsWriteBytes = 128
	// stallsFileBytes is each writer's preallocated file, rewritten
	// from its start when a run reaches its end.
	stallsFileBytes = 8 << 20
	// stallsMaxEvents bounds the stalls and slow syncs kept per phase
	// (a machine that stops more often than that is reported as such
	// by the counts alone).
	stallsMaxEvents = 100_000
)

// StallsConfig describes a stall measurement.
type StallsConfig struct {
	// Dir is where the writers' files go (removed afterwards).
	Dir string
	// Spinners are threads that do nothing but read the clock (default
	// one per CPU, at most 64).
	Spinners int
	// Writers each write and fdatasync their own file Rate times a
	// second.
	Writers int
	Rate    int
	// Duration is the length of each of the three phases.
	Duration time.Duration
	// Gap is the shortest pause that counts as a stall.
	Gap time.Duration
}

// Validate reports the first invalid field.
func (c StallsConfig) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("bench: stalls: no directory")
	case c.Spinners < 0 || c.Spinners > 64:
		return fmt.Errorf("bench: stalls: %d spinners out of range [1, 64]", c.Spinners)
	case c.Writers < 0 || c.Writers > 64:
		return fmt.Errorf("bench: stalls: %d writers out of range [1, 64]", c.Writers)
	case c.Rate < 0 || c.Rate > 100_000:
		return fmt.Errorf("bench: stalls: rate %d out of range [1, 100000]", c.Rate)
	case c.Duration < 0 || c.Gap < 0:
		return errors.New("bench: stalls: negative duration or gap")
	}
	return nil
}

func (c StallsConfig) withDefaults() StallsConfig {
	if c.Spinners == 0 {
		c.Spinners = min(runtime.NumCPU(), 64)
	}
	if c.Writers == 0 {
		c.Writers = DefaultStallsWriters
	}
	if c.Rate == 0 {
		c.Rate = DefaultStallsRate
	}
	if c.Duration == 0 {
		c.Duration = DefaultStallsDuration
	}
	if c.Gap == 0 {
		c.Gap = DefaultStallsGap
	}
	return c
}

// StallsResult is the outcome of Stalls, marshalled as one JSON line.
type StallsResult struct {
	Dir           string  `json:"dir"`
	Spinners      int     `json:"spinners"`
	Writers       int     `json:"writers"`
	RatePerWriter int     `json:"rate_per_writer"`
	DurationSec   float64 `json:"duration_sec"` // per phase
	GapUs         float64 `json:"gap_us"`
	// Spin runs the spinners alone, Sync the writers alone, Both the two
	// together.
	Spin StallsPhase `json:"spin"`
	Sync StallsPhase `json:"sync"`
	Both StallsPhase `json:"both"`
}

// StallsPhase is what one phase saw. Stalls are pauses between two reads
// of the clock that every spinner saw at once, for at least the gap: with
// a spinner per CPU, the whole machine stopped, where a thread that takes
// one spinner's CPU pauses that spinner alone. Slow syncs are
// writes+syncs that took at least the gap. A median interval near 100 ms,
// with stalls only in Both, is a host's CPU cap with a 100 ms period.
type StallsPhase struct {
	Stalls             int     `json:"stalls"`
	StallsPerSec       float64 `json:"stalls_per_sec"`
	StalledMsPerSec    float64 `json:"stalled_ms_per_sec"`
	StallIntervalP50Ms float64 `json:"stall_interval_p50_ms"`
	Syncs              int64   `json:"syncs"`
	SyncsPerSec        float64 `json:"syncs_per_sec"`
	SyncP50Us          float64 `json:"sync_p50_us"`
	SyncP99Us          float64 `json:"sync_p99_us"`
	SyncP999Us         float64 `json:"sync_p999_us"`
	SlowSyncs          int     `json:"slow_syncs"`
	SlowIntervalP50Ms  float64 `json:"slow_sync_interval_p50_ms"`
}

// MarshalLine returns r as one line of JSON, newline included.
func (r StallsResult) MarshalLine() ([]byte, error) { return marshalLine(r) }

// Stalls runs the three phases, each for cfg.Duration.
func Stalls(ctx context.Context, cfg StallsConfig) (StallsResult, error) {
	if err := cfg.Validate(); err != nil {
		return StallsResult{}, err
	}
	cfg = cfg.withDefaults()
	res := StallsResult{Dir: cfg.Dir, Spinners: cfg.Spinners, Writers: cfg.Writers, RatePerWriter: cfg.Rate,
		DurationSec: cfg.Duration.Seconds(), GapUs: micros(cfg.Gap)}
	// Every spinner and writer gets a P of its own, so that the kernel,
	// not Go's scheduler, shares the CPUs between them: a spinner
	// waiting for a P would look like a stall.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cfg.Spinners + cfg.Writers + 2))
	for _, p := range []struct {
		out           *StallsPhase
		spin, writers bool
	}{{&res.Spin, true, false}, {&res.Sync, false, true}, {&res.Both, true, true}} {
		var err error
		if *p.out, err = stallsPhase(ctx, cfg, p.spin, p.writers); err != nil {
			return StallsResult{}, err
		}
	}
	return res, nil
}

// pause is one stall or slow sync: when it began and how long it lasted.
type pause struct {
	at  time.Time
	len time.Duration
}

func stallsPhase(ctx context.Context, cfg StallsConfig, spin, write bool) (StallsPhase, error) {
	var (
		mu     sync.Mutex
		paused = make([][]pause, cfg.Spinners) // each spinner's own
		slow   []pause
		errs   []error
		wg     sync.WaitGroup
	)
	keep := func(to *[]pause, p pause) {
		mu.Lock()
		if len(*to) < stallsMaxEvents {
			*to = append(*to, p)
		}
		mu.Unlock()
	}
	// The writers' files are made before the phase's clock starts: on a
	// loaded machine preallocating them can take longer than a phase.
	var files []*os.File
	if write {
		for range cfg.Writers {
			f, err := os.CreateTemp(cfg.Dir, "keeper-stalls-*.tmp")
			if err != nil {
				return StallsPhase{}, fmt.Errorf("bench: stalls: %w", err)
			}
			defer os.Remove(f.Name())
			defer f.Close()
			if err := preallocate(f, stallsFileBytes); err != nil {
				return StallsPhase{}, fmt.Errorf("bench: stalls: preallocate %s: %w", f.Name(), err)
			}
			files = append(files, f)
		}
	}
	h := NewHistogram()
	start := time.Now()
	end := start.Add(cfg.Duration)
	if spin {
		for i := range cfg.Spinners {
			wg.Go(func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				last := time.Now()
				for n := 0; ; n++ {
					now := time.Now()
					if d := now.Sub(last); d >= cfg.Gap {
						keep(&paused[i], pause{last, d})
					}
					if now.After(end) || (n%4096 == 0 && ctx.Err() != nil) {
						return
					}
					last = now
				}
			})
		}
	}
	if write {
		for _, f := range files {
			wg.Go(func() {
				block := make([]byte, stallsWriteBytes)
				every := time.Second / time.Duration(cfg.Rate)
				next := time.Now()
				own := NewHistogram() // merged into h once the writer is done
				defer func() {
					mu.Lock()
					h.Merge(own)
					mu.Unlock()
				}()
				for off := int64(0); ctx.Err() == nil; off = (off + stallsWriteBytes) % stallsFileBytes {
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
					next = next.Add(every)
					t := time.Now()
					if own.Count() > 0 && t.After(end) { // every writer syncs once at least
						break
					}
					_, err := f.WriteAt(block, off)
					if err == nil {
						err = datasync(f)
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("bench: stalls: %s: %w", f.Name(), err))
						mu.Unlock()
						return
					}
					d := time.Since(t)
					if d >= cfg.Gap {
						keep(&slow, pause{t, d})
					}
					own.Record(d)
				}
			})
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return StallsPhase{}, err
	}
	if err := ctx.Err(); err != nil {
		return StallsPhase{}, context.Cause(ctx)
	}
	secs := cfg.Duration.Seconds()
	syncs := int64(h.Count())
	var stalls []pause
	if spin {
		stalls = mergePauses(paused[0])
		for _, ps := range paused[1:] {
			stalls = sharedPauses(stalls, mergePauses(ps))
		}
		stalls = slices.DeleteFunc(stalls, func(p pause) bool { return p.len < cfg.Gap })
	}
	var stalled time.Duration
	for _, p := range stalls {
		stalled += p.len
	}
	ph := StallsPhase{
		Stalls:             len(stalls),
		StallsPerSec:       round3(float64(len(stalls)) / secs),
		StalledMsPerSec:    round3(float64(stalled.Microseconds()) / 1000 / secs),
		StallIntervalP50Ms: medianIntervalMs(stalls),
		Syncs:              syncs,
		SyncsPerSec:        round3(float64(syncs) / secs),
	}
	if syncs > 0 {
		ph.SyncP50Us, ph.SyncP99Us, ph.SyncP999Us = micros(h.Quantile(0.5)), micros(h.Quantile(0.99)), micros(h.Quantile(0.999))
		slow = mergePauses(slow)
		ph.SlowSyncs, ph.SlowIntervalP50Ms = len(slow), medianIntervalMs(slow)
	}
	return ph, nil
}

// mergePauses sorts ps by start and folds pauses that overlap into one:
// the same stop seen by several spinners, or met by several writers.
func mergePauses(ps []pause) []pause {
	slices.SortFunc(ps, func(a, b pause) int { return a.at.Compare(b.at) })
	var out []pause
	for _, p := range ps {
		if n := len(out); n > 0 && !p.at.After(out[n-1].at.Add(out[n-1].len)) {
			if e := p.at.Add(p.len); e.After(out[n-1].at.Add(out[n-1].len)) {
				out[n-1].len = e.Sub(out[n-1].at)
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

// sharedPauses returns the parts of a's pauses that b's cover too; both
// are sorted and without overlaps, as mergePauses leaves them.
func sharedPauses(a, b []pause) []pause {
	var out []pause
	for i, j := 0, 0; i < len(a) && j < len(b); {
		aEnd, bEnd := a[i].at.Add(a[i].len), b[j].at.Add(b[j].len)
		from, to := a[i].at, aEnd
		if b[j].at.After(from) {
			from = b[j].at
		}
		if bEnd.Before(to) {
			to = bEnd
		}
		if to.After(from) {
			out = append(out, pause{from, to.Sub(from)})
		}
		if aEnd.Before(bEnd) {
			i++
		} else {
			j++
		}
	}
	return out
}

// medianIntervalMs is the median time between the starts of consecutive
// pauses, in milliseconds (0 with fewer than two).
func medianIntervalMs(ps []pause) float64 {
	if len(ps) < 2 {
		return 0
	}
	iv := make([]time.Duration, len(ps)-1)
	for i := range iv {
		iv[i] = ps[i+1].at.Sub(ps[i].at)
	}
	slices.Sort(iv)
	return round3(float64(iv[len(iv)/2].Microseconds()) / 1000)
}
