package bubble

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"testing/synctest"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "run only this seed (replay)")
	seedsFlag = flag.Int("bubble.seeds", 0, "how many seeds to run (0: the test's default)")
	logFlag   = flag.Bool("bubble.log", false, "print the servers' and clients' logs (with -seed)")
)

// defaultSeeds is how many seeds a plain run sweeps: full, or short with
// -short or under the race detector, which runs a seed five times
// slower; -bubble.seeds=N sweeps more.
func defaultSeeds(full, short int) int {
	if testing.Short() || raceDetector {
		return short
	}
	return full
}

// TestStandaloneBubble runs the standalone server whole in a synctest
// bubble, one seed per subtest (see the package doc): 60 seeds, about
// 10 s on a quiet machine. Replay a seed with -seed=N; -bubble.log adds the server's logs.
func TestStandaloneBubble(t *testing.T) { sweep(t, "TestStandaloneBubble", 1, defaultSeeds(60, 8)) }

// TestEnsembleBubble runs a three-member ensemble whole in a synctest
// bubble, its leader (mostly) crashed and restarted: 30 seeds, about
// 12 s on a quiet machine.
func TestEnsembleBubble(t *testing.T) { sweep(t, "TestEnsembleBubble", 3, defaultSeeds(30, 3)) }

func sweep(t *testing.T, name string, members, seeds int) {
	var list []uint64
	switch {
	case *seedFlag != 0:
		list = append(list, *seedFlag)
	default:
		if *seedsFlag != 0 {
			seeds = *seedsFlag
		}
		for i := range seeds {
			list = append(list, uint64(i)+1)
		}
	}
	for _, seed := range list {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			set := Draw(seed, members)
			var logger *slog.Logger
			if *logFlag {
				logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			var res Result
			synctest.Test(t, func(t *testing.T) {
				res = Run(set, logger, func(v string) { t.Errorf("%s", v) })
			})
			if t.Failed() {
				t.Logf("%v\nreplay: go test -run '%s$' ./verify/bubble -seed=%d", set, name, seed)
				return
			}
			// Each member starts, then one starts again after each crash and
			// after the last one.
			if want := members + len(set.Crashes) + 1; res.Ops == 0 || res.Lives != want {
				t.Fatalf("%d operations over %d server lives, want some over %d: %v", res.Ops, res.Lives, want, set)
			}
			t.Logf("%d operations, %d watch notifications checked, %d server lives", res.Ops, res.Watches, res.Lives)
		})
	}
}
