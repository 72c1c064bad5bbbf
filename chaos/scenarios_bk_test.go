package chaos

import (
	"context"
	"fmt"
	"testing"
)

// runLedgerScenario executes a ledger scenario and fails the test on any
// violation, naming the kept directory with the report and every server's
// and bookie's data and logs.
func runLedgerScenario(t *testing.T, sc *LedgerScenario) *Report {
	t.Helper()
	o := options(t)
	rep, dir, err := ExecuteLedger(context.Background(), sc, o)
	if rep != nil {
		t.Log(rep.Line())
		fmt.Println(rep.Line())
	}
	if err != nil || rep.Violations() > 0 {
		t.Errorf("scenario %d (%s) failed with seed %d: %v\n%s\nkept: %s\nreplay: CHAOS_SEED=%d go test ./chaos -run %s",
			sc.ID, sc.Name, o.Seed, err, rep.Details(), dir, o.Seed, t.Name())
	}
	return rep
}

func TestScenario9FencingRace(t *testing.T) { runLedgerScenario(t, Scenario9()) }

func TestScenario10BookieCrashWipe(t *testing.T) { runLedgerScenario(t, Scenario10()) }
