package chaos

import (
	"syscall"
	"unsafe"
)

// sysProcAttr makes a child die with the harness, even when the harness
// dies (a panic, a -timeout, a CI cancel) before it can clean up.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// setFileSizeLimit sets a running process's RLIMIT_FSIZE (prlimit): a
// write that would grow a file past limit bytes fails with EFBIG (Go
// processes ignore SIGXFSZ), which is how a full disk looks to a process
// that preallocates its log. A negative limit removes it.
func setFileSizeLimit(pid int, limit int64) error {
	lim := syscall.Rlimit{Cur: ^uint64(0), Max: ^uint64(0)}
	if limit >= 0 {
		lim.Cur = uint64(limit)
	}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_FSIZE),
		uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
