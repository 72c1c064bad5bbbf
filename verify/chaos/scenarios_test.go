package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

var (
	binFlag  = flag.String("keeper-bin", "", "run this keeper binary instead of building ./cmd/keeper")
	seedFlag = flag.Uint64("seed", 0, "the harness's seed (default: CHAOS_SEED, else random)")
)

// The keeper binary is built once per test binary, on first use, so that
// listing or fuzzing this package's tests builds nothing.
var (
	buildOnce sync.Once
	binDir    string
	builtBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// keeperBin returns the keeper binary: -keeper-bin, or ./cmd/keeper built
// into a temporary directory.
func keeperBin(t *testing.T) string {
	t.Helper()
	if *binFlag != "" {
		return *binFlag
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "keeper-chaos-bin-"); buildErr == nil {
			builtBin, buildErr = BuildKeeper(binDir, "")
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// options reads CHAOS_DURATION (a Go duration: the fault phase of every
// scenario, for long runs) and CHAOS_SEED.
func options(t *testing.T) Options {
	o := Options{Bin: keeperBin(t), Logf: t.Logf}
	if d := os.Getenv("CHAOS_DURATION"); d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil {
			t.Fatalf("CHAOS_DURATION=%q: %v", d, err)
		}
		o.Duration = dur
	}
	o.Seed = *seedFlag
	if s := os.Getenv("CHAOS_SEED"); s != "" && o.Seed == 0 {
		seed, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
		o.Seed = seed
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	return o
}

// runScenario executes sc and fails the test on any violation, naming the
// kept directory with the history, the report and the servers' files.
func runScenario(t *testing.T, sc *Scenario) *Report {
	t.Helper()
	o := options(t)
	rep, dir, err := Execute(context.Background(), sc, o)
	judge(t, sc.ID, sc.Name, o, rep, dir, err)
	return rep
}

// judge prints a scenario's report line and fails the test on any
// violation, naming the kept directory and how to replay the run.
func judge(t *testing.T, id int, name string, o Options, rep *Report, dir string, err error) {
	t.Helper()
	if rep != nil {
		t.Log(rep.Line())
		fmt.Println(rep.Line())
	}
	if err != nil || rep.Violations() > 0 {
		t.Errorf("scenario %d (%s) failed with seed %d: %v\n%s\nkept: %s\nreplay: CHAOS_SEED=%d go test ./chaos -run %s",
			id, name, o.Seed, err, rep.Details(), dir, o.Seed, t.Name())
	}
}

func TestScenarioPartitions(t *testing.T) { runScenario(t, PartitionsScenario()) }

func TestScenarioKill(t *testing.T) { runScenario(t, KillScenario()) }

func TestScenarioKillDuringSync(t *testing.T) { runScenario(t, SyncFailpointsScenario()) }

func TestScenarioSnapCatchUp(t *testing.T) { runScenario(t, SnapCatchUpScenario()) }

func TestScenarioSessionHolders(t *testing.T) { runScenario(t, SessionHoldersScenario()) }

func TestScenarioReconnect(t *testing.T) { runScenario(t, ReconnectScenario()) }

func TestScenarioDiskFaults(t *testing.T) { runScenario(t, DiskFaultsScenario()) }

func TestScenarioAdversaries(t *testing.T) { runScenario(t, AdversariesScenario()) }

func TestScenarioSlowConsumers(t *testing.T) { runScenario(t, SlowConsumers()) }

func TestScenarioReconfig(t *testing.T) { runScenario(t, ReconfigScenario()) }

var recheckFlag = flag.String("recheck", "", "judge the kept run in this directory again, then stop")

// TestRecheck re-runs the offline checks on a kept run (-recheck DIR).
func TestRecheck(t *testing.T) {
	if *recheckFlag == "" {
		t.Skip("no -recheck directory")
	}
	rep, err := Recheck(*recheckFlag)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d violation(s)\n%s", rep.Violations(), rep.Details())
}
