package autorecovery

import (
	"slices"
	"testing"
	"time"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
	"keeper/ledgerstore/metadata"
)

// TestSwapLosesTheRace runs a worker on a ledger whose metadata changes
// between the copy and the compare-and-set, both ways it can: a writer's
// ensemble change of the last segment (the swap is tried again on the new
// version and both changes survive), and another worker replacing the
// same bookie first (the copy is moot and nothing is overwritten).
func TestSwapLosesTheRace(t *testing.T) {
	for _, tc := range []struct {
		name string
		// race changes the ledger's metadata as the other party would.
		race func(md ledger.Metadata, spare []ledger.BookieID) ledger.Metadata
		// check looks at the final metadata; target is the first
		// segment's bookie at the lost position.
		check func(t *testing.T, raced ledger.Metadata, final ledger.Metadata)
	}{
		{"a writer's ensemble change", func(md ledger.Metadata, spare []ledger.BookieID) ledger.Metadata {
			next := md.Clone()
			last := &next.Segments[len(next.Segments)-1]
			for _, b := range spare {
				if !slices.Contains(last.Bookies, b) {
					last.Bookies[2] = b
					break
				}
			}
			return next
		}, func(t *testing.T, raced, final ledger.Metadata) {
			if !slices.Equal(final.LastSegment().Bookies, raced.LastSegment().Bookies) {
				t.Fatalf("the writer's change was lost: last segment %v, the writer's %v",
					final.LastSegment().Bookies, raced.LastSegment().Bookies)
			}
		}},
		{"another worker first", func(md ledger.Metadata, spare []ledger.BookieID) ledger.Metadata {
			next := md.Clone()
			next.Segments[0].Bookies[0] = spare[len(spare)-1]
			return next
		}, func(t *testing.T, raced, final ledger.Metadata) {
			if final.Segments[0].Bookies[0] != raced.Segments[0].Bookies[0] {
				t.Fatalf("the other worker's swap was overwritten: %v, theirs %v",
					final.Segments[0].Bookies, raced.Segments[0].Bookies)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := ledgertest.Start(t, 5)
			ctx := testContext(t)
			// A ledger with two segments, the first on the bookie about to
			// be lost, left open by a writer that went away.
			wc := newLedgerClient(t, cl, 11)
			w := writeLedger(t, ctx, wc, 20, false)
			first := w.Metadata().Segments[0].Bookies
			lost := first[0]
			cl.Stop(cl.Index(string(lost)))
			for e := int64(20); e < 30; e++ {
				if _, err := w.Append(ctx, payload(w.ID(), e)); err != nil {
					t.Fatal(err)
				}
			}
			wc.Close()
			st, _ := openStore(t, cl.ZKAddr())
			md, _, err := st.Read(ctx, w.ID())
			if err != nil || len(md.Segments) != 2 {
				t.Fatalf("setup: %+v, %v; want two segments", md.Segments, err)
			}
			var spare []ledger.BookieID
			for _, id := range cl.IDs() {
				if !slices.Contains(first, ledger.BookieID(id)) {
					spare = append(spare, ledger.BookieID(id))
				}
			}
			mgr, err := NewManager(ctx, st, "w")
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Store: st, ID: "w", Logger: testLogger(), PollInterval: 10 * time.Millisecond}.withDefaults()
			wk := newWorker(cfg, mgr)
			defer wk.conns.close()
			var raced ledger.Metadata
			wk.beforeSwap = func(id int64) {
				if raced.Segments != nil {
					return // once
				}
				cur, v, err := st.Read(ctx, id)
				if err != nil {
					t.Error(err)
					return
				}
				raced = tc.race(cur, spare)
				if _, err := st.Write(ctx, id, raced, v); err != nil {
					t.Error(err)
				}
			}
			done, waitOpen, err := wk.replicate(ctx, w.ID())
			if err != nil || !done || waitOpen {
				t.Fatalf("replicate = %v, %v, %v", done, waitOpen, err)
			}
			final, _, err := st.Read(ctx, w.ID())
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(final.Segments[0].Bookies, lost) {
				t.Fatalf("the lost bookie is still in the first segment: %v", final.Segments[0].Bookies)
			}
			if err := metadata.Validate(final); err != nil {
				t.Fatal(err)
			}
			tc.check(t, raced, final)
			if s := wk.snapshot(); s.SwapConflicts != 1 {
				t.Fatalf("swap conflicts %d, want 1", s.SwapConflicts)
			}
		})
	}
}
