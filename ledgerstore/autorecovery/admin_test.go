package autorecovery

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
	"keeper/ledgerstore/metadata"
	"keeper/ledgerstore/metadata/metadatatest"
)

func TestReplicaFilter(t *testing.T) {
	tests := []struct {
		inc, exc string
		replicas []string
		want     bool
	}{
		{"", "", nil, true},
		{" ", "\t", []string{"a"}, true},
		{"a", "", []string{"a", "b"}, true},
		{"a", "", []string{"b"}, false},
		{"", "a", []string{"a", "b"}, false},
		{"", "a", []string{"b"}, true},
		{"a", "b", []string{"a"}, true},
		{"a", "b", []string{"a", "b"}, false},
		{"a", "b", []string{"c"}, false},
	}
	for _, tc := range tests {
		f := ReplicaFilter(tc.inc, tc.exc)
		got := f == nil || f(tc.replicas)
		if got != tc.want {
			t.Errorf("ReplicaFilter(%q, %q)(%q) = %v, want %v", tc.inc, tc.exc, tc.replicas, got, tc.want)
		}
	}
}

// TestCurrentAuditorAndDelay: the lowest vote names the auditor; the
// stored delay reads back; TriggerAudit refuses what BookKeeper refuses.
func TestCurrentAuditorAndDelay(t *testing.T) {
	st, _ := openStore(t, metadatatest.KeeperAddr(t))
	ctx := testContext(t)
	m, err := NewManager(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := m.CurrentAuditor(ctx); ok || err != nil {
		t.Fatalf("CurrentAuditor of an empty election: %v %v", ok, err)
	}
	if err := m.TriggerAudit(ctx); !errors.Is(err, ErrNoAuditor) {
		t.Fatalf("TriggerAudit without an auditor: %v", err)
	}
	dir := m.Paths().Election()
	if _, err := st.CreateNode(ctx, dir, []byte{}, metadata.NodePersistent); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"V_0000000012", "V_0000000003", "junk", "V_0000000007"} {
		if _, err := st.CreateNode(ctx, dir+"/"+name, EncodeVote("bk-"+name), metadata.NodePersistent); err != nil {
			t.Fatal(err)
		}
	}
	if id, ok, err := m.CurrentAuditor(ctx); id != "bk-V_0000000003" || !ok || err != nil {
		t.Fatalf("CurrentAuditor = %q %v %v", id, ok, err)
	}
	if _, err := m.StoredDelay(ctx); !errors.Is(err, ErrNoDelay) {
		t.Fatalf("StoredDelay with none stored: %v", err)
	}
	if err := m.TriggerAudit(ctx); !errors.Is(err, ErrNoDelay) {
		t.Fatalf("TriggerAudit without a delay: %v", err)
	}
	if err := m.SetDelay(ctx, 42); err != nil {
		t.Fatal(err)
	}
	if err := m.TriggerAudit(ctx); err != nil {
		t.Fatal(err)
	}
	if d, err := m.StoredDelay(ctx); d != 42 || err != nil {
		t.Fatalf("StoredDelay after the trigger = %d %v", d, err)
	}
	if err := m.Disable(ctx); err != nil {
		t.Fatal(err)
	}
	if on, err := m.ReplicationEnabled(ctx); on || err != nil {
		t.Fatalf("ReplicationEnabled after Disable = %v %v", on, err)
	}
	if err := m.TriggerAudit(ctx); !errors.Is(err, ErrReplicationDisabled) {
		t.Fatalf("TriggerAudit while disabled: %v", err)
	}
}

// TestTriggerAudit: with an hour's delay a lost bookie's ledgers stay
// unmarked, until TriggerAudit writes the delay back unchanged; then the
// auditor marks them at once, and the delay is still an hour.
func TestTriggerAudit(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	ctx, cancel := context.WithTimeout(t.Context(), testhost.Scale(60*time.Second))
	defer cancel()
	wc := newLedgerClient(t, cl, 11)
	for range 3 {
		writeLedger(t, ctx, wc, 5, true)
	}
	d := startDaemon(t, cl, "auditor", Config{LostBookieRecoveryDelay: time.Hour, NoWorker: true})
	waitFor(t, ctx, "the auditor", d.Auditing)
	victim := ledger.BookieID(cl.Bookies[1].ID())
	want, err := LedgersOn(ctx, d.Manager().store, victim)
	if err != nil || len(want) == 0 {
		t.Fatalf("ledgers on %s: %v, %v", victim, want, err)
	}
	mgr := d.Manager()
	if id, ok, err := mgr.CurrentAuditor(ctx); id != "auditor" || !ok || err != nil {
		t.Fatalf("CurrentAuditor = %q %v %v", id, ok, err)
	}
	// The auditor stores its delay when elected; wait for it, then lose
	// the bookie and see that nothing is marked before the trigger.
	waitFor(t, ctx, "the stored delay", func() bool { s, err := mgr.StoredDelay(ctx); return err == nil && s == 3600 })
	cl.Stop(1)
	waitFor(t, ctx, "the bookie unregistered", func() bool {
		reg, err := mgr.store.Bookies(ctx)
		return err == nil && !slices.Contains(reg.Writable, victim)
	})
	if list, err := mgr.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("marked before the trigger: %v %v", list, err)
	}
	if err := mgr.TriggerAudit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the lost bookie's ledgers marked", func() bool {
		list, err := mgr.List(ctx)
		return err == nil && len(list) == len(want)
	})
	if s, err := mgr.StoredDelay(ctx); s != 3600 || err != nil {
		t.Fatalf("delay after the trigger: %d %v", s, err)
	}
}
