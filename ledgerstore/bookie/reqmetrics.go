package bookie

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"keeper/internal/metric"
)

// requests are the request figures of BookKeeper's RequestStats and
// BookieStats that keeper measures beyond each operation's _REQUEST
// summary (docs/observability.md, "BookKeeper"). The add path moves
// atomics only: no lock, no allocation, and a clock read only where the
// request already reads one or waits anyway.
type requests struct {
	// In progress: admitted by a connection's reader and not yet
	// written back (conn.admit to conn.releaseLocked). Writes are adds,
	// explicit LAC writes and force-ledger requests, the calls
	// MaxPendingAddsPerConn counts; reads are the others.
	addsInProgress, readsInProgress atomic.Int64 // bookkeeper_server_{ADD,READ}_ENTRY_IN_PROGRESS
	// Blocked: readers waiting in admit because their connection has
	// MaxPendingAddsPerConn writes (MaxPendingReadsPerConn reads) in
	// progress; the reader reads nothing meanwhile, as BookKeeper's
	// channel stops reading past maxAddsInProgressLimit.
	addsBlocked, readsBlocked atomic.Int64
	addBlockedWait            *metric.OpStats // bookkeeper_server_ADD_ENTRY_BLOCKED_WAIT
	readBlockedWait           *metric.OpStats // bookkeeper_server_READ_ENTRY_BLOCKED_WAIT

	addRejected     *metric.Counter // bookkeeper_server_ADD_ENTRY_REJECTED: adds answered ETOOMANYREQUESTS
	channelWrite    *metric.OpStats // bookkeeper_server_CHANNEL_WRITE: a batch of responses written to the socket
	fenceRequest    *metric.OpStats // bookkeeper_server_READ_ENTRY_FENCE_REQUEST
	longPollRequest *metric.OpStats // bookkeeper_server_READ_ENTRY_LONG_POLL_REQUEST
	longPollPreWait *metric.OpStats // bookkeeper_server_READ_ENTRY_LONG_POLL_PRE_WAIT: receipt to parked
	longPollRead    *metric.OpStats // bookkeeper_server_READ_ENTRY_LONG_POLL_READ: the read once woken
	bookieInfo      *metric.OpStats // bookkeeper_server_GET_BOOKIE_INFO_REQUEST
	forceLedgerOps  *metric.Counter // bookie_BOOKIE_FORCE_LEDGER
	// lastEntryNoEntry counts long polls with ENTRY_PIGGYBACK whose LAC
	// moved but whose next entry this bookie does not hold (striping):
	// answered EOK without it (bookkeeper_server_READ_LAST_ENTRY_NOENTRY_ERROR).
	lastEntryNoEntry *metric.Counter
}

// registerRequests registers the figures above; latency makes a
// summary of latencies.
func (m *metrics) registerRequests(latency func(name, help string) *metric.OpStats) {
	gauge := func(name, help string, v *atomic.Int64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(v.Load()) }))
	}
	r := &m.requests
	gauge("bookkeeper_server_ADD_ENTRY_IN_PROGRESS", "Adds, LAC writes and forces read and not yet answered.", &r.addsInProgress)
	gauge("bookkeeper_server_READ_ENTRY_IN_PROGRESS", "Other requests read and not yet answered.", &r.readsInProgress)
	gauge("bookkeeper_server_ADD_ENTRY_BLOCKED", "Connections waiting for an add slot (maxPendingAddRequestsPerThread).",
		&r.addsBlocked)
	gauge("bookkeeper_server_READ_ENTRY_BLOCKED", "Connections waiting for a read slot (maxPendingReadRequestsPerThread).",
		&r.readsBlocked)
	r.addBlockedWait = latency("bookkeeper_server_ADD_ENTRY_BLOCKED_WAIT", "Waits for an add slot, in ms.")
	r.readBlockedWait = latency("bookkeeper_server_READ_ENTRY_BLOCKED_WAIT", "Waits for a read slot, in ms.")
	r.addRejected = m.counter("bookkeeper_server_ADD_ENTRY_REJECTED", "Adds answered ETOOMANYREQUESTS.")
	r.channelWrite = latency("bookkeeper_server_CHANNEL_WRITE", "Writes of a batch of responses to a socket, in ms.")
	r.fenceRequest = latency("bookkeeper_server_READ_ENTRY_FENCE_REQUEST", "Fencing reads, from receipt to response, in ms.")
	r.longPollRequest = latency("bookkeeper_server_READ_ENTRY_LONG_POLL_REQUEST",
		"Long-poll reads, from receipt to response, in ms.")
	r.longPollPreWait = latency("bookkeeper_server_READ_ENTRY_LONG_POLL_PRE_WAIT",
		"Long-poll reads, from receipt to parked, in ms.")
	r.longPollRead = latency("bookkeeper_server_READ_ENTRY_LONG_POLL_READ", "Long-poll reads' read once woken, in ms.")
	r.bookieInfo = latency("bookkeeper_server_GET_BOOKIE_INFO_REQUEST", "Bookie-info requests, from receipt to response, in ms.")
	r.forceLedgerOps = m.counter("bookie_BOOKIE_FORCE_LEDGER", "Force-ledger requests.")
	r.lastEntryNoEntry = m.counter("bookkeeper_server_READ_LAST_ENTRY_NOENTRY_ERROR",
		"Piggybacked long-poll reads of an entry this bookie does not hold.")
}

// track counts a call admitted (delta +1) or ended (-n).
func (r *requests) track(write bool, delta int64) {
	if write {
		r.addsInProgress.Add(delta)
	} else {
		r.readsInProgress.Add(delta)
	}
}

// blocked counts a reader that begins to wait for a slot of its call's
// kind, and returns when it began.
func (r *requests) blocked(write bool) time.Time {
	if write {
		r.addsBlocked.Add(1)
	} else {
		r.readsBlocked.Add(1)
	}
	return time.Now()
}

// unblocked ends the wait blocked began, got reporting whether the slot
// came (false: the connection closed meanwhile).
func (r *requests) unblocked(write bool, since time.Time, got bool) {
	if write {
		r.addsBlocked.Add(-1)
		observe(r.addBlockedWait, since, got)
	} else {
		r.readsBlocked.Add(-1)
		observe(r.readBlockedWait, since, got)
	}
}

// dirFigures exports BookieStats' journal gauges: the journal
// directories (JOURNAL_DIRS) and how many records one journal's queue
// holds before its feeders block (JOURNAL_QUEUE_MAX_SIZE, journalQueueLen).
//
// It also exports the ledger directories' count (bookie_ledger_num_dirs,
// beside bookie_ledger_writable_dirs).
func (m *metrics) dirFigures(dirs, ledgerDirs int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bookie_ledger_num_dirs",
		Help: "Ledger directories."}, func() float64 { return float64(ledgerDirs) }))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bookie_JOURNAL_DIRS",
		Help: "Journal directories."}, func() float64 { return float64(dirs) }))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bookie_JOURNAL_QUEUE_MAX_SIZE",
		Help: "Records a journal queue holds before adds wait."}, func() float64 { return journalQueueLen }))
}
