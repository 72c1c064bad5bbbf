package zkreal

import "syscall"

// sysProcAttr makes the JVM die with the test binary, even when the test
// binary is killed (a -timeout panic, a CI cancel) before Cleanup runs.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
