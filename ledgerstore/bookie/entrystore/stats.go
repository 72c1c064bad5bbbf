package entrystore

import (
	"sync/atomic"
	"time"

	"keeper/internal/metric"
)

// Stats are the store's running counts, which the bookie exports under
// the names of BookKeeper's DbLedgerStorage (docs/observability.md). Each
// is updated where its event happens, with an atomic add and no lock of
// its own, and read at scrape time. The store reads a clock only when its
// Config.Clock is set, to time the steps of a read and of a flush; the
// bookie times the calls it makes.
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

	// The steps of a read from an entry log, timed with Config.Clock (none
	// without one), in µs. LookupLocation times the index lookup of a
	// given entry and LastEntryLookup the lookup of a ledger's last one
	// (each scan also gathers the read-ahead's locations);
	// LocationsIndexMicros adds up both, EntryLogMicros the reads of the
	// entry's record from its log and its checks, ReadAheadMicros the
	// caching of the entries the same read covered.
	LookupLocation, LastEntryLookup                       metric.OpStats
	LocationsIndexMicros, EntryLogMicros, ReadAheadMicros atomic.Int64
	// The steps of a flush that moved entries, timed likewise:
	// FlushEntryLogs appends the entries to the entry logs and syncs them,
	// FlushIndex commits their locations and the changed ledger records
	// in one synced index batch. A failed step is a failure.
	FlushEntryLogs, FlushIndex metric.OpStats
}

// now reads the store's clock; the zero time without one.
func (s *Store) now() time.Time {
	if s.cfg.Clock == nil {
		return time.Time{}
	}
	return s.cfg.Clock()
}

// sinceUs returns the µs from start to now on the store's clock, or -1
// without a clock.
func (s *Store) sinceUs(start time.Time) int64 {
	if s.cfg.Clock == nil {
		return -1
	}
	return max(s.cfg.Clock().Sub(start).Microseconds(), 0)
}

// recordStep records a step's time in o, if the store has a clock.
func (s *Store) recordStep(o *metric.OpStats, start time.Time, ok bool) {
	if us := s.sinceUs(start); us >= 0 {
		o.Record(us, ok)
	}
}

// addStep adds a step's time to c, if the store has a clock.
func (s *Store) addStep(c *atomic.Int64, start time.Time) {
	if us := s.sinceUs(start); us >= 0 {
		c.Add(us)
	}
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
