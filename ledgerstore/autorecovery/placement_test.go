package autorecovery

import (
	"math/rand/v2"
	"testing"
	"time"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

func TestPlacementCheckCounts(t *testing.T) {
	c := ledger.Candidates{Available: []ledger.BookieID{"a1", "a2", "b1", "b2"},
		Racks: map[ledger.BookieID]string{"a1": "/a", "a2": "/a", "b1": "/b", "b2": "/b"}}
	md := func(state ledger.State, qw int, segs ...[]ledger.BookieID) ledger.Metadata {
		m := ledger.Metadata{EnsembleSize: len(segs[0]), WriteQuorum: qw, AckQuorum: 1, State: state}
		for i, s := range segs {
			m.Segments = append(m.Segments, ledger.Segment{FirstEntryID: int64(10 * i), Bookies: s})
		}
		return m
	}
	mds := map[int64]ledger.Metadata{
		1: md(ledger.StateClosed, 2, []ledger.BookieID{"a1", "b1", "a2", "b2"}),                      // adheres
		2: md(ledger.StateClosed, 2, []ledger.BookieID{"a1", "a2", "b1", "b2"}),                      // a1,a2 share a rack
		3: md(ledger.StateClosed, 2, []ledger.BookieID{"a1", "b1"}, []ledger.BookieID{"a1", "a2"}),   // second segment
		4: md(ledger.StateOpen, 2, []ledger.BookieID{"a1", "a2"}),                                    // open: not audited
		5: md(ledger.StateClosed, 1, []ledger.BookieID{"a1", "a2"}),                                  // Qw 1: one rack is enough
		6: md(ledger.StateClosed, 2, []ledger.BookieID{"a1", "gone"}, []ledger.BookieID{"a1", "b1"}), // gone has no rack
	}
	res, bad := placementCheck(mds, ledger.PlacementPolicy{}, c)
	if res.Audited != 5 || res.NotAdhering != 3 {
		t.Fatalf("placement check = %+v, want 5 audited, 3 not adhering", res)
	}
	want := map[int64][]int64{2: {0}, 3: {10}, 6: {0}}
	if len(bad) != len(want) {
		t.Fatalf("segments not adhering: %v, want %v", bad, want)
	}
	for id, firsts := range want {
		if len(bad[id]) != len(firsts) || bad[id][0] != firsts[0] {
			t.Fatalf("ledger %d: segments not adhering %v, want %v", id, bad[id], firsts)
		}
	}
	if res, _ := placementCheck(mds, ledger.PlacementPolicy{Kind: ledger.Random}, c); res.NotAdhering != 0 {
		t.Fatalf("the random policy found %d ledgers not adhering", res.NotAdhering)
	}
}

// TestAuditorPlacementCheck writes ledgers at random over two racks and
// checks that the elected auditor's periodic placement check counts the
// closed ones whose write quorums stay in one rack.
func TestAuditorPlacementCheck(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	ctx := testContext(t)
	racks := map[ledger.BookieID]string{}
	for i, id := range cl.IDs() {
		racks[ledger.BookieID(id)] = []string{"/r1", "/r2"}[i/2]
	}
	c := newLedgerClient(t, cl, 31)
	want := 0
	for range 6 {
		// E4/Qw2 over 2+2 bookies: a third of the random orders alternate
		// the racks.
		w, err := c.Create(ctx, ledgerclient.CreateOptions{Ensemble: 4, WriteQuorum: 2, AckQuorum: 2, Password: password})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		ens := w.Metadata().Segments[0].Bookies
		for i := range ens {
			if racks[ens[i]] == racks[ens[(i+1)%len(ens)]] {
				want++
				break
			}
		}
	}
	writeLedger(t, ctx, c, 1, false) // open: not audited
	d := startDaemon(t, cl, "auditor-1", Config{NoWorker: true, Racks: racks,
		AuditorPeriodicPlacementPolicyCheckInterval: 20 * time.Millisecond})
	deadline := time.Now().Add(waitTimeout)
	for d.PlacementCheck().Runs == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no placement check ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if want == 0 || want == 6 {
		t.Logf("seed gave %d of 6 ledgers not adhering: the check is not told apart from a constant", want)
	}
	if got := d.PlacementCheck(); got.Audited != 6 || got.NotAdhering != want {
		t.Fatalf("placement check = %+v, want 6 audited, %d not adhering", got, want)
	}
}

// TestWorkerTargetSameRack checks that the replication worker asks the
// placement policy: the lost bookie is replaced by the spare of its rack,
// whose rack it knows from the static racks though it is gone.
func TestWorkerTargetSameRack(t *testing.T) {
	cl := ledgertest.Start(t, 5)
	st, _ := openStore(t, cl.ZKAddr())
	ids := cl.IDs()
	racks := map[ledger.BookieID]string{"lost:3181": "/r1"}
	for i, id := range ids {
		racks[ledger.BookieID(id)] = []string{"/r1", "/r2", "/r2", "/r3", "/r3"}[i]
	}
	w := &worker{cfg: Config{Racks: racks}, store: st, log: testLogger(), rng: rand.New(rand.NewPCG(1, 2)),
		racks: &rackSource{static: racks}}
	seg := ledger.Segment{Bookies: []ledger.BookieID{"lost:3181", ledger.BookieID(ids[1]), ledger.BookieID(ids[3])}}
	for range 10 {
		got, err := w.chooseTarget(testContext(t), 2, seg, 0, nil)
		if err != nil || got != ledger.BookieID(ids[0]) {
			t.Fatalf("target %s, %v; want %s, the spare of the lost bookie's rack", got, err, ids[0])
		}
	}
	// Once it was tried, no bookie of that rack or of an unused rack is
	// left: the target is any bookie outside the segment.
	got, err := w.chooseTarget(testContext(t), 2, seg, 0, []ledger.BookieID{ledger.BookieID(ids[0])})
	if err != nil || (got != ledger.BookieID(ids[2]) && got != ledger.BookieID(ids[4])) {
		t.Fatalf("second target %s, %v; want %s or %s", got, err, ids[2], ids[4])
	}
}
