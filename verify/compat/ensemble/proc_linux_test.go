package ensemble

import "syscall"

// sysProcAttr makes a server die with the test binary, even when the test
// binary dies (a panic, a -timeout, a CI cancel) before Cleanup runs.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
