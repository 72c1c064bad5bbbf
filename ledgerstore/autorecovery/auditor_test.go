package autorecovery

import (
	"context"
	"slices"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestAuditorFailoverAndDelay: when the auditor's process goes, the next
// vote in line audits; the stored lostBookieRecoveryDelay (changed at
// runtime) decides when a lost bookie's ledgers are marked, and the
// markers list the lost bookie.
func TestAuditorFailoverAndDelay(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	ctx, cancel := context.WithTimeout(t.Context(), testhost.Scale(60*time.Second))
	defer cancel()
	wc := newLedgerClient(t, cl, 5)
	for range 4 {
		writeLedger(t, ctx, wc, 10, true)
	}
	cfg := Config{LostBookieRecoveryDelay: time.Hour, NoWorker: true}
	d1 := startDaemon(t, cl, "auditor-1", cfg)
	waitFor(t, ctx, "the first auditor", d1.Auditing)
	d2 := startDaemon(t, cl, "auditor-2", cfg)
	if d2.Auditing() {
		t.Fatal("two auditors")
	}
	d1.Close()
	waitFor(t, ctx, "the second auditor", d2.Auditing)

	// With an hour's delay, nothing is marked yet; a runtime change to
	// zero marks at once.
	victim := ledger.BookieID(cl.Bookies[0].ID())
	cl.Stop(0)
	mgr := d2.Manager()
	if err := mgr.SetDelay(ctx, 0); err != nil {
		t.Fatal(err)
	}
	want, err := LedgersOn(ctx, mgr.store, victim)
	if err != nil || len(want) == 0 {
		t.Fatalf("ledgers on %s: %v, %v", victim, want, err)
	}
	waitFor(t, ctx, "the lost bookie's ledgers marked", func() bool {
		list, err := mgr.List(ctx)
		if err != nil || len(list) != len(want) {
			return false
		}
		for i, m := range list {
			if m.LedgerID != want[i] || !slices.Equal(m.Replicas, []string{string(victim)}) {
				return false
			}
		}
		return true
	})
	if d2.Marked() != int64(len(want)) {
		t.Fatalf("auditor counted %d markers, want %d", d2.Marked(), len(want))
	}
}
