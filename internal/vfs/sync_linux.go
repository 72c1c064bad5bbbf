//go:build linux

package vfs

import (
	"errors"
	"os"
	"syscall"
)

// fdatasync flushes f's data, and the metadata needed to read it back (the
// size), but not timestamps.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var syncErr error
	if err := rc.Control(func(fd uintptr) {
		for {
			syncErr = syscall.Fdatasync(int(fd))
			if !errors.Is(syncErr, syscall.EINTR) { // interrupted before it started: not a failure
				return
			}
		}
	}); err != nil {
		return err
	}
	if syncErr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syncErr}
	}
	return nil
}
