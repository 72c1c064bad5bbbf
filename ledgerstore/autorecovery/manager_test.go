package autorecovery

import (
	"errors"
	"path"
	"slices"
	"testing"

	"keeper/ledgerstore/metadata"
	"keeper/ledgerstore/metadata/metadatatest"
)

func TestManagerTree(t *testing.T) {
	st, _ := openStore(t, metadatatest.KeeperAddr(t))
	ctx := testContext(t)
	m, err := NewManager(ctx, st, "worker-1")
	if err != nil {
		t.Fatal(err)
	}
	p := m.Paths()
	for _, dir := range []string{p.Ledgers(), p.Locks()} {
		if _, _, err := st.GetNode(ctx, dir); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
	if data, _, err := st.GetNode(ctx, p.Layout()); err != nil || string(data) != "type: \"BASIC\"\nversion: 1\n" {
		t.Errorf("LAYOUT = %q, %v", data, err)
	}
	// A second manager accepts the tree; a foreign layout is refused.
	if _, err := NewManager(ctx, st, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetNode(ctx, p.Layout(), []byte("type: \"OTHER\" version: 1"), metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := NewManager(ctx, st, ""); err == nil {
		t.Fatal("NewManager accepted a foreign under-replication layout")
	}
}

func TestManagerMarkLockUnmark(t *testing.T) {
	st, _ := openStore(t, metadatatest.KeeperAddr(t))
	ctx := testContext(t)
	m, err := NewManager(ctx, st, "worker-1")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		id       int64
		replicas []string
		want     []string
	}{
		{7, []string{"b1:3181"}, []string{"b1:3181"}},
		{7, []string{"b1:3181"}, []string{"b1:3181"}},
		{7, []string{"b2:3181", "b1:3181"}, []string{"b1:3181", "b2:3181"}},
		{1 << 40, []string{"b3:3181"}, []string{"b3:3181"}},
	}
	for _, s := range steps {
		if err := m.Mark(ctx, s.id, s.replicas); err != nil {
			t.Fatal(err)
		}
		info, ok, err := m.Info(ctx, s.id)
		if err != nil || !ok || !slices.Equal(info.Replicas, s.want) || info.CTimeMillis <= 0 {
			t.Fatalf("after Mark(%d, %v): %+v, %v, %v; want replicas %v", s.id, s.replicas, info, ok, err, s.want)
		}
	}
	list, err := m.List(ctx)
	if err != nil || len(list) != 2 || list[0].LedgerID != 7 || list[1].LedgerID != 1<<40 {
		t.Fatalf("List = %+v, %v", list, err)
	}

	// Two workers never hold the same ledger.
	other, err := NewManager(ctx, st, "worker-2")
	if err != nil {
		t.Fatal(err)
	}
	l1, ok1, err1 := m.Acquire(ctx)
	l2, ok2, err2 := other.Acquire(ctx)
	_, ok3, err3 := other.Acquire(ctx)
	if !ok1 || !ok2 || ok3 || err1 != nil || err2 != nil || err3 != nil || l1.LedgerID == l2.LedgerID {
		t.Fatalf("Acquire: %+v %v %v, %+v %v %v, third %v %v", l1, ok1, err1, l2, ok2, err2, ok3, err3)
	}
	if who, locked, err := m.Locked(ctx, l1.LedgerID); !locked || who != "worker-1" || err != nil {
		t.Fatalf("Locked = %q, %v, %v", who, locked, err)
	}

	// Marked again while locked: the marker stays for the next round.
	if err := m.Mark(ctx, l1.LedgerID, []string{"b9:3181"}); err != nil {
		t.Fatal(err)
	}
	if err := m.MarkReplicated(ctx, l1); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := m.Info(ctx, l1.LedgerID); !ok {
		t.Fatal("MarkReplicated deleted a marker changed after the lock was taken")
	}
	if _, locked, _ := m.Locked(ctx, l1.LedgerID); locked {
		t.Fatal("MarkReplicated kept the lock")
	}
	// Unchanged: the marker and its empty directories go.
	if err := other.MarkReplicated(ctx, l2); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := m.Info(ctx, l2.LedgerID); ok {
		t.Fatal("marker still there after MarkReplicated")
	}
	if _, _, err := st.GetNode(ctx, path.Dir(m.Paths().Marker(l2.LedgerID))); !errors.Is(err, metadata.ErrNoNode) {
		t.Fatalf("empty marker directory left behind: %v", err)
	}
}

func TestManagerSwitchAndDelay(t *testing.T) {
	st, _ := openStore(t, metadatatest.KeeperAddr(t))
	ctx := testContext(t)
	m, err := NewManager(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	if on, _, err := m.Enabled(ctx); !on || err != nil {
		t.Fatalf("Enabled = %v, %v", on, err)
	}
	if err := m.Enable(ctx); !errors.Is(err, ErrAlreadySet) {
		t.Fatalf("Enable while enabled: %v", err)
	}
	if err := m.Disable(ctx); err != nil {
		t.Fatal(err)
	}
	on, changed, err := m.Enabled(ctx)
	if on || err != nil {
		t.Fatalf("Enabled after Disable = %v, %v", on, err)
	}
	if err := m.Enable(ctx); err != nil {
		t.Fatal(err)
	}
	<-changed

	if _, ok, _, err := m.Delay(ctx); ok || err != nil {
		t.Fatalf("Delay before init: %v, %v", ok, err)
	}
	if err := m.InitDelay(ctx, 30); err != nil {
		t.Fatal(err)
	}
	if err := m.InitDelay(ctx, 5); err != nil {
		t.Fatal(err)
	}
	d, ok, changed, err := m.Delay(ctx)
	if d != 30 || !ok || err != nil {
		t.Fatalf("Delay = %d, %v, %v; the first stored value wins", d, ok, err)
	}
	if err := m.SetDelay(ctx, 0); err != nil {
		t.Fatal(err)
	}
	<-changed
	if d, _, _, _ := m.Delay(ctx); d != 0 {
		t.Fatalf("Delay after SetDelay(0) = %d", d)
	}
	if err := m.SetDelay(ctx, -1); err == nil {
		t.Fatal("SetDelay accepted a negative delay")
	}
}
