package chaos

import (
	"strings"
	"testing"

	"keeper/ledgerstore/ledger"
)

// TestRackViolations: scenario 13's rack check passes a ledger whose
// write sets all span two racks on live bookies, and reports each way of
// breaking that: a pair in one rack, a bookie gone, a bookie in no rack,
// in any segment.
func TestRackViolations(t *testing.T) {
	racks := map[ledger.BookieID]string{"a1": "/rack1", "a2": "/rack1", "b1": "/rack2", "b2": "/rack2",
		"c1": "/rack3", "c2": "/rack3"}
	alive := func(b ledger.BookieID) bool { return b != "a1" && b != "x" }
	md := func(last int64, segs ...ledger.Segment) ledger.Metadata {
		return ledger.Metadata{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2, State: ledger.StateClosed,
			LastEntryID: last, Segments: segs}
	}
	seg := func(first int64, bookies ...ledger.BookieID) ledger.Segment {
		return ledger.Segment{FirstEntryID: first, Bookies: bookies}
	}
	for _, tt := range []struct {
		name     string
		md       ledger.Metadata
		minRacks int
		sets     int
		want     []string // a substring of each problem, in order
	}{
		{"three racks", md(9, seg(0, "a2", "b1", "c1")), 2, 3, nil},
		{"replaced in its rack", md(9, seg(0, "a2", "b1", "c1"), seg(5, "a2", "b2", "c1")), 2, 6, nil},
		{"adjacent pair in one rack", md(9, seg(0, "a2", "b1", "b2")), 2, 3,
			[]string{"entry 1: write set [b1 b2] spans racks [/rack2], want 2"}},
		{"the wrap-around pair", md(9, seg(0, "b1", "c1", "b2")), 2, 3,
			[]string{"entry 2: write set [b2 b1] spans racks [/rack2], want 2"}},
		{"a lost bookie left in", md(9, seg(0, "a2", "b1", "c1"), seg(4, "a1", "b1", "c1")), 2, 6,
			[]string{"entry 5: write set [c1 a1] has a1, not live", "entry 6: write set [a1 b1] has a1, not live"}},
		{"a bookie in no rack", md(2, seg(0, "a2", "b1", "x")), 2, 3,
			[]string{"entry 1: write set [b1 x] has x, not live", "has x, in no rack", "spans racks [/rack2], want 2",
				"entry 2: write set [x a2] has x, not live", "has x, in no rack", "spans racks [/rack1], want 2"}},
		{"an empty segment is skipped", md(4, seg(0, "a2", "b1", "c1"), seg(5, "b1", "b2", "c1")), 2, 3, nil},
		{"short segment: its entries only", md(0, seg(0, "a2", "b1", "b2")), 2, 1, nil},
		{"three racks wanted, Qw caps it", md(9, seg(0, "a2", "b1", "c1")), 3, 3, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sets, bad := rackViolations(tt.md, racks, alive, tt.minRacks)
			if sets != tt.sets {
				t.Errorf("looked at %d write sets, want %d", sets, tt.sets)
			}
			if len(bad) != len(tt.want) {
				t.Fatalf("problems %q, want %d like %q", bad, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(bad[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, bad[i], w)
				}
			}
		})
	}
}
