package metadata

import (
	"errors"
	"strings"
	"testing"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
)

func TestBookieIDValidate(t *testing.T) {
	for _, tc := range []struct {
		id ledger.BookieID
		ok bool
	}{
		{"192.0.2.1:3181", true},
		{"bookie-1.example.com:3181", true},
		{"Bookie_ONE", true},
		{"a;b<c>=?@[\\]^", true}, // BookKeeper's range ':'-'_' lets these through
		{"", false},
		{"readonly", false},
		{"ReadOnly", false},
		{"a/b", false},
		{"a b", false},
		{"a\x00", false},
		{"é", false},
		{"a,b", false},
	} {
		if err := tc.id.Validate(); (err == nil) != tc.ok {
			t.Errorf("ledger.BookieID(%q).Validate() = %v", tc.id, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(md *ledger.Metadata)
		want   string // "" for valid
	}{
		{"sample", func(*ledger.Metadata) {}, ""},
		{"E=Qw=Qa", func(md *ledger.Metadata) { md.WriteQuorum, md.AckQuorum = 3, 3 }, ""},
		{"Qa 0", func(md *ledger.Metadata) { md.AckQuorum = 0 }, "quorums"},
		{"Qa above Qw", func(md *ledger.Metadata) { md.AckQuorum = 3 }, "quorums"},
		{"Qw above E", func(md *ledger.Metadata) { md.WriteQuorum = 4 }, "quorums"},
		{"no ensembles", func(md *ledger.Metadata) { md.Segments = nil }, "no ensembles"},
		{"short ensemble", func(md *ledger.Metadata) { md.Segments[0].Bookies = md.Segments[0].Bookies[:2] }, "bookies"},
		{"equal keys", func(md *ledger.Metadata) {
			md.Segments = append(md.Segments, ledger.Segment{FirstEntryID: 0, Bookies: md.Segments[0].Bookies})
		}, "increasing"},
		{"later key", func(md *ledger.Metadata) {
			md.Segments = append(md.Segments, ledger.Segment{FirstEntryID: 10, Bookies: md.Segments[0].Bookies})
		}, ""},
		{"duplicate bookie", func(md *ledger.Metadata) { md.Segments[0].Bookies[2] = md.Segments[0].Bookies[0] }, "twice"},
		{"bad bookie", func(md *ledger.Metadata) { md.Segments[0].Bookies[1] = "x y" }, "bookie id"},
		{"open with length", func(md *ledger.Metadata) { md.Length = 3 }, "only a closed"},
		{"recovering with last entry", func(md *ledger.Metadata) { md.State, md.LastEntryID = ledger.StateInRecovery, 0 }, "only a closed"},
		{"closed empty", func(md *ledger.Metadata) { md.State = ledger.StateClosed }, ""},
		{"closed", func(md *ledger.Metadata) { md.State, md.LastEntryID, md.Length = ledger.StateClosed, 4, 50 }, ""},
		{"closed below -1", func(md *ledger.Metadata) { md.State, md.LastEntryID = ledger.StateClosed, -2 }, "closed ledger"},
		{"state 0", func(md *ledger.Metadata) { md.State = 0 }, "unknown state"},
		{"no digest no password", func(md *ledger.Metadata) { md.DigestType, md.Password = 0, nil }, ""},
		{"password no digest", func(md *ledger.Metadata) { md.DigestType = 0 }, "password"},
		{"digest 5", func(md *ledger.Metadata) { md.DigestType = 5 }, "digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := sampleMetadata()
			tc.mutate(&md)
			err := Validate(md)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrMalformed mentioning %q", err, tc.want)
			}
		})
	}
}

func TestCloneIsDeep(t *testing.T) {
	md := sampleMetadata()
	md.Custom = map[string][]byte{"k": []byte("v")}
	c := md.Clone()
	c.Segments[0].Bookies[0] = "other:1"
	c.Password[0] = 'X'
	c.Custom["k"][0] = 'X'
	if !md.Equal(sampleWithCustom()) {
		t.Fatalf("changing a clone changed the original: %+v", md)
	}
}

func sampleWithCustom() ledger.Metadata {
	md := sampleMetadata()
	md.Custom = map[string][]byte{"k": []byte("v")}
	return md
}

func TestNewOpen(t *testing.T) {
	md := NewOpen([]ledger.BookieID{"a:1", "b:1"}, 2, 1, bkproto.DigestCRC32, nil)
	if err := Validate(md); err != nil {
		t.Fatal(err)
	}
	if md.EnsembleSize != 2 || md.State != ledger.StateOpen || md.LastEntryID != ledger.NoEntry || md.Segments[0].FirstEntryID != 0 {
		t.Fatalf("NewOpen = %+v", md)
	}
}

func TestCheckUpdate(t *testing.T) {
	open := sampleMetadata()
	replaced := func(md ledger.Metadata) ledger.Metadata {
		md = md.Clone()
		md.Segments[len(md.Segments)-1].Bookies[1] = "192.0.2.9:3181"
		return md
	}
	appended := func(md ledger.Metadata, first int64) ledger.Metadata {
		md = md.Clone()
		md.Segments = append(md.Segments, ledger.Segment{FirstEntryID: first, Bookies: []ledger.BookieID{"192.0.2.1:3181", "192.0.2.9:3181", "192.0.2.3:3181"}})
		return md
	}
	state := func(md ledger.Metadata, s ledger.State, last, length int64) ledger.Metadata {
		md = md.Clone()
		md.State, md.LastEntryID, md.Length = s, last, length
		return md
	}
	twoSegs := appended(open, 10)
	closed := state(twoSegs, ledger.StateClosed, 20, 300)
	for _, tc := range []struct {
		name       string
		prev, next ledger.Metadata
		ok         bool
	}{
		{"no change", open, open, true},
		{"replace last ensemble", open, replaced(open), true},
		{"add an ensemble", open, twoSegs, true},
		{"replace the new last", twoSegs, replaced(twoSegs), true},
		{"change an earlier ensemble", twoSegs, func() ledger.Metadata {
			md := twoSegs.Clone()
			md.Segments[0].Bookies[0] = "192.0.2.8:3181"
			return md
		}(), false},
		{"drop the last ensemble", twoSegs, open, false},
		{"move the last key", twoSegs, func() ledger.Metadata {
			md := twoSegs.Clone()
			md.Segments[1].FirstEntryID = 11
			return md
		}(), false},
		{"open to recovery", open, state(open, ledger.StateInRecovery, -1, 0), true},
		{"open to closed", twoSegs, closed, true},
		{"recovery to closed with a new ensemble", state(open, ledger.StateInRecovery, -1, 0),
			state(appended(open, 5), ledger.StateClosed, 7, 70), true},
		{"recovery to open", state(open, ledger.StateInRecovery, -1, 0), open, false},
		{"closed to open", closed, twoSegs, false},
		{"closed to recovery", closed, state(twoSegs, ledger.StateInRecovery, -1, 0), false},
		{"close again, same", closed, closed.Clone(), true},
		{"close again, new cToken", closed, func() ledger.Metadata { md := closed.Clone(); md.CToken = 9; return md }(), true},
		{"close again, other last entry", closed, state(twoSegs, ledger.StateClosed, 21, 300), false},
		{"quorum change", open, func() ledger.Metadata { md := open.Clone(); md.AckQuorum = 1; return md }(), false},
		{"password change", open, func() ledger.Metadata { md := open.Clone(); md.Password = []byte("x"); return md }(), false},
		{"custom metadata change", open, sampleWithCustom(), false},
		{"invalid next", open, state(open, ledger.StateOpen, 3, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckUpdate(tc.prev, tc.next)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrIllegalUpdate)) {
				t.Fatalf("CheckUpdate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
