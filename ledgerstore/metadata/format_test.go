package metadata

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"keeper/ledgerstore/bkproto"
)

func TestBookieIDValidate(t *testing.T) {
	for _, tc := range []struct {
		id BookieID
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
			t.Errorf("BookieID(%q).Validate() = %v", tc.id, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(md *LedgerMetadata)
		want   string // "" for valid
	}{
		{"sample", func(*LedgerMetadata) {}, ""},
		{"E=Qw=Qa", func(md *LedgerMetadata) { md.WriteQuorumSize, md.AckQuorumSize = 3, 3 }, ""},
		{"Qa 0", func(md *LedgerMetadata) { md.AckQuorumSize = 0 }, "quorums"},
		{"Qa above Qw", func(md *LedgerMetadata) { md.AckQuorumSize = 3 }, "quorums"},
		{"Qw above E", func(md *LedgerMetadata) { md.WriteQuorumSize = 4 }, "quorums"},
		{"no ensembles", func(md *LedgerMetadata) { md.Ensembles = nil }, "no ensembles"},
		{"short ensemble", func(md *LedgerMetadata) { md.Ensembles[0].Ensemble = md.Ensembles[0].Ensemble[:2] }, "bookies"},
		{"equal keys", func(md *LedgerMetadata) {
			md.Ensembles = append(md.Ensembles, Segment{0, md.Ensembles[0].Ensemble})
		}, "increasing"},
		{"later key", func(md *LedgerMetadata) {
			md.Ensembles = append(md.Ensembles, Segment{10, md.Ensembles[0].Ensemble})
		}, ""},
		{"duplicate bookie", func(md *LedgerMetadata) { md.Ensembles[0].Ensemble[2] = md.Ensembles[0].Ensemble[0] }, "twice"},
		{"bad bookie", func(md *LedgerMetadata) { md.Ensembles[0].Ensemble[1] = "x y" }, "bookie id"},
		{"open with length", func(md *LedgerMetadata) { md.LengthBytes = 3 }, "only a closed"},
		{"recovering with last entry", func(md *LedgerMetadata) { md.State, md.LastEntryID = StateInRecovery, 0 }, "only a closed"},
		{"closed empty", func(md *LedgerMetadata) { md.State = StateClosed }, ""},
		{"closed", func(md *LedgerMetadata) { md.State, md.LastEntryID, md.LengthBytes = StateClosed, 4, 50 }, ""},
		{"closed below -1", func(md *LedgerMetadata) { md.State, md.LastEntryID = StateClosed, -2 }, "closed ledger"},
		{"state 0", func(md *LedgerMetadata) { md.State = 0 }, "unknown state"},
		{"no digest no password", func(md *LedgerMetadata) { md.DigestType, md.Password = 0, nil }, ""},
		{"password no digest", func(md *LedgerMetadata) { md.DigestType = 0 }, "password"},
		{"digest 5", func(md *LedgerMetadata) { md.DigestType = 5 }, "digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := sampleMetadata()
			tc.mutate(&md)
			err := md.Validate()
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

func TestEnsembleAt(t *testing.T) {
	a, b, c := []BookieID{"a:1"}, []BookieID{"b:1"}, []BookieID{"c:1"}
	md := LedgerMetadata{Ensembles: []Segment{{0, a}, {10, b}, {25, c}}}
	for _, tc := range []struct {
		entry int64
		want  []BookieID
	}{
		{-1, nil}, {0, a}, {9, a}, {10, b}, {24, b}, {25, c}, {1 << 40, c},
	} {
		if got := md.EnsembleAt(tc.entry); !slices.Equal(got, tc.want) {
			t.Errorf("EnsembleAt(%d) = %v, want %v", tc.entry, got, tc.want)
		}
	}
	if got := md.LastSegment(); got.FirstEntryID != 25 {
		t.Errorf("LastSegment = %+v", got)
	}
}

func TestCloneIsDeep(t *testing.T) {
	md := sampleMetadata()
	md.CustomMetadata = map[string][]byte{"k": []byte("v")}
	c := md.Clone()
	c.Ensembles[0].Ensemble[0] = "other:1"
	c.Password[0] = 'X'
	c.CustomMetadata["k"][0] = 'X'
	if !md.Equal(sampleWithCustom()) {
		t.Fatalf("changing a clone changed the original: %+v", md)
	}
}

func sampleWithCustom() LedgerMetadata {
	md := sampleMetadata()
	md.CustomMetadata = map[string][]byte{"k": []byte("v")}
	return md
}

func TestNewOpen(t *testing.T) {
	md := NewOpen([]BookieID{"a:1", "b:1"}, 2, 1, bkproto.DigestCRC32, nil)
	if err := md.Validate(); err != nil {
		t.Fatal(err)
	}
	if md.EnsembleSize != 2 || md.State != StateOpen || md.LastEntryID != NoEntry || md.Ensembles[0].FirstEntryID != 0 {
		t.Fatalf("NewOpen = %+v", md)
	}
}

func TestCheckUpdate(t *testing.T) {
	open := sampleMetadata()
	replaced := func(md LedgerMetadata) LedgerMetadata {
		md = md.Clone()
		md.Ensembles[len(md.Ensembles)-1].Ensemble[1] = "192.0.2.9:3181"
		return md
	}
	appended := func(md LedgerMetadata, first int64) LedgerMetadata {
		md = md.Clone()
		md.Ensembles = append(md.Ensembles, Segment{first, []BookieID{"192.0.2.1:3181", "192.0.2.9:3181", "192.0.2.3:3181"}})
		return md
	}
	state := func(md LedgerMetadata, s State, last, length int64) LedgerMetadata {
		md = md.Clone()
		md.State, md.LastEntryID, md.LengthBytes = s, last, length
		return md
	}
	twoSegs := appended(open, 10)
	closed := state(twoSegs, StateClosed, 20, 300)
	for _, tc := range []struct {
		name       string
		prev, next LedgerMetadata
		ok         bool
	}{
		{"no change", open, open, true},
		{"replace last ensemble", open, replaced(open), true},
		{"add an ensemble", open, twoSegs, true},
		{"replace the new last", twoSegs, replaced(twoSegs), true},
		{"change an earlier ensemble", twoSegs, func() LedgerMetadata {
			md := twoSegs.Clone()
			md.Ensembles[0].Ensemble[0] = "192.0.2.8:3181"
			return md
		}(), false},
		{"drop the last ensemble", twoSegs, open, false},
		{"move the last key", twoSegs, func() LedgerMetadata {
			md := twoSegs.Clone()
			md.Ensembles[1].FirstEntryID = 11
			return md
		}(), false},
		{"open to recovery", open, state(open, StateInRecovery, -1, 0), true},
		{"open to closed", twoSegs, closed, true},
		{"recovery to closed with a new ensemble", state(open, StateInRecovery, -1, 0),
			state(appended(open, 5), StateClosed, 7, 70), true},
		{"recovery to open", state(open, StateInRecovery, -1, 0), open, false},
		{"closed to open", closed, twoSegs, false},
		{"closed to recovery", closed, state(twoSegs, StateInRecovery, -1, 0), false},
		{"close again, same", closed, closed.Clone(), true},
		{"close again, new cToken", closed, func() LedgerMetadata { md := closed.Clone(); md.CToken = 9; return md }(), true},
		{"close again, other last entry", closed, state(twoSegs, StateClosed, 21, 300), false},
		{"quorum change", open, func() LedgerMetadata { md := open.Clone(); md.AckQuorumSize = 1; return md }(), false},
		{"password change", open, func() LedgerMetadata { md := open.Clone(); md.Password = []byte("x"); return md }(), false},
		{"custom metadata change", open, sampleWithCustom(), false},
		{"invalid next", open, state(open, StateOpen, 3, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckUpdate(tc.prev, tc.next)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrIllegalUpdate)) {
				t.Fatalf("CheckUpdate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
