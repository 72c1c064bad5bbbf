//go:build !linux

package chaos

import (
	"errors"
	"syscall"
)

// sysProcAttr has nothing to add outside Linux.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// setFileSizeLimit needs Linux's prlimit.
func setFileSizeLimit(int, int64) error { return errors.New("chaos: prlimit needs Linux") }
