package testhost

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TimescaleEnv names the environment variable that sets Timescale: a
// number, at least 1, such as 3 or 2.5.
const TimescaleEnv = "KEEPER_TEST_TIMESCALE"

// maxMeasuredTimescale bounds the measured factor: past it a machine is
// too busy for any deadline to mean much, and a test that waits longer
// only hides a hang. KEEPER_TEST_TIMESCALE may go higher.
const maxMeasuredTimescale = 8

// spinWall is how long the calibration spins: long enough to span
// several scheduler slices (a few ms each), short enough to be free.
const spinWall = 30 * time.Millisecond

var timescale = sync.OnceValue(func() float64 {
	f, err := timescaleFrom(os.Getenv(TimescaleEnv), measure)
	if err != nil {
		panic(err) // a protective setting misread is refused, never ignored
	}
	return f
})

// Timescale returns how many times longer than on an idle machine a test
// should wait for what must happen: KEEPER_TEST_TIMESCALE if set, else the
// factor measured once in this process (at least 1, at most 8). It panics
// on a malformed KEEPER_TEST_TIMESCALE.
func Timescale() float64 { return timescale() }

// Scale returns d multiplied by Timescale.
func Scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Timescale())
}

// timescaleFrom returns the factor the environment's text sets, or the
// measured one when the text is empty.
func timescaleFrom(env string, measured func() float64) (float64, error) {
	env = strings.TrimSpace(env)
	if env == "" {
		return min(max(measured(), 1), maxMeasuredTimescale), nil
	}
	f, err := strconv.ParseFloat(env, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 1 {
		return 0, fmt.Errorf("testhost: %s=%q: want a number of at least 1", TimescaleEnv, env)
	}
	return f, nil
}

// measure estimates how much slower than idle this machine runs now: the
// larger of the load average per CPU (runnable and disk-waiting tasks;
// it lags by up to a minute) and the wall time a short spin took per CPU
// second it was given (what other runnable tasks take from this process
// now).
func measure() float64 {
	f := 1.0
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if load, ok := parseLoad(string(b)); ok {
			f = max(f, load/float64(runtime.NumCPU()))
		}
	}
	if share, ok := spinShare(); ok {
		f = max(f, share)
	}
	return math.Round(f*10) / 10
}

// parseLoad returns the one-minute load average of /proc/loadavg's text.
func parseLoad(text string) (float64, bool) {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return 0, false
	}
	load, err := strconv.ParseFloat(fields[0], 64)
	if err != nil || load < 0 || math.IsNaN(load) || math.IsInf(load, 0) {
		return 0, false
	}
	return load, true
}
