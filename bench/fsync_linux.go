package bench

import (
	"os"
	"syscall"
)

// datasync flushes f's data, and its size if that changed, but not its
// other metadata (times): what a log's sync needs.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
