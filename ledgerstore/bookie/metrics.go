package bookie

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"keeper/internal/metric"
)

// metrics are the bookie's Prometheus metrics, under BookKeeper's names
// and types as its Prometheus provider exports them (scope_NAME,
// docs/bookkeeper-protocol.md §8.7, docs/observability.md):
// bookkeeper_server_* for requests, bookie_journal_* for the journal,
// bookie_* for the bookie's state, bookie_gc_* for garbage collection.
// BookKeeper's OpStatsLoggers are summaries labelled success="true" and
// "false", with quantiles 0.5 to 1.0 of latencies in milliseconds (or of
// sizes); keeper records them into metric.OpStats, whose buckets cost a few
// atomic adds per event, and works the quantiles out at scrape time. (A
// client_golang summary's quantile stream cost a third of the bookie's CPU
// at 25k adds/s.)
type metrics struct {
	reg *prometheus.Registry

	addEntry      *metric.OpStats // bookkeeper_server_ADD_ENTRY_REQUEST
	readEntry     *metric.OpStats // bookkeeper_server_READ_ENTRY_REQUEST
	fenceWait     *metric.OpStats // bookkeeper_server_READ_ENTRY_FENCE_WAIT
	longPollWait  *metric.OpStats // bookkeeper_server_READ_ENTRY_LONG_POLL_WAIT
	writeLAC      *metric.OpStats // bookkeeper_server_WRITE_LAC_REQUEST
	readLAC       *metric.OpStats // bookkeeper_server_READ_LAC_REQUEST
	forceLedger   *metric.OpStats // bookkeeper_server_FORCE_LEDGER_REQUEST
	addBytes      *metric.OpStats // bookie_BOOKIE_ADD_ENTRY_BYTES
	readBytesOp   *metric.OpStats // bookie_BOOKIE_READ_ENTRY_BYTES
	writeBytes    prometheus.Counter
	readBytes     prometheus.Counter
	serverStatus  prometheus.Gauge
	writableDirs  prometheus.Gauge
	activeLedgers prometheus.Gauge

	// Ledger storage, under DbLedgerStorage's names (storage.go).
	storageAdd     *metric.OpStats // bookie_add_entry: an add into the entry store, throttling included
	storageRead    *metric.OpStats // bookie_read_entry: a read from the entry store
	flush          *metric.OpStats // bookie_flush: a flush of the write cache to entry logs and index
	flushSize      *metric.OpStats // bookie_flush_size: entry bytes per flush
	throttled      *metric.OpStats // bookie_throttled_write: an add's wait for room in the write cache
	throttledCount *metric.Counter // bookie_throttled_write_requests
	rejectedWrites *metric.Counter // bookie_rejected_write_requests

	journalAddEntry     *metric.OpStats // bookie_journal_JOURNAL_ADD_ENTRY: queued to durable
	journalSync         *metric.OpStats // bookie_journal_JOURNAL_SYNC
	journalFlush        *metric.OpStats // bookie_journal_JOURNAL_FLUSH_LATENCY
	journalQueueLatency *metric.OpStats // bookie_journal_JOURNAL_QUEUE_LATENCY
	journalQueueSize    *metric.Counter // bookie_journal_JOURNAL_QUEUE_SIZE: a counter that goes down, as in BookKeeper
	journalForceLedger  *metric.OpStats // bookie_journal_JOURNAL_FORCE_LEDGER: a force marker, queued to durable
	flushMaxWait        *metric.Counter // bookie_journal_JOURNAL_NUM_FLUSH_MAX_WAIT
	flushMaxOutstanding *metric.Counter // bookie_journal_JOURNAL_NUM_FLUSH_MAX_OUTSTANDING_BYTES
	flushEmptyQueue     *metric.Counter // bookie_journal_JOURNAL_NUM_FLUSH_EMPTY_QUEUE
	journalBatchEntries *metric.OpStats // bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES
	journalBatchBytes   *metric.OpStats // bookie_journal_JOURNAL_FORCE_WRITE_BATCH_BYTES
	journalWriteBytes   prometheus.Counter

	gcDeletedLedgers    prometheus.Counter
	reclaimedDeletion   prometheus.Counter
	reclaimedCompaction prometheus.Counter
	minorCompactions    prometheus.Counter
	majorCompactions    prometheus.Counter
	activeEntryLogs     prometheus.Gauge
	gcLedgerRuntime     *metric.OpStats // bookie_gc_GC_LEDGER_RUNTIME: a garbage collection of ledgers
	compactRuntime      *metric.OpStats // bookie_gc_COMPACT_RUNTIME: a compaction run
	gcThreadRuntime     *metric.OpStats // bookie_gc_THREAD_RUNTIME: one pass of the gc goroutine
	entryLogSpace       prometheus.Gauge
	activeEntryLogSpace prometheus.Gauge
	usageBuckets        [usageBucketCount]prometheus.Gauge // bookie_gc_entry_log_usage_buckets_le_10 ... _le_100
	compactRatio        prometheus.Gauge                   // bookie_gc_ENTRY_LOG_COMPACT_RATIO

	requests // reqmetrics.go
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	latency := func(name, help string) *metric.OpStats {
		o := new(metric.OpStats)
		m.reg.MustRegister(NewOpStatsCollector(name, help, o, 1e-3)) // recorded in µs, exported in ms
		return o
	}
	sizes := func(name, help string) *metric.OpStats {
		o := new(metric.OpStats)
		m.reg.MustRegister(NewOpStatsCollector(name, help, o, 1))
		return o
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		m.reg.MustRegister(c)
		return c
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		m.reg.MustRegister(g)
		return g
	}
	m.addEntry = latency("bookkeeper_server_ADD_ENTRY_REQUEST", "Add requests, from receipt to response, in ms.")
	m.readEntry = latency("bookkeeper_server_READ_ENTRY_REQUEST", "Read requests, from receipt to response, in ms.")
	m.fenceWait = latency("bookkeeper_server_READ_ENTRY_FENCE_WAIT", "Wait for a fence record to be durable, in ms.")
	m.longPollWait = latency("bookkeeper_server_READ_ENTRY_LONG_POLL_WAIT", "Time long-poll reads were parked, in ms.")
	m.writeLAC = latency("bookkeeper_server_WRITE_LAC_REQUEST", "Explicit LAC writes, in ms.")
	m.readLAC = latency("bookkeeper_server_READ_LAC_REQUEST", "Explicit LAC reads, in ms.")
	m.forceLedger = latency("bookkeeper_server_FORCE_LEDGER_REQUEST", "Force-ledger requests, in ms.")
	m.addBytes = sizes("bookie_BOOKIE_ADD_ENTRY_BYTES", "Sizes of the entries added, in bytes.")
	m.readBytesOp = sizes("bookie_BOOKIE_READ_ENTRY_BYTES", "Sizes of the entries read, in bytes.")
	m.writeBytes = counter("bookie_WRITE_BYTES", "Bytes of entries added.")
	m.readBytes = counter("bookie_READ_BYTES", "Bytes of entries read.")
	m.serverStatus = gauge("bookie_SERVER_STATUS", "1 while the bookie is writable, 0 while read-only.")
	m.writableDirs = gauge("bookie_ledger_writable_dirs", "Ledger directories below the disk usage threshold.")
	m.activeLedgers = gauge("bookie_gc_ACTIVE_LEDGER_TOTAL", "Ledgers stored on this bookie.")
	m.journalAddEntry = latency("bookie_journal_JOURNAL_ADD_ENTRY", "Records from queueing to durable, in ms.")
	m.journalSync = latency("bookie_journal_JOURNAL_SYNC", "Journal fsyncs, in ms.")
	m.journalFlush = latency("bookie_journal_JOURNAL_FLUSH_LATENCY", "Journal flushes without sync, in ms.")
	m.journalQueueLatency = latency("bookie_journal_JOURNAL_QUEUE_LATENCY", "Time records waited in the journal queue, in ms.")
	m.journalQueueSize = m.counter("bookie_journal_JOURNAL_QUEUE_SIZE", "Records waiting in the journal queues.")
	m.journalForceLedger = latency("bookie_journal_JOURNAL_FORCE_LEDGER",
		"Force-ledger markers, from queueing to everything before them durable, in ms.")
	m.flushMaxWait = m.counter("bookie_journal_JOURNAL_NUM_FLUSH_MAX_WAIT",
		"Journal batches closed because their oldest record waited journalMaxGroupWaitMSec.")
	m.flushMaxOutstanding = m.counter("bookie_journal_JOURNAL_NUM_FLUSH_MAX_OUTSTANDING_BYTES",
		"Journal batches closed because they passed journalBufferedWritesThreshold or journalBufferedEntriesThreshold.")
	m.flushEmptyQueue = m.counter("bookie_journal_JOURNAL_NUM_FLUSH_EMPTY_QUEUE",
		"Journal batches closed because the journal queue was empty.")
	m.journalBatchEntries = sizes("bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES", "Records per group commit.")
	m.journalBatchBytes = sizes("bookie_journal_JOURNAL_FORCE_WRITE_BATCH_BYTES", "Record bytes per group commit.")
	m.journalWriteBytes = counter("bookie_journal_JOURNAL_WRITE_BYTES", "Record bytes appended to the journal.")
	m.gcLedgerRuntime = latency("bookie_gc_GC_LEDGER_RUNTIME", "Garbage collections of ledgers and entry logs, in ms.")
	m.compactRuntime = latency("bookie_gc_COMPACT_RUNTIME", "Compaction runs, minor or major, in ms.")
	m.gcThreadRuntime = latency("bookie_gc_THREAD_RUNTIME",
		"Passes of the garbage collection goroutine: a collection, a compaction or an index compaction, in ms.")
	m.entryLogSpace = gauge("bookie_gc_ENTRY_LOG_SPACE_BYTES", "Record bytes in the entry logs, at the last collection or compaction.")
	m.activeEntryLogSpace = gauge("bookie_gc_ACTIVE_ENTRY_LOG_SPACE_BYTES",
		"Of those, bytes of ledgers still stored, at the last collection or compaction.")
	for i := range m.usageBuckets {
		m.usageBuckets[i] = gauge(fmt.Sprintf("bookie_gc_entry_log_usage_buckets_le_%d", (i+1)*100/usageBucketCount),
			fmt.Sprintf("Sealed entry logs %d%% to under %d%% live (100%% in the last bucket), at the last compaction.",
				i*100/usageBucketCount, (i+1)*100/usageBucketCount))
	}
	m.compactRatio = gauge("bookie_gc_ENTRY_LOG_COMPACT_RATIO",
		"Of the sealed entry logs at the last compaction, the share it compacted.")
	m.gcDeletedLedgers = counter("bookie_gc_DELETED_LEDGER_TOTAL", "Ledgers deleted by garbage collection.")
	m.reclaimedDeletion = counter("bookie_gc_RECLAIMED_DELETION_SPACE_BYTES", "Bytes freed by removing dead entry logs.")
	m.reclaimedCompaction = counter("bookie_gc_RECLAIMED_COMPACTION_SPACE_BYTES", "Bytes freed by compaction.")
	m.minorCompactions = counter("bookie_gc_MINOR_COMPACTION_TOTAL", "Entry logs removed by minor compaction.")
	m.majorCompactions = counter("bookie_gc_MAJOR_COMPACTION_TOTAL", "Entry logs removed by major compaction.")
	m.activeEntryLogs = gauge("bookie_gc_ACTIVE_ENTRY_LOG_TOTAL", "Entry logs on disk.")
	m.storageAdd = latency("bookie_add_entry", "Adds into ledger storage, waits for the write cache included, in ms.")
	m.storageRead = latency("bookie_read_entry", "Reads from ledger storage, in ms.")
	m.flush = latency("bookie_flush", "Flushes of the write cache to entry logs and the index, in ms.")
	m.flushSize = sizes("bookie_flush_size", "Entry bytes per write cache flush.")
	m.throttled = latency("bookie_throttled_write", "Adds' waits for room in a full write cache, in ms.")
	m.throttledCount = m.counter("bookie_throttled_write_requests", "Adds that found the write cache full.")
	m.rejectedWrites = m.counter("bookie_rejected_write_requests", "Adds refused because the write cache stayed full.")
	m.registerRequests(latency)
	return m
}

// counter exports a metric.Counter, which an atomic add moves, as a
// Prometheus counter.
func (m *metrics) counter(name, help string) *metric.Counter {
	c := new(metric.Counter)
	m.reg.MustRegister(counterCollector{prometheus.NewDesc(name, help, nil, nil), c})
	return c
}

// watchConnBytes exports what the connections hold against the budget
// (keeper's own metric; BookKeeper has none).
func (m *metrics) watchConnBytes(mem *memBudget) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bookie_CONNECTION_PENDING_BYTES",
		Help: "Bytes held for requests in progress and responses not yet written, all connections."},
		func() float64 { return float64(mem.used.Load()) }))
}

// observe records the time since start, in µs, as a success or a failure.
func observe(o *metric.OpStats, start time.Time, ok bool) {
	o.Record(time.Since(start).Microseconds(), ok)
}

// serveMetrics serves /metrics on addr until srv is closed.
func serveMetrics(addr string, m *metrics, logger *slog.Logger) (net.Listener, *http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("bookie: metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("metrics server stopped", "err", err)
		}
	}()
	return ln, srv, nil
}
