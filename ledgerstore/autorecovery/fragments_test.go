package autorecovery

import (
	"slices"
	"testing"

	"keeper/ledgerstore/ledger"
)

func seg(first int64, bs ...ledger.BookieID) ledger.Segment {
	return ledger.Segment{FirstEntryID: first, Bookies: bs}
}

func TestLostFragments(t *testing.T) {
	dead := func(bs ...ledger.BookieID) func(ledger.BookieID) bool {
		return func(b ledger.BookieID) bool { return !slices.Contains(bs, b) }
	}
	base := ledger.Metadata{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2}
	for _, tc := range []struct {
		name     string
		state    ledger.State
		last     int64
		segments []ledger.Segment
		dead     []ledger.BookieID
		want     []fragment
		open     bool
	}{
		{"closed, one segment", ledger.StateClosed, 9, []ledger.Segment{seg(0, "a", "b", "c")}, []ledger.BookieID{"b"},
			[]fragment{{segment: 0, first: 0, last: 9, pos: 1, bookie: "b"}}, false},
		{"closed empty", ledger.StateClosed, -1, []ledger.Segment{seg(0, "a", "b", "c")}, []ledger.BookieID{"c"},
			[]fragment{{segment: 0, first: 0, last: -1, pos: 2, bookie: "c"}}, false},
		{"open, dead in the last segment only", ledger.StateOpen, -1, []ledger.Segment{seg(0, "a", "b", "c")},
			[]ledger.BookieID{"a"}, nil, true},
		{"open, dead in an earlier segment", ledger.StateOpen, -1,
			[]ledger.Segment{seg(0, "a", "b", "c"), seg(5, "a", "d", "c")}, []ledger.BookieID{"b"},
			[]fragment{{segment: 0, first: 0, last: 4, pos: 1, bookie: "b"}}, false},
		{"in recovery, dead everywhere", ledger.StateInRecovery, -1,
			[]ledger.Segment{seg(0, "a", "b", "c"), seg(5, "a", "d", "b")}, []ledger.BookieID{"b"},
			[]fragment{{segment: 0, first: 0, last: 4, pos: 1, bookie: "b"}}, true},
		{"nothing dead", ledger.StateClosed, 3, []ledger.Segment{seg(0, "a", "b", "c")}, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := base
			md.State, md.LastEntryID, md.Segments = tc.state, tc.last, tc.segments
			got, open := lostFragments(md, dead(tc.dead...))
			if !slices.Equal(got, tc.want) || open != tc.open {
				t.Fatalf("lostFragments = %+v, %v; want %+v, %v", got, open, tc.want, tc.open)
			}
		})
	}
}

func TestFragmentEntries(t *testing.T) {
	p := ledger.Placement{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2}
	// E3/Qw2: entry e goes to positions e%3 and (e+1)%3.
	for _, tc := range []struct {
		f    fragment
		want []int64
	}{
		{fragment{first: 0, last: 8, pos: 0}, []int64{0, 2, 3, 5, 6, 8}},
		{fragment{first: 0, last: 8, pos: 1}, []int64{0, 1, 3, 4, 6, 7}},
		{fragment{first: 4, last: 5, pos: 2}, []int64{4, 5}},
		{fragment{first: 0, last: -1, pos: 2}, nil},
	} {
		if got := tc.f.entries(p); !slices.Equal(got, tc.want) {
			t.Errorf("entries(%+v) = %v, want %v", tc.f, got, tc.want)
		}
	}
	s := seg(0, "a", "b", "c")
	if got := sources(p, s, 2, 0); !slices.Equal(got, []ledger.BookieID{"c"}) {
		t.Errorf("sources(entry 2, pos 0) = %v", got)
	}
}

func TestLedgersOn(t *testing.T) {
	mds := map[int64]ledger.Metadata{
		1: {Segments: []ledger.Segment{seg(0, "a", "b", "c")}},
		2: {Segments: []ledger.Segment{seg(0, "a", "c", "d"), seg(3, "a", "b", "d")}},
		3: {Segments: []ledger.Segment{seg(0, "a", "c", "d")}},
	}
	got := ledgersOn(mds, func(b ledger.BookieID) bool { return b == "b" || b == "x" })
	if len(got) != 2 || !slices.Equal(got[1], []string{"b"}) || !slices.Equal(got[2], []string{"b"}) {
		t.Fatalf("ledgersOn = %v", got)
	}
}
