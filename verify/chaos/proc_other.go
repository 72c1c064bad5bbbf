//go:build !linux

package chaos

import (
	"errors"
	"net"
	"syscall"
)

// sysProcAttr has nothing to add outside Linux.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// setFileSizeLimit needs Linux's prlimit.
func setFileSizeLimit(int, int64) error { return errors.New("chaos: prlimit needs Linux") }

// socketOwner needs Linux's /proc: every connection is the harness's.
func socketOwner(net.Conn, map[int]string) (string, bool) { return "", false }
