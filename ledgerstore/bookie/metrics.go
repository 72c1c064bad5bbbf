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
)

// metrics are the bookie's Prometheus metrics. Names follow BookKeeper's
// Prometheus provider (scope_NAME, docs/bookkeeper-protocol.md §8.7) where BookKeeper has the
// metric: bookkeeper_server_* for requests, bookie_journal_* for the
// journal, bookie_* for the bookie's state, bookie_gc_* for garbage
// collection. Latencies are histograms in seconds, labelled
// success="true"/"false" for requests. (BookKeeper exports summaries in
// milliseconds; keeper uses histograms because a summary's quantile
// stream cost a third of the bookie's CPU at 25k adds/s. Quantiles come
// from histogram_quantile.)
type metrics struct {
	reg *prometheus.Registry

	addEntry      *prometheus.HistogramVec // bookkeeper_server_ADD_ENTRY_REQUEST
	readEntry     *prometheus.HistogramVec // bookkeeper_server_READ_ENTRY_REQUEST
	fenceWait     prometheus.Histogram     // bookkeeper_server_READ_ENTRY_FENCE_WAIT
	longPollWait  prometheus.Histogram     // bookkeeper_server_READ_ENTRY_LONG_POLL_WAIT
	writeLAC      *prometheus.HistogramVec // bookkeeper_server_WRITE_LAC_REQUEST
	readLAC       *prometheus.HistogramVec // bookkeeper_server_READ_LAC_REQUEST
	forceLedger   *prometheus.HistogramVec // bookkeeper_server_FORCE_LEDGER_REQUEST
	writeBytes    prometheus.Counter       // bookie_WRITE_BYTES
	readBytes     prometheus.Counter       // bookie_READ_BYTES
	throttled     prometheus.Counter       // bookie_throttled_write
	serverStatus  prometheus.Gauge         // bookie_SERVER_STATUS: 1 writable, 0 read-only
	writableDirs  prometheus.Gauge         // bookie_ledger_writable_dirs
	checkpoint    prometheus.Histogram     // bookie_flush
	activeLedgers prometheus.Gauge         // bookie_gc_ACTIVE_LEDGER_TOTAL

	journalAddEntry     prometheus.Histogram // bookie_journal_JOURNAL_ADD_ENTRY: queued to durable
	journalSync         prometheus.Histogram // bookie_journal_JOURNAL_SYNC
	journalFlush        prometheus.Histogram // bookie_journal_JOURNAL_FLUSH_LATENCY
	journalQueueLatency prometheus.Histogram // bookie_journal_JOURNAL_QUEUE_LATENCY
	journalQueueSize    prometheus.Gauge     // bookie_journal_JOURNAL_QUEUE_SIZE
	journalBatchEntries prometheus.Histogram // bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES
	journalBatchBytes   prometheus.Histogram // bookie_journal_JOURNAL_FORCE_WRITE_BATCH_BYTES

	gcDeletedLedgers    prometheus.Counter // bookie_gc_DELETED_LEDGER_COUNT
	reclaimedDeletion   prometheus.Counter // bookie_gc_RECLAIMED_DELETION_SPACE_BYTES
	reclaimedCompaction prometheus.Counter // bookie_gc_RECLAIMED_COMPACTION_SPACE_BYTES
	minorCompactions    prometheus.Counter // bookie_gc_MINOR_COMPACTION_TOTAL
	majorCompactions    prometheus.Counter // bookie_gc_MAJOR_COMPACTION_TOTAL
	activeEntryLogs     prometheus.Gauge   // bookie_gc_ACTIVE_ENTRY_LOG_TOTAL
}

// latencyBuckets span 20 µs to about 40 s, doubling.
var latencyBuckets = prometheus.ExponentialBuckets(20e-6, 2, 22)

// sizeBuckets span 1 to about a million (records or bytes per batch).
var sizeBuckets = prometheus.ExponentialBuckets(1, 4, 11)

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	sumVec := func(name, help string) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets},
			[]string{"success"})
		m.reg.MustRegister(v)
		return v
	}
	sum := func(name, help string) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets})
		m.reg.MustRegister(h)
		return h
	}
	sizes := func(name, help string) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: sizeBuckets})
		m.reg.MustRegister(h)
		return h
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
	m.addEntry = sumVec("bookkeeper_server_ADD_ENTRY_REQUEST", "Add requests, from receipt to response, in seconds.")
	m.readEntry = sumVec("bookkeeper_server_READ_ENTRY_REQUEST", "Read requests, from receipt to response, in seconds.")
	m.fenceWait = sum("bookkeeper_server_READ_ENTRY_FENCE_WAIT", "Wait for a fence record to be durable, in seconds.")
	m.longPollWait = sum("bookkeeper_server_READ_ENTRY_LONG_POLL_WAIT", "Time long-poll reads were parked, in seconds.")
	m.writeLAC = sumVec("bookkeeper_server_WRITE_LAC_REQUEST", "Explicit LAC writes, in seconds.")
	m.readLAC = sumVec("bookkeeper_server_READ_LAC_REQUEST", "Explicit LAC reads, in seconds.")
	m.forceLedger = sumVec("bookkeeper_server_FORCE_LEDGER_REQUEST", "Force-ledger requests, in seconds.")
	m.writeBytes = counter("bookie_WRITE_BYTES", "Bytes of entries added.")
	m.readBytes = counter("bookie_READ_BYTES", "Bytes of entries read.")
	m.throttled = counter("bookie_throttled_write", "Adds that waited for a checkpoint to free the write cache.")
	m.serverStatus = gauge("bookie_SERVER_STATUS", "1 while the bookie is writable, 0 while read-only.")
	m.writableDirs = gauge("bookie_ledger_writable_dirs", "Ledger directories below the disk usage threshold.")
	m.checkpoint = sum("bookie_flush", "Checkpoints: ledger storage flush and lastMark, in seconds.")
	m.activeLedgers = gauge("bookie_gc_ACTIVE_LEDGER_TOTAL", "Ledgers stored on this bookie.")
	m.journalAddEntry = sum("bookie_journal_JOURNAL_ADD_ENTRY", "Records from queueing to durable, in seconds.")
	m.journalSync = sum("bookie_journal_JOURNAL_SYNC", "Journal fsyncs, in seconds.")
	m.journalFlush = sum("bookie_journal_JOURNAL_FLUSH_LATENCY", "Journal flushes without sync, in seconds.")
	m.journalQueueLatency = sum("bookie_journal_JOURNAL_QUEUE_LATENCY", "Time records waited in the journal queue, in seconds.")
	m.journalQueueSize = gauge("bookie_journal_JOURNAL_QUEUE_SIZE", "Records waiting in the journal queues.")
	m.journalBatchEntries = sizes("bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES", "Records per group commit.")
	m.journalBatchBytes = sizes("bookie_journal_JOURNAL_FORCE_WRITE_BATCH_BYTES", "Record bytes per group commit.")
	m.gcDeletedLedgers = counter("bookie_gc_DELETED_LEDGER_COUNT", "Ledgers deleted by garbage collection.")
	m.reclaimedDeletion = counter("bookie_gc_RECLAIMED_DELETION_SPACE_BYTES", "Bytes freed by removing dead entry logs.")
	m.reclaimedCompaction = counter("bookie_gc_RECLAIMED_COMPACTION_SPACE_BYTES", "Bytes freed by compaction.")
	m.minorCompactions = counter("bookie_gc_MINOR_COMPACTION_TOTAL", "Entry logs removed by minor compaction.")
	m.majorCompactions = counter("bookie_gc_MAJOR_COMPACTION_TOTAL", "Entry logs removed by major compaction.")
	m.activeEntryLogs = gauge("bookie_gc_ACTIVE_ENTRY_LOG_TOTAL", "Entry logs on disk.")
	return m
}

// watchConnBytes exports what the connections hold against the budget
// (keeper's own metric; BookKeeper has none).
func (m *metrics) watchConnBytes(mem *memBudget) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bookie_CONNECTION_PENDING_BYTES",
		Help: "Bytes held for requests in progress and responses not yet written, all connections."},
		func() float64 { return float64(mem.used.Load()) }))
}

// observe records the time since start under the success label.
func observe(v *prometheus.HistogramVec, start time.Time, ok bool) {
	label := "true"
	if !ok {
		label = "false"
	}
	v.WithLabelValues(label).Observe(time.Since(start).Seconds())
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
