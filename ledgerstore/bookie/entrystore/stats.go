package entrystore

import (
	"sync/atomic"

	"keeper/internal/metric"
)

// Stats are the store's running counts, which the bookie exports under
// the names of BookKeeper's DbLedgerStorage (docs/observability.md). Each
// is updated where its event happens, with an atomic add and no lock of
// its own, and read at scrape time. The store reads no clock: the bookie
// times the calls it makes.
type Stats struct {
	// WriteCacheHits and WriteCacheMisses count the Gets answered from
	// the write cache and those that had to look further (a Get of the
	// last entry counts once, as a hit when the write cache holds it).
	WriteCacheHits, WriteCacheMisses atomic.Int64
	// ReadCacheHits and ReadCacheMisses split the write cache misses of
	// Gets of a given entry: answered from the read-ahead cache, or read
	// through the index from an entry log.
	ReadCacheHits, ReadCacheMisses atomic.Int64
	// ReadAheadEntries and ReadAheadBytes record, for every read from an
	// entry log while read-ahead is on, how many following entries (and
	// their bytes) it put into the read cache.
	ReadAheadEntries, ReadAheadBytes metric.OpStats
}

// Stats returns the store's live counts.
func (s *Store) Stats() *Stats { return &s.stats }

// CacheUsage is what the caches hold at one moment.
type CacheUsage struct {
	// WriteCacheBytes and WriteCacheEntries cover both halves of the
	// write cache: the one taking adds and the one being flushed.
	// Replaced copies of an entry count until the next flush.
	WriteCacheBytes, WriteCacheEntries int64
	// ReadCacheBytes and ReadCacheEntries are the read-ahead cache's.
	ReadCacheBytes, ReadCacheEntries int64
}

// CacheUsage returns what the write and read caches hold now.
func (s *Store) CacheUsage() CacheUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return CacheUsage{
		WriteCacheBytes:   s.active.bytes + s.standby.bytes,
		WriteCacheEntries: int64(len(s.active.entries) + len(s.standby.entries)),
		ReadCacheBytes:    s.rcache.bytes,
		ReadCacheEntries:  int64(len(s.rcache.entries)),
	}
}

// LedgerCount returns how many ledgers the store holds.
func (s *Store) LedgerCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ledgers)
}

// WriteCacheMaxBytes is the whole write cache's capacity, both halves.
func (s *Store) WriteCacheMaxBytes() int64 { return s.cfg.WriteCacheBytes }

// ReadAheadMaxEntries is the most entries one read puts into the read
// cache: 0 when read-ahead is off.
func (s *Store) ReadAheadMaxEntries() int {
	if !s.readAheadOn() {
		return 0
	}
	return readAheadEntries
}

// readAheadOn reports whether reads from entry logs fill the read cache.
func (s *Store) readAheadOn() bool { return s.cfg.ReadAheadBytes > 0 && s.cfg.ReadCacheBytes > 0 }
