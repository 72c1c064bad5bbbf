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

// segmentPool holds the standard arena segments of the write cache that
// no half uses, for both halves to take from: a segment the flushed half
// gave back is filled again by the active one, whose pages are already
// mapped and warm, instead of a fresh allocation whose every page faults
// on first touch. It is LIFO, so the most recently used segments come
// back first. New segments are carved from one region mapped outside the
// Go heap (mapArena), or allocated from the heap where that is not
// available. The Store's mu guards it.
//
// Memory stays within the cache's bound: a segment is made only when the
// pool is empty, so no more segments exist than both halves ever held at
// once (each half at most halfBytes plus one partly filled segment); the
// region holds maxSegs of them and the pool keeps at most that many.
type segmentPool struct {
	free    [][]byte
	maxSegs int
	region  []byte       // mapped memory not handed out yet
	unmap   func() error // releases the region; nil if it is heap memory
	made    int          // segments made so far (tests check the bound)
}

func newSegmentPool(halfBytes int64) *segmentPool {
	p := &segmentPool{maxSegs: 2 * int(halfBytes/arenaSegmentBytes+1)}
	if region, unmap, ok := mapArena(p.maxSegs * arenaSegmentBytes); ok {
		p.region, p.unmap = region, unmap
	}
	return p
}

// get returns a standard segment of length n ≤ arenaSegmentBytes.
func (p *segmentPool) get(n int) []byte {
	if k := len(p.free); k > 0 {
		seg := p.free[k-1][:n]
		p.free[k-1] = nil
		p.free = p.free[:k-1]
		return seg
	}
	p.made++
	if len(p.region) >= arenaSegmentBytes {
		seg := p.region[:n:arenaSegmentBytes]
		p.region = p.region[arenaSegmentBytes:]
		return seg
	}
	return make([]byte, n, arenaSegmentBytes)
}

// put takes back a segment no entry refers to any more. Odd-sized ones
// (a large entry's own) are left to the garbage collector.
func (p *segmentPool) put(seg []byte) {
	if cap(seg) == arenaSegmentBytes && len(p.free) < p.maxSegs {
		p.free = append(p.free, seg[:0])
	}
}

// release unmaps the region. Call it once nothing can touch a segment
// any more (Close, with mu and opMu held).
func (p *segmentPool) release() error {
	p.free, p.region = nil, nil
	if p.unmap == nil {
		return nil
	}
	unmap := p.unmap
	p.unmap = nil
	return unmap()
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
	pool    *segmentPool     // shared with the other half
}

func newCacheHalf(pool *segmentPool) *cacheHalf {
	return &cacheHalf{index: make(map[entryKey]int), last: make(map[int64]int64), pool: pool}
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
	if n > arenaSegmentBytes {
		seg = make([]byte, n)
	} else {
		seg = h.pool.get(n)
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

// reset empties the half, giving its standard-size segments back to the
// pool for either half to reuse.
func (h *cacheHalf) reset() {
	for _, seg := range h.segs {
		h.pool.put(seg)
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
