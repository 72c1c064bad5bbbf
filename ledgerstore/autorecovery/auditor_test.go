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

// TestLiveBookieMissingEntries: a live bookie named in a segment that does
// not hold its share (here the metadata is edited to name a bookie that
// never got the entries) is found by the periodic ledger check, and the
// worker copies the share to another bookie and swaps it in.
func TestLiveBookieMissingEntries(t *testing.T) {
	cl := ledgertest.Start(t, 5)
	ctx, cancel := context.WithTimeout(t.Context(), testhost.Scale(60*time.Second))
	defer cancel()
	wc := newLedgerClient(t, cl, 9)
	w := writeLedger(t, ctx, wc, 40, true)
	st, _ := openStore(t, cl.ZKAddr())
	md, v, err := st.Read(ctx, w.ID())
	if err != nil {
		t.Fatal(err)
	}
	var empty ledger.BookieID
	for _, id := range cl.IDs() {
		if !slices.Contains(md.Segments[0].Bookies, ledger.BookieID(id)) {
			empty = ledger.BookieID(id)
			break
		}
	}
	edited := md.Clone()
	edited.Segments[0].Bookies[2] = empty
	if _, err := st.Write(ctx, w.ID(), edited, v); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, cl, "checker", Config{AuditorPeriodicCheckInterval: 200 * time.Millisecond,
		AuditorPeriodicBookieCheckInterval: -1, PollInterval: 50 * time.Millisecond})
	waitFor(t, ctx, "the empty bookie swapped out", func() bool {
		md, _, err := st.Read(ctx, w.ID())
		list, lerr := d.Manager().List(ctx)
		return err == nil && lerr == nil && !slices.Contains(md.Segments[0].Bookies, empty) && len(list) == 0
	})
	checkReplicas(t, ctx, cl, st, w.ID(), empty)
	if d.Marked() == 0 || d.Stats().FragmentsCopied == 0 {
		t.Fatalf("marked %d, stats %+v", d.Marked(), d.Stats())
	}
}
