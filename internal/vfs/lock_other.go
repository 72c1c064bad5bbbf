//go:build !unix

package vfs

import (
	"errors"
	"io"
	"io/fs"
)

// Lock implements FS where flock(2) does not exist: it fails, so that no
// directory is used without its lock.
func (osFS) Lock(name string) (io.Closer, error) {
	return nil, &fs.PathError{Op: "lock", Path: name, Err: errors.ErrUnsupported}
}
