package lazyfs

import (
	"io"
	"io/fs"
)

// Lock implements vfs.FS: the wrapped FS takes the lock (a lock is no
// file data, so nothing of it is pending), and Crash releases it.
func (f *FS) Lock(name string) (io.Closer, error) {
	f.mu.Lock() // Crash, under mu too, then either sees this lock or refuses it
	defer f.mu.Unlock()
	if err := f.usable(); err != nil {
		return nil, err
	}
	inner, err := f.inner.Lock(name)
	if err != nil {
		return nil, err
	}
	l := &lock{fs: f, inner: inner, name: name}
	f.locks[l] = struct{}{}
	return l, nil
}

// lock is a lock taken through an FS.
type lock struct {
	fs    *FS
	inner io.Closer
	name  string
}

// Close releases the lock; after a Crash it is already released, and
// Close fails with ErrCrashed.
func (l *lock) Close() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if _, held := l.fs.locks[l]; !held {
		if l.fs.crashed.Load() {
			return ErrCrashed
		}
		return &fs.PathError{Op: "close", Path: l.name, Err: fs.ErrClosed}
	}
	delete(l.fs.locks, l)
	return l.inner.Close()
}
