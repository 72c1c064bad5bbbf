//go:build linux

package vfs

import (
	"errors"
	"io"
	"syscall"
)

// Linux's lseek whence values for the next data and the next hole.
const (
	seekData = 3
	seekHole = 4
)

// nextData returns the first data region of the file at or after off
// (lseek SEEK_DATA, then SEEK_HOLE), or io.EOF when only holes follow. The
// file's offset is left where it was.
func (f osFile) nextData(off int64) (start, end int64, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	cerr := rc.Control(func(fd uintptr) {
		cur, e := syscall.Seek(int(fd), 0, io.SeekCurrent)
		if e != nil {
			err = e
			return
		}
		defer func() {
			if _, e := syscall.Seek(int(fd), cur, io.SeekStart); e != nil && err == nil {
				err = e
			}
		}()
		if start, err = syscall.Seek(int(fd), off, seekData); errors.Is(err, syscall.ENXIO) {
			err = io.EOF
			return
		} else if err != nil {
			return
		}
		end, err = syscall.Seek(int(fd), start, seekHole)
	})
	if cerr != nil {
		return 0, 0, cerr
	}
	return start, end, err
}
