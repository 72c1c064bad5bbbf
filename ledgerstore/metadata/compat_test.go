package metadata

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"keeper/coordination/zkclient"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata/metadatatest"
	"keeper/verify/compat/zkreal"
)

// TestSameTreeAsZooKeeper runs one workload against Apache ZooKeeper and
// against keeper and compares the trees it leaves, path by path and byte
// by byte: the store must not depend on anything keeper does differently.
func TestSameTreeAsZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	real := zkreal.Start(t, zkreal.Options{})
	onZK, idsZK := metadataWorkload(t, real.Addr())
	onKeeper, idsKeeper := metadataWorkload(t, metadatatest.KeeperAddr(t))
	if !slices.Equal(idsZK, idsKeeper) {
		t.Errorf("ledger ids: ZooKeeper %v, keeper %v", idsZK, idsKeeper)
	}
	if !slices.Equal(onZK, onKeeper) {
		t.Errorf("trees differ\nZooKeeper:\n%s\nkeeper:\n%s", strings.Join(onZK, "\n"), strings.Join(onKeeper, "\n"))
	}
}

// metadataWorkload formats a tree, mints ids, creates, updates and deletes
// ledgers, checks the listing and the bookie watch, and returns a dump of
// the tree and the ids it minted.
func metadataWorkload(t *testing.T, addr string) ([]string, []int64) {
	t.Helper()
	conn := dial(t, addr)
	s := newTestStore(t, conn, Config{})
	ctx := testContext(t)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for range 3 {
		id, err := s.NewLedgerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	all := append(slices.Clone(ids), 10000, math.MaxInt32, 1<<32|5)
	for i, id := range all {
		md := sampleMetadata()
		md.CToken = int64(i + 1)
		md.Custom = map[string][]byte{"n": []byte(fmt.Sprint(id))}
		if _, _, err := s.Create(ctx, id, md); err != nil {
			t.Fatal(err)
		}
	}
	md, v, err := s.Read(ctx, 10000)
	if err != nil {
		t.Fatal(err)
	}
	md.State, md.LastEntryID, md.Length = ledger.StateClosed, 41, 4200
	if _, err := s.Write(ctx, 10000, md, v); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, 10000, md, v); err == nil {
		t.Fatal("a stale write succeeded")
	}
	if err := s.Delete(ctx, ids[1], AnyVersion); err != nil {
		t.Fatal(err)
	}
	listed, err := s.List(ctx)
	want := slices.DeleteFunc(slices.Clone(all), func(id int64) bool { return id == ids[1] })
	slices.Sort(want)
	if err != nil || !slices.Equal(listed, want) {
		t.Fatalf("List = %v, %v; want %v", listed, err, want)
	}

	ch := s.WatchBookies(ctx)
	next(t, ch)
	registerBookie(t, addr, "b1:3181", true)
	if got, _ := next(t, ch); !got.Equal(Registry{ReadOnly: []ledger.BookieID{"b1:3181"}}) {
		t.Fatalf("registry %+v", got)
	}
	return dumpTree(t, conn, "/ledgers"), ids
}

// dumpTree lists every znode under root with its data, skipping the
// random INSTANCEID and the ephemeral registrations.
func dumpTree(t *testing.T, conn *zkclient.Session, root string) []string {
	t.Helper()
	var out []string
	var walk func(p string)
	walk = func(p string) {
		data, stat, err := conn.Get(t.Context(), p)
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		if strings.HasSuffix(p, "/INSTANCEID") || stat.EphemeralOwner != 0 {
			data = nil
		}
		out = append(out, fmt.Sprintf("%s %q", p, data))
		kids, _, err := conn.Children(t.Context(), p)
		if err != nil {
			t.Fatalf("children %s: %v", p, err)
		}
		slices.Sort(kids)
		for _, k := range kids {
			walk(p + "/" + k)
		}
	}
	walk(root)
	return out
}
