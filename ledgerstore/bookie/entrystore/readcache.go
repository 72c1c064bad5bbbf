package entrystore

// readCache holds entries read ahead from entry logs, evicting the oldest
// insertions first once it holds more than maxBytes. Entries in it are
// private copies and never change. The Store's mu guards it.
type readCache struct {
	maxBytes int64
	bytes    int64
	gen      uint64
	entries  map[entryKey]readCached
	fifo     []readQueued // insertion order; stale items are skipped
	head     int          // fifo[head:] is live
}

type readCached struct {
	data []byte
	gen  uint64
}

type readQueued struct {
	key entryKey
	gen uint64
}

func newReadCache(maxBytes int64) *readCache {
	return &readCache{maxBytes: maxBytes, entries: make(map[entryKey]readCached)}
}

// get returns the cached bytes of k, which the caller must not modify.
func (c *readCache) get(k entryKey) []byte { return c.entries[k].data }

// put caches data, which the cache now owns.
func (c *readCache) put(k entryKey, data []byte) {
	if int64(len(data)) > c.maxBytes/4 {
		return // one entry must not flush the whole cache
	}
	c.remove(k)
	c.gen++
	c.entries[k] = readCached{data: data, gen: c.gen}
	c.fifo = append(c.fifo, readQueued{key: k, gen: c.gen})
	c.bytes += int64(len(data))
	for c.bytes > c.maxBytes && c.head < len(c.fifo) {
		q := c.fifo[c.head]
		c.head++
		if e, ok := c.entries[q.key]; ok && e.gen == q.gen {
			c.remove(q.key)
		}
	}
	if len(c.fifo)-c.head > 2*len(c.entries)+1024 {
		c.compactQueue()
	}
}

// compactQueue drops the stale items of the queue, so that it stays
// proportional to the entries cached however often keys are replaced.
func (c *readCache) compactQueue() {
	live := c.fifo[:0]
	for _, q := range c.fifo[c.head:] {
		if e, ok := c.entries[q.key]; ok && e.gen == q.gen {
			live = append(live, q)
		}
	}
	clear(c.fifo[len(live):])
	c.fifo, c.head = live, 0
}

func (c *readCache) remove(k entryKey) {
	if e, ok := c.entries[k]; ok {
		c.bytes -= int64(len(e.data))
		delete(c.entries, k)
	}
}

// dropLedger removes ledger's entries.
func (c *readCache) dropLedger(ledgerID int64) {
	for k := range c.entries {
		if k.ledgerID == ledgerID {
			c.remove(k)
		}
	}
}
