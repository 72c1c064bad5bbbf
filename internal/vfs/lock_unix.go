//go:build unix

package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Lock implements FS with flock(2) (LOCK_EX|LOCK_NB) on the file, as etcd
// and pebble lock their directories. The lock belongs to the open file:
// the kernel releases it when the returned Closer closes the file or the
// process dies, so a lock file left by a killed process blocks nobody. The
// file is opened close-on-exec, so child processes do not inherit it.
func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644) // no O_TRUNC: the holder's record stays
	if err != nil {
		return nil, err
	}
	if err := flock(f); err != nil {
		_ = f.Close() // the lock error is the one that matters
		return nil, err
	}
	return f, nil
}

// flock takes an exclusive lock on f without waiting.
func flock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lockErr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lockErr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(lockErr, syscall.EINTR) { // interrupted before it started: try again
				return
			}
		}
	}); err != nil {
		return err
	}
	switch {
	case errors.Is(lockErr, syscall.EWOULDBLOCK):
		return &fs.PathError{Op: "lock", Path: f.Name(), Err: ErrLocked}
	case lockErr != nil:
		return &fs.PathError{Op: "lock", Path: f.Name(), Err: lockErr}
	}
	return nil
}
