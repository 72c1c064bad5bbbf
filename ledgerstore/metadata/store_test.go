package metadata

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"testing"

	"keeper/coordination/zkclient"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata/metadatatest"
)

func TestInit(t *testing.T) {
	conn := dial(t, metadatatest.KeeperAddr(t))
	s := newTestStore(t, conn, Config{Root: "/bk/ledgers"})
	ctx := testContext(t)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/bk", "/bk/ledgers", "/bk/ledgers/available", "/bk/ledgers/available/readonly"} {
		if _, ok, err := conn.Exists(t.Context(), p); !ok || err != nil {
			t.Errorf("after Init, %s exists = %v, %v", p, ok, err)
		}
	}
	if _, ok, _ := conn.Exists(t.Context(), "/bk/ledgers/cookies"); ok {
		t.Errorf("Init created cookies; metaformat does not")
	}
	layout, _, err := conn.Get(t.Context(), "/bk/ledgers/LAYOUT")
	if err != nil || string(layout) != "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1" {
		t.Errorf("LAYOUT = %q, %v", layout, err)
	}
	id, err := s.InstanceID(ctx)
	if err != nil || !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("InstanceID = %q, %v; want a random UUID", id, err)
	}

	// Init is idempotent and keeps the instance id; it restores a missing
	// readonly directory.
	if err := conn.Delete(t.Context(), "/bk/ledgers/available/readonly", -1); err != nil {
		t.Fatal(err)
	}
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.InstanceID(ctx); again != id {
		t.Errorf("second Init changed INSTANCEID from %s to %s", id, again)
	}
	if _, ok, _ := conn.Exists(t.Context(), "/bk/ledgers/available/readonly"); !ok {
		t.Errorf("second Init did not restore available/readonly")
	}

	// Another layout's store refuses the tree.
	long := newTestStore(t, conn, Config{Root: "/bk/ledgers", Layout: LayoutLongHierarchical})
	if err := long.Init(ctx); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("long hierarchical Init on a hierarchical tree = %v, want ErrLayoutMismatch", err)
	}
}

// TestInitExistingRoot covers a root made by someone else, without
// INSTANCEID or LAYOUT.
func TestInitExistingRoot(t *testing.T) {
	conn := dial(t, metadatatest.KeeperAddr(t))
	mkdirs(t, conn, "/ledgers")
	s := newTestStore(t, conn, Config{})
	ctx := testContext(t)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if id, err := s.InstanceID(ctx); id != "" || err != nil {
		t.Errorf("InstanceID = %q, %v; Init must not invent one for an existing tree", id, err)
	}
	if _, ok, _ := conn.Exists(t.Context(), "/ledgers/LAYOUT"); !ok {
		t.Errorf("Init did not add LAYOUT")
	}
}

func TestCreateReadWriteDelete(t *testing.T) {
	s, conn := keeperStore(t, Config{})
	ctx := testContext(t)
	const id = 12345
	md := sampleMetadata()
	stored, v, err := s.Create(ctx, id, md)
	if err != nil || v != 0 {
		t.Fatalf("Create = %v, %v", v, err)
	}
	if stored.CToken == 0 || stored.FormatVersion != FormatVersion3 {
		t.Fatalf("Create stored %+v: want a cToken and format 3", stored)
	}
	// The znode is where BookKeeper looks, holding what Encode writes.
	raw, stat, err := conn.Get(t.Context(), "/ledgers/00/0001/L2345")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := Encode(stored); !bytes.Equal(raw, want) {
		t.Fatalf("znode data %x, want %x", raw, want)
	}
	got, v, err := s.Read(ctx, id)
	if err != nil || v != 0 {
		t.Fatalf("Read = %v, %v", v, err)
	}
	want := stored.Clone()
	want.CTimeMillis = stat.Ctime // not stored: the znode's ctime stands in
	if !got.Equal(want) {
		t.Fatalf("Read = %+v\nwant %+v", got, want)
	}

	closed := got.Clone()
	closed.State, closed.LastEntryID, closed.Length = ledger.StateClosed, 9, 100
	v1, err := s.Write(ctx, id, closed, v)
	if err != nil || v1 != 1 {
		t.Fatalf("Write = %v, %v", v1, err)
	}
	if _, err := s.Write(ctx, id, closed, AnyVersion); err == nil {
		t.Fatalf("Write with AnyVersion succeeded; every write must be a compare-and-set")
	}
	bad := closed.Clone()
	bad.AckQuorum = 9
	if _, err := s.Write(ctx, id, bad, v1); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Write of invalid metadata = %v, want ErrMalformed", err)
	}
	if err := s.Delete(ctx, id, 0); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("Delete at a stale version = %v, want ErrBadVersion", err)
	}
	if err := s.Delete(ctx, id, v1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Read(ctx, id); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("Read after Delete = %v, want ErrNoLedger", err)
	}
	if _, err := s.Write(ctx, id, closed, v1); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("Write after Delete = %v, want ErrNoLedger", err)
	}
	if err := s.Delete(ctx, id, AnyVersion); err != nil {
		t.Fatalf("second Delete = %v; deleting a deleted ledger succeeds", err)
	}
	// The emptied directories are pruned; the root stays.
	for p, want := range map[string]bool{"/ledgers/00/0001": false, "/ledgers/00": false, "/ledgers": true} {
		if _, ok, _ := conn.Exists(t.Context(), p); ok != want {
			t.Errorf("after Delete, %s exists = %v, want %v", p, ok, want)
		}
	}
}

func TestPruneKeepsNonEmpty(t *testing.T) {
	s, conn := keeperStore(t, Config{})
	ctx := testContext(t)
	for _, id := range []int64{1, 2} {
		if _, _, err := s.Create(ctx, id, sampleMetadata()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, 1, AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Read(ctx, 2); err != nil {
		t.Fatalf("ledger 2 after deleting its neighbour: %v", err)
	}
	if _, ok, _ := conn.Exists(t.Context(), "/ledgers/00/0000"); !ok {
		t.Fatalf("Delete pruned a directory that still holds a ledger")
	}
}

func TestCreateIdempotent(t *testing.T) {
	s, _ := keeperStore(t, Config{})
	ctx := testContext(t)
	md := sampleMetadata()
	md.CToken = 77
	if _, _, err := s.Create(ctx, 5, md); err != nil {
		t.Fatal(err)
	}
	// A retry of the same create (its reply lost) succeeds with what is
	// stored, even after the metadata moved on.
	stored, v, _ := s.Read(ctx, 5)
	if _, err := s.Write(ctx, 5, stored, v); err != nil {
		t.Fatal(err)
	}
	again, v2, err := s.Create(ctx, 5, md)
	if err != nil || v2 != 1 || again.CToken != 77 {
		t.Fatalf("retried Create = %+v, %v, %v; want success at version 1", again, v2, err)
	}
	// Another creator's ledger at the same id is an error.
	other := md.Clone()
	other.CToken = 78
	if _, _, err := s.Create(ctx, 5, other); !errors.Is(err, ErrLedgerExists) {
		t.Fatalf("Create over another creator's ledger = %v, want ErrLedgerExists", err)
	}
	// So is a create without a token: it draws a fresh one.
	if _, _, err := s.Create(ctx, 5, sampleMetadata()); !errors.Is(err, ErrLedgerExists) {
		t.Fatalf("Create over an existing ledger = %v, want ErrLedgerExists", err)
	}
	if _, _, err := s.Create(ctx, -1, md); !errors.Is(err, ErrInvalidLedgerID) {
		t.Fatalf("Create(-1) = %v, want ErrInvalidLedgerID", err)
	}
}

// TestCompareAndSet has two writers on separate sessions race from the
// same version: one wins, the other gets ErrBadVersion, re-reads, and
// succeeds on top of the winner's change.
func TestCompareAndSet(t *testing.T) {
	addr := metadatatest.KeeperAddr(t)
	a := newTestStore(t, dial(t, addr), Config{})
	b := newTestStore(t, dial(t, addr), Config{})
	ctx := testContext(t)
	if err := a.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Create(ctx, 42, sampleMetadata()); err != nil {
		t.Fatal(err)
	}
	mdA, vA, err := a.Read(ctx, 42)
	if err != nil {
		t.Fatal(err)
	}
	mdB, vB, err := b.Read(ctx, 42)
	if err != nil {
		t.Fatal(err)
	}
	// A replaces the last ensemble; B wants to start recovery.
	mdA.Segments[0].Bookies[2] = "192.0.2.4:3181"
	if _, err := a.Write(ctx, 42, mdA, vA); err != nil {
		t.Fatal(err)
	}
	mdB.State = ledger.StateInRecovery
	if _, err := b.Write(ctx, 42, mdB, vB); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("the losing Write = %v, want ErrBadVersion", err)
	}
	mdB, vB, err = b.Read(ctx, 42)
	if err != nil {
		t.Fatal(err)
	}
	next := mdB.Clone()
	next.State = ledger.StateInRecovery
	if err := CheckUpdate(mdB, next); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Write(ctx, 42, next, vB); err != nil || v != 2 {
		t.Fatalf("Write after re-reading = %v, %v", v, err)
	}
	final, _, _ := a.Read(ctx, 42)
	if final.State != ledger.StateInRecovery || final.Segments[0].Bookies[2] != "192.0.2.4:3181" {
		t.Fatalf("final metadata %+v lost a write", final)
	}
}

func TestReadMalformed(t *testing.T) {
	s, conn := keeperStore(t, Config{})
	mkdirs(t, conn, "/ledgers/00/0000")
	if _, _, err := conn.Create(t.Context(), "/ledgers/00/0000/L0003", []byte("junk"), zkclient.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Read(testContext(t), 3); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Read of junk = %v, want ErrMalformed", err)
	}
}

func TestCancelledContext(t *testing.T) {
	s, _ := keeperStore(t, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := s.Read(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with a cancelled context = %v", err)
	}
}
