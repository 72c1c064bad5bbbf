package testhost

import (
	"runtime"
	"syscall"
	"time"
)

// rusageThread is getrusage(2)'s RUSAGE_THREAD: the calling thread's use.
const rusageThread = 1

// spinShare spins on one locked OS thread for spinWall and returns the
// wall time it took divided by the CPU time the thread got: 1 on an idle
// machine, 2 when another runnable task shares the CPU with it.
func spinShare() (float64, bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, ok := threadCPU()
	if !ok {
		return 0, false
	}
	start := time.Now()
	for time.Since(start) < spinWall {
	}
	wall := time.Since(start)
	after, ok := threadCPU()
	if !ok || after <= before {
		return 0, false
	}
	return float64(wall) / float64(after-before), true
}

// threadCPU returns the calling thread's user and system CPU time.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
