// Package gctune gives a server's garbage collector a larger heap goal
// while its live heap is small.
//
// With Go's default GOGC of 100 the collector runs whenever the heap has
// doubled since the last collection. A keeper server's live heap is small
// next to the garbage its requests make (each write allocates its
// request, txn, change record and reply on every member), so at the
// default a busy member collects many times a second (BENCHMARKS.md).
// Raising GOGC while the live heap is small, up to MaxPercent, lets the
// heap grow towards MinHeapGoal instead: fewer cycles for the same
// garbage. Once the live heap reaches half of MinHeapGoal the collector
// runs at the base GOGC again, so the extra memory is bounded by
// MinHeapGoal whatever the data.
//
// An operator's own settings win: with GOGC in the environment Start does
// nothing, and GOMEMLIMIT still bounds the heap (the collector works
// harder near the limit, whatever GOGC says). Code that takes the
// collector over for a while (coordination/server's snapshot load turns it
// off) holds it with Pause.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// MinHeapGoal is the heap goal the tuner aims for while the live heap is
// small (within MaxPercent): 64 MiB, a sixteenth of the 1000 MB heap
// ZooKeeper's zkEnv.sh gives its JVM by default.
const MinHeapGoal = 64 << 20

// basePercent is GOGC once the live heap is large: Go's default.
const basePercent = 100

// MaxPercent bounds the GOGC the tuner sets: the heap grows to at most 5×
// the live heap a collection found. The goal follows the live heap of the
// last collection, so an unbounded GOGC set for a tiny live heap (6300%
// for 1 MiB) would let a heap whose live part grew meanwhile swell far
// past MinHeapGoal: measured, a member's RSS went from 37 to 125–397 MiB
// and its CPU per write up 10–30% in page faults.
const MaxPercent = 400

// Percent is the GOGC that makes the heap goal (live × (1 + GOGC/100))
// minGoal for a live heap of live bytes, within [base, max(base,
// MaxPercent)].
func Percent(live, minGoal uint64, base int) int {
	if live == 0 || live >= minGoal {
		return base
	}
	return max(base, min(MaxPercent, int((minGoal-live)*100/live)))
}

var tune struct {
	sync.Mutex
	on     bool // Start ran and stop has not
	paused int  // Pause holders
	reset  bool // stopped while paused: the last resume sets basePercent
	gen    int  // Start's generation: a stopped tuner's cleanup does nothing
}

// Start tunes the collector after every garbage collection until stop is
// called, which gives GOGC back its base value. It does nothing (and stop
// nothing) when GOGC is set in the environment or the tuner already runs.
func Start() (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	tune.Lock()
	defer tune.Unlock()
	if tune.on {
		return func() {}
	}
	tune.on, tune.reset = true, false
	tune.gen++
	gen := tune.gen
	retuneLocked()
	arm(gen)
	return func() {
		tune.Lock()
		defer tune.Unlock()
		if !tune.on || tune.gen != gen {
			return
		}
		tune.on = false
		if tune.paused == 0 {
			debug.SetGCPercent(basePercent)
		} else {
			tune.reset = true
		}
	}
}

// arm has the next garbage collection call cycle: a cleanup runs once the
// collector finds its object unreachable, which it is at once.
func arm(gen int) {
	// Not a tiny allocation (those share blocks, and their cleanups may
	// wait for the block's other objects).
	runtime.AddCleanup(new([4]uintptr), cycle, gen)
}

// cycle runs after a garbage collection (on the runtime's cleanup
// goroutine): it sets GOGC for the live heap that collection left and
// arms the next.
func cycle(gen int) {
	tune.Lock()
	defer tune.Unlock()
	if !tune.on || tune.gen != gen {
		return
	}
	retuneLocked()
	arm(gen)
}

// heapSamples are the live heap as the last collection marked it (0
// before the first), and the heap's objects now, live or not: an upper
// bound of the live heap until a collection has measured it.
var heapSamples = []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}

// retuneLocked sets GOGC for the current live heap, unless the collector
// is paused. tune's mutex is held.
func retuneLocked() {
	if tune.paused > 0 {
		return
	}
	metrics.Read(heapSamples)
	var live uint64
	for _, s := range heapSamples {
		if s.Value.Kind() == metrics.KindUint64 && s.Value.Uint64() > 0 {
			live = s.Value.Uint64()
			break
		}
	}
	// Set every time, not only when it changes: whoever sets GOGC behind
	// the tuner's back is overruled at the next collection.
	debug.SetGCPercent(Percent(live, MinHeapGoal, basePercent))
}

// Pause keeps the tuner's hands off GOGC until resume is called, for code
// that sets the collector itself for a while and then restores what it
// found; the tuner sets GOGC again when the last holder resumes.
func Pause() (resume func()) {
	tune.Lock()
	tune.paused++
	tune.Unlock()
	return func() {
		tune.Lock()
		defer tune.Unlock()
		tune.paused--
		switch {
		case tune.paused > 0:
		case tune.on:
			retuneLocked()
		case tune.reset:
			tune.reset = false
			debug.SetGCPercent(basePercent)
		}
	}
}
