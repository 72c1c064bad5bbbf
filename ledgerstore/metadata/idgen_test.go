package metadata

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestNewLedgerIDShort(t *testing.T) {
	s, conn := keeperStore(t, Config{})
	ctx := testContext(t)
	var ids []int64
	for range 5 {
		id, err := s.NewLedgerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// ZooKeeper numbers a parent's sequential children from its cversion,
	// which every create and delete under /ledgers/idgen bumps.
	if !slices.IsSorted(ids) || ids[0] != 0 || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("ids %v: want distinct increasing ids from 0", ids)
	}
	kids, _, err := conn.Children(t.Context(), "/ledgers/idgen")
	if err != nil || len(kids) != 0 {
		t.Fatalf("/ledgers/idgen children = %v, %v; the id znodes must be deleted", kids, err)
	}
	// A second client on the same tree never repeats an id.
	other := newTestStore(t, conn, Config{})
	id, err := other.NewLedgerID(ctx)
	if err != nil || slices.Contains(ids, id) {
		t.Fatalf("second client's id %d (%v) repeats one of %v", id, err, ids)
	}
}

func TestNewLedgerIDLong(t *testing.T) {
	s, conn := keeperStore(t, Config{})
	ctx := testContext(t)
	mkdirs(t, conn, "/ledgers/idgen-long") // the cluster already ran out of short ids
	first, err := s.NewLedgerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.NewLedgerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first != 1<<32 || second <= first || second>>32 != 1 {
		t.Fatalf("long ids %#x, %#x: want 0x100000000 and a larger one in the same bucket", first, second)
	}
	if _, ok, _ := conn.Exists(t.Context(), "/ledgers/idgen-long/HOB-0000000001"); !ok {
		t.Fatalf("no HOB-0000000001 directory")
	}
	// The long ids get long paths, and round-trip through the store.
	if _, _, err := s.Create(ctx, first, sampleMetadata()); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := conn.Exists(t.Context(), "/ledgers/000/0000/0042/9496/L7296"); !ok {
		t.Fatalf("ledger %d not at its long path", first)
	}
}

// TestNewLedgerIDPrunesHOBs checks that the generator uses the highest
// bucket and deletes all but the three highest.
func TestNewLedgerIDPrunesHOBs(t *testing.T) {
	s, conn := keeperStore(t, Config{})
	ctx := testContext(t)
	for hi := 1; hi <= 5; hi++ {
		mkdirs(t, conn, fmt.Sprintf("/ledgers/idgen-long/HOB-%010d", hi))
	}
	mkdirs(t, conn, "/ledgers/idgen-long/not-a-hob")
	id, err := s.NewLedgerID(ctx)
	if err != nil || id>>32 != 5 {
		t.Fatalf("NewLedgerID = %#x, %v; want one in bucket 5", id, err)
	}
	kids, _, _ := conn.Children(t.Context(), "/ledgers/idgen-long")
	slices.Sort(kids)
	want := []string{"HOB-0000000003", "HOB-0000000004", "HOB-0000000005", "not-a-hob"}
	if !slices.Equal(kids, want) {
		t.Fatalf("idgen-long children %v, want %v", kids, want)
	}
}

func TestParseSequence(t *testing.T) {
	const prefix = "/ledgers/idgen/ID-"
	for _, tc := range []struct {
		name string
		want int64
		err  error // nil, errSequenceOverflow, or errAny
	}{
		{prefix + "0000000000", 0, nil},
		{prefix + "0000000007", 7, nil},
		{prefix + "2147483646", 2147483646, nil},
		{prefix + "2147483647", 0, errSequenceOverflow},  // BookKeeper refuses Integer.MAX_VALUE itself
		{prefix + "-2147483648", 0, errSequenceOverflow}, // the counter wrapped
		{prefix + "x", 0, errAny},
		{"/elsewhere/ID-0000000001", 0, errAny},
	} {
		got, err := parseSequence(tc.name, prefix)
		switch {
		case tc.err == nil && (err != nil || got != tc.want):
			t.Errorf("parseSequence(%s) = %d, %v; want %d", tc.name, got, err, tc.want)
		case tc.err == errSequenceOverflow && !errors.Is(err, errSequenceOverflow):
			t.Errorf("parseSequence(%s) = %v; want overflow", tc.name, err)
		case tc.err == errAny && (err == nil || errors.Is(err, errSequenceOverflow)):
			t.Errorf("parseSequence(%s) = %v; want a parse error", tc.name, err)
		}
	}
}

var errAny = errors.New("any error")

func TestParseHOBs(t *testing.T) {
	got := parseHOBs([]string{"HOB-0000000003", "HOB-0000000001", "x", "HOB-", "HOB-abc", "HOB-9999999999", "HOB-0000000002"})
	if want := []int64{1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("parseHOBs = %v, want %v", got, want)
	}
}
