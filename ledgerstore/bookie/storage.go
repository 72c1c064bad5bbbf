package bookie

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"keeper/internal/metric"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/entrystore"
	"keeper/ledgerstore/bookie/journal"
)

// storeAdd runs an add against ledger storage (entrystore.Store.AddEntry:
// the master key bound or checked, the fence checked unless recovery,
// the entry inserted), and journals a master-key record on the ledger's
// first contact, ahead of whatever the caller journals next (the caller
// holds the ledger's lock, which keeps it there;
// docs/bookkeeper-protocol.md §7.2 step 3). When the write cache is full
// it asks for a checkpoint and waits for one, up to ThrottleWait, then
// refuses with ETOOMANYREQUESTS (BookKeeper's throttled write). It
// records bookie_add_entry, and for an add that found the cache full
// bookie_throttled_write_requests, bookie_throttled_write (the wait) and,
// when refused, bookie_rejected_write_requests. It returns the entry's
// checksum (entrystore.AddOutcome.Checksum) for its journal record.
func (b *Bookie) storeAdd(jr *journaler, ledgerID, entryID int64, body, key []byte, recovery bool) (sum uint32, err error) {
	start := time.Now()
	defer func() { observe(b.m.storageAdd, start, err == nil) }()
	var deadline *time.Timer
	var throttledAt time.Time
	var flushed <-chan struct{} // taken once the cache was found full, before the retry
	for {
		out, err := b.store.AddEntry(ledgerID, entryID, body, key, recovery)
		if out.KeyBound {
			jr.enqueue(journalOp{rec: journal.NewMasterKeyRecord(ledgerID, key)})
		}
		if !errors.Is(err, entrystore.ErrCacheFull) {
			if out.NeedsFlush {
				b.kickCheckpoint()
			}
			if deadline != nil {
				observe(b.m.throttled, throttledAt, err == nil)
			}
			return out.Checksum, err
		}
		b.kickCheckpoint()
		if flushed == nil {
			// A checkpoint that ends from now on closes this channel;
			// one that ended before the add failed made room the retry
			// finds.
			flushed = b.flushedChan()
			continue
		}
		if deadline == nil {
			throttledAt = time.Now()
			b.m.throttledCount.Inc()
			deadline = time.NewTimer(b.cfg.ThrottleWait)
			defer deadline.Stop()
		}
		select {
		case <-flushed:
			flushed = b.flushedChan()
		case <-deadline.C:
			b.m.rejectedWrites.Inc()
			observe(b.m.throttled, throttledAt, false)
			return 0, bkproto.Errorf(bkproto.StatusCode_ETOOMANYREQUESTS, "write cache full for %v", b.cfg.ThrottleWait)
		case <-b.stopping:
			observe(b.m.throttled, throttledAt, false)
			return 0, errJournalClosed
		}
	}
}

// storeGet reads an entry from ledger storage (entrystore.LastEntry: the
// ledger's last), recording bookie_read_entry: a success when the entry
// was returned, a failure for anything else, absence included, as
// BookKeeper counts its storage's NoEntryException.
func (b *Bookie) storeGet(ledgerID, entryID int64) ([]byte, error) {
	start := time.Now()
	body, err := b.store.Get(ledgerID, entryID)
	observe(b.m.storageRead, start, err == nil)
	return body, err
}

// flushStore flushes the write cache to the entry logs and the index,
// recording bookie_flush and bookie_flush_size for a flush that moved
// entries (BookKeeper records nothing when the write cache is empty) and
// bookie_flush as a failure for one that failed.
func (b *Bookie) flushStore() error {
	start := time.Now()
	n, err := b.store.FlushBytes()
	if n > 0 || err != nil {
		observe(b.m.flush, start, err == nil)
	}
	if n > 0 {
		b.m.flushSize.Record(n, err == nil)
	}
	return err
}

// storeCollector exports the entry store's gauges and counts under
// DbLedgerStorage's names (docs/observability.md), read at scrape time.
type storeCollector struct {
	store                                      *entrystore.Store
	writeCacheSize, writeCacheCount            *prometheus.Desc
	readCacheSize, readCacheCount              *prometheus.Desc
	writeCacheMax, readAheadMax, ledgers       *prometheus.Desc
	writeHits, writeMisses, readHits, readMiss *prometheus.Desc
}

// watchStore registers the entry store's figures: the gauges and counts
// of storeCollector, and the read-ahead batch distributions.
func (m *metrics) watchStore(store *entrystore.Store) {
	desc := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	m.reg.MustRegister(&storeCollector{
		store:           store,
		writeCacheSize:  desc("bookie_write_cache_size", "Entry bytes in the write cache, both halves."),
		writeCacheCount: desc("bookie_write_cache_count", "Entries in the write cache, both halves."),
		readCacheSize:   desc("bookie_read_cache_size", "Entry bytes in the read-ahead cache."),
		readCacheCount:  desc("bookie_read_cache_count", "Entries in the read-ahead cache."),
		writeCacheMax:   desc("bookie_write_cache_max_size", "The write cache's capacity in bytes, both halves."),
		readAheadMax:    desc("bookie_readahead_max_batch_size", "Most entries one read brings into the read cache."),
		ledgers:         desc("bookie_ledgers_count", "Ledgers in ledger storage."),
		writeHits:       desc("bookie_write_cache_hits", "Reads answered from the write cache."),
		writeMisses:     desc("bookie_write_cache_misses", "Reads the write cache could not answer."),
		readHits:        desc("bookie_read_cache_hits", "Reads answered from the read-ahead cache."),
		readMiss:        desc("bookie_read_cache_misses", "Reads the read-ahead cache could not answer."),
	})
	st := store.Stats()
	m.reg.MustRegister(NewOpStatsCollector("bookie_readahead_batch_count",
		"Entries each read from an entry log put into the read cache.", &st.ReadAheadEntries, 1))
	m.reg.MustRegister(NewOpStatsCollector("bookie_readahead_batch_size",
		"Entry bytes each read from an entry log put into the read cache.", &st.ReadAheadBytes, 1))
	for _, o := range []struct {
		name, help string
		stats      *metric.OpStats
	}{
		{"bookie_lookup_entry_location", "The index lookup of a given entry's location, in ms.", &st.LookupLocation},
		{"bookie_get_last_entry_in_ledger", "The index lookup of a ledger's last entry, in ms.", &st.LastEntryLookup},
		{"bookie_flush_entrylog", "A flush's appends to the entry logs and their sync, in ms.", &st.FlushEntryLogs},
		{"bookie_flush_locations_index", "A flush's synced index batch, in ms.", &st.FlushIndex},
	} {
		m.reg.MustRegister(NewOpStatsCollector(o.name, o.help, o.stats, 1e-3))
	}
	for _, c := range []struct {
		name, help string
		us         *atomic.Int64
	}{
		{"bookie_read_locations_index_time", "Total ms reads spent looking up locations in the index.",
			&st.LocationsIndexMicros},
		{"bookie_read_entrylog_time", "Total ms reads spent reading entry logs.", &st.EntryLogMicros},
		{"bookie_readahead_time", "Total ms reads spent filling the read-ahead cache.", &st.ReadAheadMicros},
	} {
		us := c.us
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help},
			func() float64 { return float64(us.Load() / 1000) }))
	}
}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.writeCacheSize, c.writeCacheCount, c.readCacheSize, c.readCacheCount,
		c.writeCacheMax, c.readAheadMax, c.ledgers, c.writeHits, c.writeMisses, c.readHits, c.readMiss} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	u := c.store.CacheUsage()
	st := c.store.Stats()
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(c.writeCacheSize, u.WriteCacheBytes)
	gauge(c.writeCacheCount, u.WriteCacheEntries)
	gauge(c.readCacheSize, u.ReadCacheBytes)
	gauge(c.readCacheCount, u.ReadCacheEntries)
	gauge(c.writeCacheMax, c.store.WriteCacheMaxBytes())
	gauge(c.readAheadMax, int64(c.store.ReadAheadMaxEntries()))
	gauge(c.ledgers, int64(c.store.LedgerCount()))
	counter(c.writeHits, st.WriteCacheHits.Load())
	counter(c.writeMisses, st.WriteCacheMisses.Load())
	counter(c.readHits, st.ReadCacheHits.Load())
	counter(c.readMiss, st.ReadCacheMisses.Load())
}
