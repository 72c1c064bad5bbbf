package entrystore

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestWriteCacheReusesSegments fills the write cache many times over,
// flushing when it is full, and checks that the halves take back the
// segments a flush released instead of making new ones: the segments
// made stay within both halves' worth, whatever the volume, and every
// entry reads back.
func TestWriteCacheReusesSegments(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cacheBytes int64
		entryBytes int
		entries    int
	}{
		{name: "small entries", cacheBytes: 2 << 20, entryBytes: 1024, entries: 8000},
		{name: "entries near a segment", cacheBytes: 2 << 20, entryBytes: 300 << 10, entries: 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv()
			cfg := e.config()
			cfg.WriteCacheBytes = tc.cacheBytes
			cfg.EntryLogMaxBytes = DefaultEntryLogMaxBytes
			s := e.open(t, cfg)
			for i := range tc.entries {
				entry := makeEntry(1, int64(i), int64(i)-1, tc.entryBytes)
				err := s.Add(1, int64(i), entry)
				if errors.Is(err, ErrCacheFull) {
					if err = s.Flush(); err == nil {
						err = s.Add(1, int64(i), entry)
					}
				}
				if err != nil {
					t.Fatalf("entry %d: %v", i, err)
				}
			}
			s.mu.Lock()
			made, bound := s.segs.made, s.segs.maxSegs
			s.mu.Unlock()
			if made > bound {
				t.Fatalf("%d segments made, bound %d", made, bound)
			}
			if total := int64(tc.entries * tc.entryBytes); made*arenaSegmentBytes >= int(total) {
				t.Fatalf("%d segments made for %d bytes: none reused", made, total)
			}
			for _, i := range []int{0, tc.entries / 2, tc.entries - 1} {
				got, err := s.Get(1, int64(i))
				if err != nil || !bytes.Equal(got, makeEntry(1, int64(i), int64(i)-1, tc.entryBytes)) {
					t.Fatalf("entry %d reads back %d bytes, %v", i, len(got), err)
				}
			}
		})
	}
}

// TestCacheHalfIndex puts entries into a half in the orders a bookie sees
// (in order, striped with gaps, behind the first id, far ahead, replaced,
// and ahead and then caught up with) and checks every look-up, the last
// ids, the sorted order and a dropped ledger against a plain map.
func TestCacheHalfIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	h := newCacheHalf(newSegmentPool(1 << 20))
	want := map[entryKey][]byte{}
	put := func(l, e int64) {
		b := makeEntry(l, e, e-1, 40+rng.IntN(100))
		h.put(entryKey{l, e}, b, entrySum(b))
		want[entryKey{l, e}] = b
	}
	for e := int64(0); e < 3000; e++ {
		put(1, e) // in order
		if e%3 != 1 {
			put(2, e+500) // Qw 2 of E 3: a gap every third id
		}
	}
	put(2, 100)              // behind the first id
	put(3, 10)               // a ledger's first id
	put(3, 10+5*maxDenseGap) // far ahead: the map
	for e := int64(11); e < 10+6*maxDenseGap; e += 7 {
		put(3, e) // the run grows past the far id
	}
	put(3, 10+5*maxDenseGap) // found in the map though the run now covers it
	for range 500 {          // replacements anywhere
		k := []entryKey{{1, rng.Int64N(3000)}, {2, 100}, {3, 10 + 5*maxDenseGap}}[rng.IntN(3)]
		put(k.ledgerID, k.entryID)
	}
	check := func() {
		t.Helper()
		if len(h.entries) != len(want) {
			t.Fatalf("%d entries held, want %d", len(h.entries), len(want))
		}
		last := map[int64]int64{}
		for k, b := range want {
			if got := h.get(k); !bytes.Equal(got, b) {
				t.Fatalf("get(%v) = %d bytes, want %d", k, len(got), len(b))
			}
			last[k.ledgerID] = max(last[k.ledgerID], k.entryID)
		}
		for l, id := range last {
			if got, ok := h.lastEntry(l); !ok || got != id {
				t.Fatalf("lastEntry(%d) = %d, %v; want %d", l, got, ok, id)
			}
		}
		sorted := h.sorted()
		if len(sorted) != len(want) {
			t.Fatalf("sorted holds %d entries, want %d", len(sorted), len(want))
		}
		for i, ce := range sorted {
			if i > 0 && compareKeys(sorted[i-1].key, ce.key) >= 0 {
				t.Fatalf("sorted: %v after %v", ce.key, sorted[i-1].key)
			}
			if !bytes.Equal(h.bytesOf(ce), want[ce.key]) {
				t.Fatalf("sorted: %v holds other bytes", ce.key)
			}
		}
		if h.get(entryKey{1, 3000}) != nil || h.get(entryKey{2, 501}) != nil || h.get(entryKey{9, 0}) != nil {
			t.Fatal("get found an entry never put")
		}
	}
	check()
	h.dropLedger(2)
	for k := range want {
		if k.ledgerID == 2 {
			delete(want, k)
		}
	}
	check()
	if _, ok := h.lastEntry(2); ok {
		t.Fatal("dropped ledger still has a last entry")
	}
	h.reset()
	want = map[entryKey][]byte{}
	for e := int64(5); e < 50; e++ {
		put(1, e)
	}
	check()
}
