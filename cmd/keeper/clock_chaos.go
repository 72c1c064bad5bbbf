//go:build chaos

package main

import (
	"os"
	"sync"
	"time"

	"keeper/coordination/server"
	"keeper/internal/skewclock"
)

// skew is the process's skewable clock: the real clock as the fault
// file's "clock …" lines bend it (internal/skewclock documents the
// grammar and the model: rate and offset move the monotonic reading that
// times session expiry and ticks, step moves the time of day).
var skew = struct {
	sync.Mutex
	epoch time.Time // origin of the real monotonic readings
	clock skewclock.Clock
}{epoch: time.Now()}

// loadClock applies the fault file's "clock …" lines; no line is the true
// clock. A rate change takes effect from now on, without a jump. On an
// error the clock stays as it was.
func loadClock(lines []string) error {
	spec, err := skewclock.Parse(lines)
	if err != nil {
		return err
	}
	skew.Lock()
	defer skew.Unlock()
	skew.clock.Set(spec, time.Since(skew.epoch))
	return nil
}

// serverClock is the server's clock: the skewable one when
// KEEPER_FAULTS_FILE names a fault file, else nil (the system clock).
func serverClock() server.Clock {
	if os.Getenv(faultsEnv) == "" {
		return nil
	}
	return func() (time.Time, time.Duration) {
		skew.Lock()
		defer skew.Unlock()
		now := time.Now()
		return skew.clock.Read(now, now.Sub(skew.epoch))
	}
}
