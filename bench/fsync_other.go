//go:build !linux

package bench

import "os"

// datasync flushes f; without fdatasync, fsync it is.
func datasync(f *os.File) error { return f.Sync() }
