package sim

import (
	"slices"
	"strings"
	"sync"
	"testing"
)

// standaloneRegressionSeeds once found bugs in standalone runs, and run on
// every go test.
var standaloneRegressionSeeds = []uint64{}

// standaloneSweep is how many seeds TestStandaloneSimulation sweeps when
// not -short: a standalone run costs about 0.4 of an ensemble's (5.2 s of
// CPU per 100 seeds against 12.7 s), so 200 add about 8% to the sweep of
// TestSimulation's 1,000.
const standaloneSweep = 200

// standaloneOptionsFor derives a standalone run's options from its seed.
func standaloneOptionsFor(seed uint64) (Options, int) {
	opts := Options{Seed: seed, Standalone: true, Clients: 3}
	opts.CheckEarlyExpiry = *expiryFlag
	return opts, 300
}

// TestStandaloneSimulation runs one standalone server (the production
// Member without Zab: the same loop work, persister batches, snapshots,
// log rolls and autopurge as an ensemble member) under crashes, storage
// failpoints and pauses, with every checker. Replay a failure with
// -seed=N.
func TestStandaloneSimulation(t *testing.T) {
	seeds := slices.Clone(standaloneRegressionSeeds)
	switch {
	case *seedFlag != 0:
		seeds = []uint64{*seedFlag}
	case !testing.Short():
		n := standaloneSweep
		switch {
		case *seedsFlag > 0:
			n = *seedsFlag
		case raceDetector:
			n = raceSweep
		}
		seeds = append(seeds, sweepSeeds(n, nil, seeds)...)
	}
	var mu sync.Mutex
	var total Stats
	runSeeds(t, "seeds", seeds, standaloneOptionsFor, "TestStandaloneSimulation", &mu, &total)
	if !t.Failed() {
		t.Logf("sim: standalone seeds=%d ops=%d violations=0 (%+v)", len(seeds), total.Ops, total)
	}
}

// TestStandaloneReplayIsExact runs standalone seeds twice and compares
// their full traces: a standalone run, its persister batches included, is
// a pure function of its seed too.
func TestStandaloneReplayIsExact(t *testing.T) {
	for _, seed := range []uint64{2, 5} {
		var traces [2]strings.Builder
		for i := range traces {
			opts, steps := standaloneOptionsFor(seed)
			opts.Trace = &traces[i]
			c := NewCluster(opts)
			c.Run(steps)
			if err := c.Check(); err != nil {
				t.Fatal(err)
			}
		}
		if a, b := traces[0].String(), traces[1].String(); a != b {
			la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
			for i := range min(len(la), len(lb)) {
				if la[i] != lb[i] {
					t.Fatalf("seed %d: the two runs part at trace line %d:\n%s\n%s", seed, i+1, la[i], lb[i])
				}
			}
			t.Fatalf("seed %d: traces of %d and %d lines", seed, len(la), len(lb))
		}
	}
}
