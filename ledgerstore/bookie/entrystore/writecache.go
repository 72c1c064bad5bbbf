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
	sum       uint32 // entrySum of the bytes
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
	entries []cachedEntry // one per entry held, in the order first added
	ledgers map[int64]*halfLedger
	spare   []*halfLedger // emptied by reset, for reuse
	bytes   int64         // entry bytes held, replaced ones included
	pool    *segmentPool  // shared with the other half
}

// halfLedger indexes one ledger's entries in a half. A writer adds a
// ledger's entries in id order, and a bookie holds most ids of each run
// (all of them, or Qw of every E with round-robin striping), so the index
// is a slice by id from the first one held: a look-up is an offset, where
// a map over every entry of a half (tens of thousands) costs a cache miss
// or two per add. Ids behind first or more than maxDenseGap past the
// run's end go to a map.
type halfLedger struct {
	first int64         // the id of dense[0]
	dense []int         // by id - first: the index in entries, or -1
	far   map[int64]int // the other ids held: id -> index in entries
	last  int64         // the greatest id held
}

// maxDenseGap bounds the ids a put may skip at the end of a ledger's
// dense run (each costs 8 bytes): entries arrive nearly in order, and a
// larger jump (a recovery add far ahead, a test) goes to the map.
const maxDenseGap = 1024

func newCacheHalf(pool *segmentPool) *cacheHalf {
	return &cacheHalf{ledgers: make(map[int64]*halfLedger), pool: pool}
}

func (h *cacheHalf) empty() bool { return len(h.entries) == 0 }

// ledger returns ledger's index in the half, creating it (dense from
// first) if create is set.
func (h *cacheHalf) ledger(ledgerID, first int64, create bool) *halfLedger {
	l := h.ledgers[ledgerID]
	if l == nil && create {
		if k := len(h.spare); k > 0 {
			l = h.spare[k-1]
			h.spare[k-1] = nil
			h.spare = h.spare[:k-1]
		} else {
			l = &halfLedger{}
		}
		l.first, l.last = first, first
		h.ledgers[ledgerID] = l
	}
	return l
}

// slot returns where the index of entryID is kept, or nil if grow is not
// set and there is no room for it; with grow it makes room.
func (l *halfLedger) slot(entryID int64, grow bool) *int {
	if d := entryID - l.first; d >= 0 && d < int64(len(l.dense)) {
		return &l.dense[d]
	} else if grow && d >= 0 && d-int64(len(l.dense)) <= maxDenseGap {
		for int64(len(l.dense)) <= d {
			l.dense = append(l.dense, -1)
		}
		return &l.dense[d]
	}
	return nil
}

// find returns the index in entries of entryID, if the half holds it.
// An id that went to far can come into the dense run's range later (the
// run grew past it), so a free dense slot still asks far.
func (l *halfLedger) find(entryID int64) (int, bool) {
	if p := l.slot(entryID, false); p != nil && *p >= 0 {
		return *p, true
	}
	if len(l.far) == 0 {
		return 0, false
	}
	i, ok := l.far[entryID]
	return i, ok
}

// set records that entries[i] holds entryID.
func (l *halfLedger) set(entryID int64, i int) {
	if p := l.slot(entryID, true); p != nil {
		*p = i
	} else {
		if l.far == nil {
			l.far = make(map[int64]int)
		}
		l.far[entryID] = i
	}
	l.last = max(l.last, entryID)
}

// put copies entry, whose entrySum is sum, in. Adding an entry the half already holds replaces it
// (the old bytes stay in the arena until reset, and count).
func (h *cacheHalf) put(k entryKey, entry []byte, sum uint32) {
	seg, off := h.alloc(len(entry))
	copy(h.segs[seg][off:], entry)
	ce := cachedEntry{key: k, seg: seg, off: off, size: len(entry), sum: sum}
	l := h.ledger(k.ledgerID, k.entryID, true)
	if i, ok := l.find(k.entryID); ok {
		h.entries[i] = ce
	} else {
		l.set(k.entryID, len(h.entries))
		h.entries = append(h.entries, ce)
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
	l := h.ledgers[k.ledgerID]
	if l == nil {
		return nil
	}
	i, ok := l.find(k.entryID)
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
	if l := h.ledgers[ledgerID]; l != nil {
		return l.last, true
	}
	return 0, false
}

// sorted returns the entries in (ledger, entry) order: ledger by ledger,
// each one's dense run in id order, merged with its far ids.
func (h *cacheHalf) sorted() []cachedEntry {
	ids := make([]int64, 0, len(h.ledgers))
	for id := range h.ledgers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]cachedEntry, 0, len(h.entries))
	for _, id := range ids {
		l := h.ledgers[id]
		from := len(out)
		for _, i := range l.dense {
			if i >= 0 {
				out = append(out, h.entries[i])
			}
		}
		if len(l.far) > 0 {
			for _, i := range l.far {
				out = append(out, h.entries[i])
			}
			slices.SortFunc(out[from:], func(a, b cachedEntry) int { return cmp.Compare(a.key.entryID, b.key.entryID) })
		}
	}
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
	h.clearIndex()
	h.bytes = 0
}

// clearIndex forgets every ledger's index, keeping the indexes of at most
// maxSpareLedgers ledgers (their slices' room) for reuse.
func (h *cacheHalf) clearIndex() {
	for _, l := range h.ledgers {
		if len(h.spare) < maxSpareLedgers && cap(l.dense) <= maxSpareDense {
			l.dense = l.dense[:0]
			l.far = nil
			h.spare = append(h.spare, l)
		}
	}
	clear(h.ledgers)
}

// maxSpareLedgers and maxSpareDense bound what reset keeps for reuse: the
// indexes of as many ledgers as a bookie typically has open, each up to a
// half's worth of small entries.
const (
	maxSpareLedgers = 256
	maxSpareDense   = 64 << 10
)

// dropLedger removes ledger's entries (rare: only DeleteLedger).
func (h *cacheHalf) dropLedger(ledgerID int64) {
	if _, ok := h.ledgers[ledgerID]; !ok {
		return
	}
	kept := h.entries[:0]
	for _, ce := range h.entries {
		if ce.key.ledgerID == ledgerID {
			h.bytes -= int64(ce.size)
			continue
		}
		kept = append(kept, ce)
	}
	clear(h.entries[len(kept):])
	h.entries = kept
	// The kept entries moved: index them again.
	h.clearIndex()
	for i, ce := range h.entries {
		h.ledger(ce.key.ledgerID, ce.key.entryID, true).set(ce.key.entryID, i)
	}
}
