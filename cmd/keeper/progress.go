package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"keeper/internal/vfs"
)

// toolProgressInterval is how often a tool reading large files says how
// far it is; a tool done sooner prints nothing.
const toolProgressInterval = 2 * time.Second

// progressFS reports, on w, how much of the files opened through it has
// been read, at most once per interval, from within the reads themselves
// (no goroutine to stop: a tool that fails mid-way leaves nothing behind).
type progressFS struct {
	vfs.FS
	p *readProgress
}

// readProgress is the shared count behind a progressFS.
type readProgress struct {
	mu       sync.Mutex // guards below
	w        io.Writer
	interval time.Duration
	began    time.Time
	last     time.Time // of the last report, or began
	total    int64     // sizes of the files opened
	read     int64
	current  string // the file read last
}

func newProgressFS(fs vfs.FS, w io.Writer, interval time.Duration) progressFS {
	now := time.Now()
	return progressFS{FS: fs, p: &readProgress{w: w, interval: interval, began: now, last: now}}
}

func (f progressFS) Open(name string) (vfs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := file.Stat(); err == nil {
		f.p.mu.Lock()
		f.p.total += st.Size()
		f.p.mu.Unlock()
	}
	return progressFile{File: file, p: f.p, name: name}, nil
}

type progressFile struct {
	vfs.File
	p    *readProgress
	name string
}

func (f progressFile) Read(b []byte) (int, error) {
	n, err := f.File.Read(b)
	f.p.add(f.name, n)
	return n, err
}

func (f progressFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(b, off)
	f.p.add(f.name, n)
	return n, err
}

// add counts n bytes read from name and reports if an interval has passed.
func (p *readProgress) add(name string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.read += int64(n)
	p.current = name
	now := time.Now()
	if now.Sub(p.last) < p.interval {
		return
	}
	p.last = now
	pct := 0.0
	if p.total > 0 {
		pct = 100 * float64(p.read) / float64(p.total)
	}
	fmt.Fprintf(p.w, "keeper tool: read %s of %s (%.0f%%) in %v, now %s\n", byteSize(p.read), byteSize(p.total), pct,
		now.Sub(p.began).Round(time.Second), p.current)
}

// byteSize prints n bytes in the largest binary unit below it.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
