package server

import (
	"sync/atomic"
	"time"

	"keeper/coordination/zxid"
	"keeper/internal/metric"
)

// storageMetrics are the ZooKeeper metrics of the server's storage and
// start-up, under ZooKeeper 3.8's names (docs/observability.md), in ms.
// Its methods do nothing on a nil receiver, so storage code runs the same
// without them (tests, keeper tool).
type storageMetrics struct {
	fsyncTime           *metric.Summary // one fsync of the transaction log
	snapshotTime        *metric.Summary // one snapshot, walk start to file in place
	dbInitTime          *metric.Summary // loading the data at start
	snapLoadTime        *metric.Summary // finding and reading the newest valid snapshot
	txnsLoadTime        *metric.Summary // replaying the log after it
	txnsLoaded          *metric.Summary // txns replayed
	batchSize           *metric.Summary // txns per group commit
	queueSize           *metric.Summary // txns waiting when the persister takes a batch
	queued              *metric.Counter // txns handed to the persister
	queueTime           *metric.Summary // per txn: handed over to taken into a batch
	flushTime           *metric.Summary // per batch: appends plus the fsync
	queueAndFlushTime   *metric.Summary // per txn: handed over to durable
	unrecoverableErrors *metric.Counter // failures that stopped writes for good
	connectionRejected  *metric.Counter // connections refused by maxClientCnxns or maxCnxns
	// lastSnapshot is the last snapshot written, or before the first one
	// the snapshot the state was loaded from (last_snapshot); nil when
	// there is none.
	lastSnapshot atomic.Pointer[snapshotMark]
}

// snapshotMark is a snapshot's zxid and when its file was written.
type snapshotMark struct {
	zxid zxid.ID
	at   time.Time
}

// snapshotSaved records the snapshot of zxid z written at at.
func (m *storageMetrics) snapshotSaved(z zxid.ID, at time.Time) {
	if m != nil {
		m.lastSnapshot.Store(&snapshotMark{zxid: z, at: at})
	}
}

// last reports the last snapshot, for admin.Config.LastSnapshot.
func (m *storageMetrics) last() (zxid.ID, time.Time, bool) {
	if m == nil {
		return 0, time.Time{}, false
	}
	mark := m.lastSnapshot.Load()
	if mark == nil {
		return 0, time.Time{}, false
	}
	return mark.zxid, mark.at, true
}

func newStorageMetrics(r *metric.Registry) *storageMetrics {
	return &storageMetrics{
		fsyncTime:           r.Summary("fsynctime", false),
		snapshotTime:        r.Summary("snapshottime", false),
		dbInitTime:          r.Summary("dbinittime", false),
		snapLoadTime:        r.Summary("startup_snap_load_time", false),
		txnsLoadTime:        r.Summary("startup_txns_load_time", false),
		txnsLoaded:          r.Summary("startup_txns_loaded", false),
		batchSize:           r.Summary("sync_processor_batch_size", false),
		queueSize:           r.Summary("sync_processor_queue_size", false),
		queued:              r.Counter("sync_processor_request_queued"),
		queueTime:           r.Summary("sync_processor_queue_time_ms", true),
		flushTime:           r.Summary("sync_processor_queue_flush_time_ms", true),
		queueAndFlushTime:   r.Summary("sync_processor_queue_and_flush_time_ms", true),
		unrecoverableErrors: r.Counter("unrecoverable_error_count"),
		connectionRejected:  r.Counter("connection_rejected"),
	}
}

// since returns the ms from start to now.
func since(start time.Time) int64 { return time.Since(start).Milliseconds() }

func (m *storageMetrics) fsynced(start time.Time) {
	if m != nil {
		m.fsyncTime.Add(since(start))
	}
}

func (m *storageMetrics) snapshotTaken(start time.Time) {
	if m != nil {
		m.snapshotTime.Add(since(start))
	}
}

func (m *storageMetrics) loaded(start time.Time) {
	if m != nil {
		m.dbInitTime.Add(since(start))
	}
}

func (m *storageMetrics) snapLoaded(start time.Time) {
	if m != nil {
		m.snapLoadTime.Add(since(start))
	}
}

func (m *storageMetrics) replayed(start time.Time, txns int) {
	if m != nil {
		m.txnsLoadTime.Add(since(start))
		m.txnsLoaded.Add(int64(txns))
	}
}

func (m *storageMetrics) failed() {
	if m != nil {
		m.unrecoverableErrors.Inc()
	}
}

func (m *storageMetrics) rejected() {
	if m != nil {
		m.connectionRejected.Inc()
	}
}
