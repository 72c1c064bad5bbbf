package ledgerclient

import (
	"testing"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestPlacementAndChannelMetrics drives the bookie watcher's, the
// placement policy's and the connections' figures with real bookies: the
// registry's bookies join, a new ledger's ensemble counts each of its
// bookies, every add is timed on its bookie's connection and none stays
// outstanding, a writer left open is recovered (one entry read forward and
// re-added), and a stopped bookie leaves.
func TestPlacementAndChannelMetrics(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx := testCtx(t)
	cfg := testConfig(cl, 7)
	cfg.Metrics = new(Metrics)
	m := cfg.Metrics
	c := newClient(t, cfg)
	waitFor(t, "the registry's bookies to join", func() bool { return m.BookiesJoined.Outcome(true).Count() == 3 })
	if got := m.WritableInDefaultRack.Load(); got != 3 {
		t.Errorf("writable bookies in the default rack: %d, want 3 (no rack information)", got)
	}
	if got := m.FailedToResolve.Load(); got != 0 {
		t.Errorf("failed to resolve %d bookies with no rack information configured, want 0", got)
	}

	w, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	const entries = 5
	for e := range int64(entries) {
		if _, err := w.Append(ctx, payload(w.ID(), e)); err != nil {
			t.Fatal(err)
		}
	}
	dist := m.EnsembleDistribution()
	for _, b := range cl.IDs() {
		if dist[b] != 1 {
			t.Errorf("ensemble distribution %v: bookie %s counted %d times, want 1", dist, b, dist[b])
		}
	}
	// The rack-aware policy with every bookie in one rack cannot span two
	// racks per write quorum, as BookKeeper's counts it.
	if got := m.NotAdhering.Load(); got != 1 {
		t.Errorf("ensembles not adhering: %d, want 1", got)
	}
	var adds int64
	chans := m.channels()
	for _, b := range cl.IDs() {
		cs := chans[b]
		if cs == nil {
			t.Fatalf("no connection figures for bookie %s", b)
		}
		waitFor(t, "adds answered on "+b, func() bool { return cs.AddsOutstanding.Load() == 0 })
		adds += cs.AddEntry.Outcome(true).Count()
		if cs.AddEntry.Outcome(false).Count() != 0 || cs.TimeoutAddEntry.Outcome(true).Count() != 0 {
			t.Errorf("bookie %s: failed or timed-out adds on a healthy connection", b)
		}
		if cs.Connect.Outcome(true).Count() != 1 || cs.ActivePlain.Load() != 1 || cs.ActiveTLS.Load() != 0 {
			t.Errorf("bookie %s: %d dials, %d plain and %d TLS connections; want 1, 1, 0", b,
				cs.Connect.Outcome(true).Count(), cs.ActivePlain.Load(), cs.ActiveTLS.Load())
		}
	}
	if adds != entries*2 {
		t.Errorf("adds timed on the connections: %d, want %d (Qw 2)", adds, entries*2)
	}

	// Another client recovers the ledger its writer left open.
	rcfg := testConfig(cl, 8)
	rcfg.Metrics = new(Metrics)
	r := newClient(t, rcfg)
	if _, err := r.Open(ctx, w.ID(), testPassword); err != nil {
		t.Fatal(err)
	}
	rm := rcfg.Metrics
	reads, readSum := rm.RecoverReadEntries.Outcome(true).Count(), rm.RecoverReadEntries.Outcome(true).Sum()
	added, addSum := rm.RecoverAddEntries.Outcome(true).Count(), rm.RecoverAddEntries.Outcome(true).Sum()
	// The last add carried LAC 3: recovery reads entry 4 forward and re-adds it.
	if reads != 1 || readSum != 1 || added != 1 || addSum != 1 {
		t.Errorf("recovery recorded %d reads summing %d and %d adds summing %d; want one of 1 each",
			reads, readSum, added, addSum)
	}
	var readOps int64
	for _, cs := range rm.channels() {
		readOps += cs.ReadEntry.Outcome(true).Count() + cs.ReadEntry.Outcome(false).Count()
	}
	if readOps == 0 {
		t.Error("recovery's reads were not timed on their connections")
	}

	cl.Stop(0)
	waitFor(t, "the stopped bookie to leave", func() bool { return m.BookiesLeft.Outcome(true).Count() == 1 })
}

// TestCountStats adds a state machine's counts to the client's counters.
func TestCountStats(t *testing.T) {
	m := new(Metrics)
	c := &Client{cfg: Config{Metrics: m}}
	c.countStats(ledger.Stats{DigestMismatches: 2, UnderReplicatedAdds: 3, NotAdhering: 1})
	c.countStats(ledger.Stats{DigestMismatches: 1})
	if m.ReadEntryDM.Load() != 3 || m.AddEntryUR.Load() != 3 || m.NotAdhering.Load() != 1 {
		t.Fatalf("READ_ENTRY_DM %d, ADD_ENTRY_UR %d, not adhering %d; want 3, 3, 1",
			m.ReadEntryDM.Load(), m.AddEntryUR.Load(), m.NotAdhering.Load())
	}
	(&Client{}).countStats(ledger.Stats{DigestMismatches: 1}) // no metrics: nothing to count, no panic
}
