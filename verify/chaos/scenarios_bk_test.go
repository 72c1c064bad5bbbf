package chaos

import (
	"context"
	"testing"
)

// runLedgerScenario executes a ledger scenario and fails the test on any
// violation, naming the kept directory with the report and every server's
// and bookie's data and logs.
func runLedgerScenario(t *testing.T, sc *LedgerScenario) *Report {
	t.Helper()
	o := options(t)
	rep, dir, err := ExecuteLedger(context.Background(), sc, o)
	judge(t, sc.ID, sc.Name, o, rep, dir, err)
	return rep
}

func TestScenario9FencingRace(t *testing.T) { runLedgerScenario(t, Scenario9()) }

func TestScenario10BookieCrashWipe(t *testing.T) { runLedgerScenario(t, Scenario10()) }

// The same scenarios with every ledger client on BookKeeper's v2 protocol
// (Pulsar's default): the writer processes and the harness's readers.
func TestScenario9FencingRaceV2(t *testing.T) { runLedgerScenario(t, V2(Scenario9())) }

func TestScenario10BookieCrashWipeV2(t *testing.T) { runLedgerScenario(t, V2(Scenario10())) }

func TestScenarioSlowBookieConsumers(t *testing.T) { runLedgerScenario(t, SlowBookieConsumers()) }
