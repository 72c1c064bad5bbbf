package ledger

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"keeper/ledgerstore/bkproto"
)

// TestWriterExplicitLAC runs BookKeeper's explicit LAC policy through
// scripts of adds, bookie failures and ticks, and checks what each tick
// sends: "LAC@bookies" for a WRITE_LAC to the ensemble, "" for nothing.
func TestWriterExplicitLAC(t *testing.T) {
	tests := []struct {
		name     string
		interval int
		// steps: "add" appends an entry every write-set bookie acknowledges,
		// "push" one nobody acknowledges yet, "fail X" reports bookie X
		// failed, "tick" advances one tick.
		steps []string
		want  []string // per tick
	}{
		{name: "off", interval: 0, steps: []string{"add", "add", "tick", "tick", "tick"}, want: []string{"", "", ""}},
		{name: "idle ledger: the LAC the last add could not carry is sent once", interval: 2,
			steps: []string{"add", "add", "add", "tick", "tick", "tick", "tick", "tick", "tick", "tick", "tick"},
			want:  []string{"", "", "", "2@a,b,c", "", "", "", ""}},
		{name: "adds carry the LAC: nothing is sent", interval: 1,
			steps: []string{"add", "add", "tick", "add", "add", "tick", "add", "add", "tick"},
			want:  []string{"", "", ""}},
		{name: "adds slower than the interval: each new LAC is sent", interval: 1,
			steps: []string{"add", "tick", "add", "tick", "tick"},
			want:  []string{"0@a,b,c", "1@a,b,c", ""}},
		{name: "nothing acknowledged: nothing to send", interval: 1,
			steps: []string{"push", "push", "tick", "tick"}, want: []string{"", ""}},
		{name: "no explicit LAC during an ensemble change", interval: 1,
			steps: []string{"add", "add", "tick", "fail c", "tick", "tick"}, want: []string{"", "", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md := testMetadata(t, 3, 2, 2, "a", "b", "c")
			w, err := NewWriter(WriterConfig{LedgerID: testLedger, Metadata: md, ExplicitLACTicks: tc.interval,
				Bookies: Candidates{Available: []BookieID{"a", "b", "c", "d"}}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, step := range tc.steps {
				switch {
				case step == "add" || step == "push":
					id, err := w.Append([]byte("p"))
					if err != nil {
						t.Fatal(err)
					}
					if step == "add" {
						for _, b := range md.WriteSetBookies(id) {
							ok(w, b, id)
						}
					}
				case strings.HasPrefix(step, "fail "):
					w.BookieFailed(BookieID(strings.TrimPrefix(step, "fail ")))
				case step == "tick":
					w.Ready()
					w.Tick()
					got = append(got, lacWrites(t, md, w.Ready().LACWrites))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("per tick %q, want %q", got, tc.want)
			}
		})
	}
}

// lacWrites renders a batch of explicit LACs as "LAC@bookie,...", checking
// that each carries the master key and a body that decodes to its LAC.
func lacWrites(t *testing.T, md Metadata, ws []LACWriteRequest) string {
	t.Helper()
	if len(ws) == 0 {
		return ""
	}
	var bookies []string
	for _, l := range ws {
		lac, err := bkproto.DecodeLAC(l.Body, md.Digest(), nil, testLedger)
		if err != nil || lac != l.LAC || l.LAC != ws[0].LAC || l.MasterKey != bkproto.MasterKey(md.Password) {
			t.Fatalf("explicit LAC %+v: body LAC %d (%v)", l, lac, err)
		}
		req := l.Request(1).WriteLacRequest
		if req.GetLac() != l.LAC || req.GetLedgerId() != testLedger {
			t.Fatalf("WRITE_LAC request %v for %+v", req, l)
		}
		bookies = append(bookies, string(l.Bookie))
	}
	return fmt.Sprintf("%d@%s", ws[0].LAC, strings.Join(bookies, ","))
}
