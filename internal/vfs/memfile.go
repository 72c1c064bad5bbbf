package vfs

import (
	"io"
	"io/fs"
	"os"
	"path"
	"time"
)

// memFile is an open MemFS file.
type memFile struct {
	fs       *MemFS
	n        *memNode
	name     string
	pos      int64
	writable bool
	closed   bool
}

// checkLocked returns the error for an operation on a closed file, or on a
// read-only one when write is set.
func (f *memFile) checkLocked(op string, write bool) error {
	if f.closed {
		return pathErr(op, f.name, fs.ErrClosed)
	}
	if write && !f.writable {
		return pathErr(op, f.name, fs.ErrPermission)
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if f.pos >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[f.pos:])
	f.pos += int64(n)
	return n, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, fs.ErrInvalid)
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	f.n.changeLocked(dataOp{off: f.pos, b: p})
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("write", f.name, fs.ErrInvalid)
	}
	f.n.changeLocked(dataOp{off: off, b: p})
	return len(p), nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}

// Sync implements File.
func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("sync", false); err != nil {
		return err
	}
	f.n.syncLocked()
	return nil
}

// SyncData implements File. Like fdatasync on Linux it persists a changed
// size too, so it is the same as Sync here.
func (f *memFile) SyncData() error { return f.Sync() }

// Truncate implements File.
func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, fs.ErrInvalid)
	}
	f.n.changeLocked(dataOp{truncate: true, off: size})
	return nil
}

// Stat implements File.
func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("stat", false); err != nil {
		return nil, err
	}
	return f.n.infoLocked(path.Base(clean(f.name))), nil
}

// memInfo describes a MemFS node. MemFS keeps no clock, so ModTime is zero.
type memInfo struct {
	name string
	size int64
	dir  bool
}

func (n *memNode) infoLocked(name string) memInfo {
	return memInfo{name: name, size: int64(len(n.data)), dir: n.dir}
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
