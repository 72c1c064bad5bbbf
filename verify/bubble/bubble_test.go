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
	seedsFlag = flag.Int("bubble.seeds", 0, "how many seeds to run (0: defaultSeeds)")
	logFlag   = flag.Bool("bubble.log", false, "print the server's and clients' logs (with -seed)")
)

// defaultSeeds is how many seeds a plain run sweeps: 60 (about 10 s), or
// 12 with -short or under the race detector, which runs a seed five
// times slower; -bubble.seeds=N sweeps more.
func defaultSeeds() int {
	if testing.Short() || raceDetector {
		return 12
	}
	return 60
}

// TestStandaloneBubble runs the standalone server whole in a synctest
// bubble, one seed per subtest (see the package doc). Replay a seed with
// -seed=N; -bubble.log adds the server's logs.
func TestStandaloneBubble(t *testing.T) {
	seeds := []uint64{}
	switch {
	case *seedFlag != 0:
		seeds = append(seeds, *seedFlag)
	default:
		n := *seedsFlag
		if n == 0 {
			n = defaultSeeds()
		}
		for i := range n {
			seeds = append(seeds, uint64(i)+1)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			set := Draw(seed)
			var logger *slog.Logger
			if *logFlag {
				logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			var res Result
			synctest.Test(t, func(t *testing.T) {
				res = Run(set, logger, func(v string) { t.Errorf("%s", v) })
			})
			if t.Failed() {
				t.Logf("%v\nreplay: go test -run 'TestStandaloneBubble' ./verify/bubble -seed=%d", set, seed)
				return
			}
			if res.Ops == 0 || res.Lives != len(set.Crashes)+2 {
				t.Fatalf("%d operations over %d lives, want some over %d: %v", res.Ops, res.Lives, len(set.Crashes)+2, set)
			}
			t.Logf("%d operations, %d watch notifications checked, %d server lives", res.Ops, res.Watches, res.Lives)
		})
	}
}
