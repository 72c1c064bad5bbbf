package metadata

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/ledgerstore/metadata/metadatatest"
)

var listIDs = []int64{0, 1, 9999, 10000, math.MaxInt32 - 1, math.MaxInt32, 1 << 31, 1<<32 | 7, 1 << 40, math.MaxInt64}

func TestList(t *testing.T) {
	for _, layout := range []Layout{LayoutHierarchical, LayoutLongHierarchical} {
		t.Run(layout.String(), func(t *testing.T) {
			s, conn := keeperStore(t, Config{Layout: layout})
			ctx := testContext(t)
			if ids, err := s.List(ctx); err != nil || len(ids) != 0 {
				t.Fatalf("List of an empty tree = %v, %v", ids, err)
			}
			for _, id := range slices.Backward(listIDs) {
				if _, _, err := s.Create(ctx, id, sampleMetadata()); err != nil {
					t.Fatal(err)
				}
			}
			// Special znodes and id generator leftovers are not ledgers.
			if _, err := s.NewLedgerID(ctx); err != nil {
				t.Fatal(err)
			}
			mkdirs(t, conn, "/ledgers/cookies/b:1", "/ledgers/underreplication/ledgers", "/ledgers/idgen-long/HOB-0000000001",
				"/ledgers/ID-0000000001")
			ids, err := s.List(ctx)
			if err != nil || !slices.Equal(ids, listIDs) {
				t.Fatalf("List = %v, %v\nwant %v", ids, err, listIDs)
			}
			if err := s.Delete(ctx, 9999, AnyVersion); err != nil {
				t.Fatal(err)
			}
			ids, err = s.List(ctx)
			if err != nil || slices.Contains(ids, 9999) || len(ids) != len(listIDs)-1 {
				t.Fatalf("List after deleting 9999 = %v, %v", ids, err)
			}
		})
	}
}

// TestListIncomplete checks the rule garbage collection relies on: the
// listing fails, rather than leaving ledgers out, on anything odd.
func TestListIncomplete(t *testing.T) {
	for _, tc := range []struct {
		name     string
		layout   Layout
		mkdirs   []string // odd znodes to add
		failPath string   // a directory whose listing fails
		failErr  error    // with this error; nil means errInjected
		cancel   bool     // list with a cancelled context
	}{
		{name: "unknown root child", mkdirs: []string{"/ledgers/foo"}},
		{name: "flat ledger at the root", mkdirs: []string{"/ledgers/L0000000005"}},
		{name: "odd intermediate", mkdirs: []string{"/ledgers/00/abcd"}},
		{name: "odd long intermediate", mkdirs: []string{"/ledgers/000/0000/00x0"}},
		{name: "odd leaf", mkdirs: []string{"/ledgers/00/0000/X0001"}},
		{name: "short leaf too long", mkdirs: []string{"/ledgers/00/0000/L00001"}},
		{name: "long id in the short tree", mkdirs: []string{"/ledgers/99/9999/L9999"}},
		{name: "short id in the long tree", mkdirs: []string{"/ledgers/000/0000/0000/0000/L0005"}},
		{name: "short tree under the long layout", layout: LayoutLongHierarchical,
			mkdirs: []string{"/ledgers/00/0000/L0005"}},
		{name: "id beyond int64", mkdirs: []string{"/ledgers/999/9999/9999/9999/L9999"}},
		{name: "root listing fails", failPath: "/ledgers"},
		{name: "level listing fails", failPath: "/ledgers/00/0001"},
		{name: "level vanished", failPath: "/ledgers/00/0000", failErr: zkproto.ErrNoNode},
		{name: "connection lost", failPath: "/ledgers/00", failErr: zkclient.ErrConnectionLoss},
		{name: "cancelled", cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := dial(t, metadatatest.KeeperAddr(t))
			fc := newFaultConn(conn)
			s := newTestStore(t, fc, Config{Layout: tc.layout})
			ctx := testContext(t)
			if err := s.Init(ctx); err != nil {
				t.Fatal(err)
			}
			for _, id := range []int64{3, 10003} {
				if _, _, err := s.Create(ctx, id, sampleMetadata()); err != nil {
					t.Fatal(err)
				}
			}
			mkdirs(t, conn, tc.mkdirs...)
			if tc.failPath != "" {
				fc.failOn("Children", tc.failPath, cmp.Or(tc.failErr, errInjected))
			}
			if tc.cancel {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancel()
			}
			ids, err := s.List(ctx)
			if !errors.Is(err, ErrIncompleteListing) {
				t.Fatalf("List = %v, %v; want ErrIncompleteListing", ids, err)
			}
			t.Logf("List = %v, %v", ids, err)
		})
	}
}
