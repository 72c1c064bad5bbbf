package entrystore

import (
	"cmp"
	"slices"
)

// arenaSegmentBytes is the size of one write-cache arena segment: large
// enough that small entries cost few allocations, small enough that a
// small cache does not over-allocate. Larger entries get a segment each.
const arenaSegmentBytes = 1 << 20

// entryKey names an entry.
type entryKey struct{ ledgerID, entryID int64 }

func compareKeys(a, b entryKey) int {
	if c := cmp.Compare(a.ledgerID, b.ledgerID); c != 0 {
		return c
	}
	return cmp.Compare(a.entryID, b.entryID)
}

// cachedEntry is where a half keeps one entry's bytes.
type cachedEntry struct {
	key       entryKey
	seg       int // index in segs
	off, size int
}

// cacheHalf is one half of the write cache: an arena of segments and an
// index of the entries in it. The Store's mu guards it, except that Flush
// reads the half it flushes without mu (nothing writes to that half until
// Flush clears it).
type cacheHalf struct {
	segs    [][]byte
	entries []cachedEntry
	index   map[entryKey]int // into entries
	last    map[int64]int64  // ledger -> greatest entry id held
	bytes   int64            // entry bytes held, replaced ones included
	spare   [][]byte         // arena segments kept from before reset
}

func newCacheHalf() *cacheHalf {
	return &cacheHalf{index: make(map[entryKey]int), last: make(map[int64]int64)}
}

func (h *cacheHalf) empty() bool { return len(h.entries) == 0 }

// put copies entry in. Adding an entry the half already holds replaces it
// (the old bytes stay in the arena until reset, and count).
func (h *cacheHalf) put(k entryKey, entry []byte) {
	seg, off := h.alloc(len(entry))
	copy(h.segs[seg][off:], entry)
	ce := cachedEntry{key: k, seg: seg, off: off, size: len(entry)}
	if i, ok := h.index[k]; ok {
		h.entries[i] = ce
	} else {
		h.index[k] = len(h.entries)
		h.entries = append(h.entries, ce)
	}
	if last, ok := h.last[k.ledgerID]; !ok || k.entryID > last {
		h.last[k.ledgerID] = k.entryID
	}
	h.bytes += int64(len(entry))
}

// alloc returns room for n bytes: a segment index and an offset in it.
func (h *cacheHalf) alloc(n int) (int, int) {
	if len(h.segs) > 0 {
		cur := len(h.segs) - 1
		if used := len(h.segs[cur]); cap(h.segs[cur])-used >= n {
			h.segs[cur] = h.segs[cur][:used+n]
			return cur, used
		}
	}
	var seg []byte
	switch {
	case n > arenaSegmentBytes:
		seg = make([]byte, n)
	case len(h.spare) > 0:
		seg = h.spare[len(h.spare)-1][:n]
		h.spare = h.spare[:len(h.spare)-1]
	default:
		seg = make([]byte, n, arenaSegmentBytes)
	}
	h.segs = append(h.segs, seg)
	return len(h.segs) - 1, 0
}

// get returns the bytes of k, aliasing the arena, or nil.
func (h *cacheHalf) get(k entryKey) []byte {
	i, ok := h.index[k]
	if !ok {
		return nil
	}
	return h.bytesOf(h.entries[i])
}

func (h *cacheHalf) bytesOf(ce cachedEntry) []byte {
	return h.segs[ce.seg][ce.off : ce.off+ce.size : ce.off+ce.size]
}

// lastEntry returns the greatest entry id the half holds for ledger.
func (h *cacheHalf) lastEntry(ledgerID int64) (int64, bool) {
	id, ok := h.last[ledgerID]
	return id, ok
}

// sorted returns the entries in (ledger, entry) order.
func (h *cacheHalf) sorted() []cachedEntry {
	out := slices.Clone(h.entries)
	slices.SortFunc(out, func(a, b cachedEntry) int { return compareKeys(a.key, b.key) })
	return out
}

// reset empties the half, keeping standard-size segments for reuse.
func (h *cacheHalf) reset() {
	for _, seg := range h.segs {
		if cap(seg) == arenaSegmentBytes {
			h.spare = append(h.spare, seg[:0])
		}
	}
	clear(h.segs)
	h.segs = h.segs[:0]
	clear(h.entries)
	h.entries = h.entries[:0]
	clear(h.index)
	clear(h.last)
	h.bytes = 0
}

// dropLedger removes ledger's entries (rare: only DeleteLedger).
func (h *cacheHalf) dropLedger(ledgerID int64) {
	if _, ok := h.last[ledgerID]; !ok {
		return
	}
	kept := h.entries[:0]
	for _, ce := range h.entries {
		if ce.key.ledgerID == ledgerID {
			delete(h.index, ce.key)
			h.bytes -= int64(ce.size)
			continue
		}
		h.index[ce.key] = len(kept)
		kept = append(kept, ce)
	}
	clear(h.entries[len(kept):])
	h.entries = kept
	delete(h.last, ledgerID)
}
