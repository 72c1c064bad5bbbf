package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, goal uint64
		base, want int
	}{
		{0, 64 * mib, 100, 100},           // nothing measured yet
		{1 * mib, 64 * mib, 100, 400},     // 1 + 63 MiB of garbage, but at most MaxPercent
		{14 * mib, 64 * mib, 100, 357},    // 14 + 50 MiB
		{16 * mib, 64 * mib, 100, 300},    // 16 × 4 = 64
		{32 * mib, 64 * mib, 100, 100},    // the base already reaches the goal
		{48 * mib, 64 * mib, 100, 100},    // never below the base
		{64 * mib, 64 * mib, 100, 100},    // at the goal
		{1024 * mib, 64 * mib, 100, 100},  // a large heap: the base
		{16 * mib, 64 * mib, 400, 400},    // a base above what the goal needs
		{3, 10, 100, 233},                 // rounds down
		{1, 10, 100, 400},                 // bounded
		{1 * mib, 64 * mib, 10000, 10000}, // the base wins again
	} {
		if got := Percent(c.live, c.goal, c.base); got != c.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", c.live, c.goal, c.base, got, c.want)
		}
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestStartPauseStop: a small heap gets a GOGC above the base from Start
// and after each collection; Pause leaves GOGC to its holder until the
// last resume; stop gives the base back.
func TestStartPauseStop(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set in the environment: the tuner stays off")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(basePercent))
	stop := Start()
	if p := gogc(); p <= basePercent {
		t.Fatalf("GOGC %d after Start with a small heap, want above %d", p, basePercent)
	}
	if again := Start(); gogc() <= basePercent {
		t.Fatal("a second Start changed the tuning")
	} else {
		again() // stops nothing
	}
	// A collection re-arms the tuner: after a cycle, GOGC is set again.
	debug.SetGCPercent(basePercent)
	for deadline := time.Now().Add(10 * time.Second); gogc() <= basePercent; {
		if time.Now().After(deadline) {
			t.Fatal("no collection retuned GOGC")
		}
		runtime.GC()
		runtime.Gosched()
	}

	resume1, resume2 := Pause(), Pause()
	debug.SetGCPercent(77)
	runtime.GC()
	resume1()
	if p := gogc(); p != 77 {
		t.Fatalf("GOGC %d while a holder still pauses the tuner, want its 77", p)
	}
	resume2()
	if p := gogc(); p <= basePercent {
		t.Fatalf("GOGC %d after the last resume, want retuned above %d", p, basePercent)
	}

	stop()
	if p := gogc(); p != basePercent {
		t.Fatalf("GOGC %d after stop, want %d", p, basePercent)
	}
	runtime.GC()
	runtime.GC()
	if p := gogc(); p != basePercent {
		t.Fatalf("GOGC %d after collections of a stopped tuner, want %d", p, basePercent)
	}

	// Stopped while paused: the holder restores what it found, then the
	// last resume gives the base back.
	stop = Start()
	resume := Pause()
	saved := debug.SetGCPercent(-1)
	stop()
	debug.SetGCPercent(saved)
	resume()
	if p := gogc(); p != basePercent {
		t.Fatalf("GOGC %d after a stop during a pause, want %d", p, basePercent)
	}
}
