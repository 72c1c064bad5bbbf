package server

import (
	"log/slog"
	"sync/atomic"
	"time"

	"keeper/internal/vfs"
)

// Start-up on a large data directory takes a while (a multi-GB snapshot
// loads in tens of seconds): these report how far it is, so that an
// operator can tell a slow start from a stuck one.

// DefaultProgressInterval is how often a long load step logs how far it
// is when StorageConfig.ProgressInterval is zero.
const DefaultProgressInterval = 5 * time.Second

// countingFS counts the bytes read through the files it opens.
type countingFS struct {
	vfs.FS
	read *atomic.Int64
}

func (f countingFS) Open(name string) (vfs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return countingFile{File: file, read: f.read}, nil
}

type countingFile struct {
	vfs.File
	read *atomic.Int64
}

func (f countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.read.Add(int64(n))
	return n, err
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.read.Add(int64(n))
	return n, err
}

// every logs msg with the attributes attrs returns every interval until
// the returned function is called. The goroutine only reads what attrs
// reads, which must be safe to read concurrently.
func every(logger *slog.Logger, interval time.Duration, msg string, attrs func(elapsed time.Duration) []any) (stop func()) {
	began := time.Now()
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				logger.Info(msg, attrs(now.Sub(began))...)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// percent is part of total in percent, to one decimal; 0 for no total.
func percent(part, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return float64(part*1000/total) / 10
}
