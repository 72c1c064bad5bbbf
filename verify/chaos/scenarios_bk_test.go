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

func TestScenarioFencingRace(t *testing.T) { runLedgerScenario(t, FencingRaceScenario()) }

func TestScenarioBookieCrashWipe(t *testing.T) { runLedgerScenario(t, BookieWipeScenario()) }

// The same scenarios with every ledger client on BookKeeper's v2 protocol
// (Pulsar's default): the writer processes and the harness's readers.
func TestScenarioFencingRaceV2(t *testing.T) { runLedgerScenario(t, V2(FencingRaceScenario())) }

func TestScenarioBookieCrashWipeV2(t *testing.T) { runLedgerScenario(t, V2(BookieWipeScenario())) }

func TestScenarioSlowBookieConsumers(t *testing.T) { runLedgerScenario(t, SlowBookieConsumers()) }

func TestScenarioBookieLostAutorecovery(t *testing.T) { runLedgerScenario(t, AutorecoveryScenario()) }
