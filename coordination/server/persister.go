package server

import (
	"runtime"
	"sync"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/peer"
	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zab"
)

// persister is the one path by which a server's writes reach its log,
// standalone or in an ensemble (docs/storage-recovery.md, "One disk
// path"): the loop hands batches over (submit) and goes on serving; the
// persister goroutine appends what is queued, fsyncs it once (group
// commit) and hands the result back to the loop (results), which
// finishes it (Server.finishBatch). A snapshot asks it for a log roll
// (requestRoll), which it makes before the next batch it takes. After
// the first failed write or fsync it writes nothing more: the log is
// poisoned, and the loop stops writes for good.
//
// An ensemble member hands over one Zab batch at a time (the next only
// after the loop finished the last); a standalone server hands over its
// core's proposals as they come, and every batch queued while an fsync
// runs joins the next one, up to maxBatchTxns. A Member (the simulator's
// driver) uses the same roll flag and batch writing without the
// goroutine.
type persister struct {
	log *txnlog.Log
	// write is Server.persistBatch: the roll, then the batch.
	write   func(b diskBatch, roll bool) persisted
	metrics *storageMetrics
	stopped <-chan struct{} // the loop's: closed once it exited

	mu sync.Mutex
	// rd is the member's Zab batch waiting for the goroutine, nil when
	// none is; txns and queued are a standalone server's proposals waiting
	// and when each was handed over. mu guards them, roll, closed and
	// failed.
	rd      *zab.Ready
	rdAt    time.Time
	txns    []*txn.Txn
	queued  []time.Time
	roll    bool
	closed  bool
	failed  bool
	wake    chan struct{}
	results chan persisted // batches back from disk, in order, for the loop
	done    chan struct{}

	// enc and entries are appendTxns' buffers for a standalone batch's
	// encoded txns, reused batch after batch; only the goroutine that
	// writes batches (or a Member's driver) touches them.
	enc     jute.Encoder
	entries []zab.Entry
	ends    []int
}

// maxKeptEncodedBytes bounds the encoded batch buffer kept for the next
// batch.
const maxKeptEncodedBytes = 4 << 20

// maxBatchTxns bounds one group commit, so that one fsync never waits for an
// unbounded amount of data to be written first.
const maxBatchTxns = 4096

// persistResults bounds the batches back from disk that the loop has not
// finished yet: a standalone server's persister goes on to the next batch
// without waiting for the loop (a member's has at most one).
const persistResults = 64

// diskBatch is one batch for the log: an ensemble member's Zab batch
// (rd), or a standalone server's proposals (txns), with when they were
// handed over.
type diskBatch struct {
	rd     zab.Ready
	txns   []*txn.Txn
	queued []time.Time // per txn of txns
	at     time.Time   // when rd was handed over
}

// persisted is a batch back from disk.
type persisted struct {
	diskBatch
	ps  peer.Persisted
	err error
}

func (s *Server) newPersister(log *txnlog.Log) *persister {
	return &persister{
		log:     log,
		write:   s.persistBatch,
		metrics: s.stm,
		stopped: s.stopped,
		wake:    make(chan struct{}, 1),
		results: make(chan persisted, persistResults),
		done:    make(chan struct{}),
	}
}

// submitZab queues a member's Zab batch; the loop hands over the next
// only after finishing this one.
func (p *persister) submitZab(rd zab.Ready) {
	p.mu.Lock()
	p.rd, p.rdAt = &rd, time.Now()
	p.mu.Unlock()
	p.signal()
}

// submitTxns queues a standalone server's proposals; it never blocks.
// After a failed write they are dropped: the loop stops writes for good.
func (p *persister) submitTxns(ts []*txn.Txn) {
	now := time.Now()
	p.mu.Lock()
	if p.failed {
		p.mu.Unlock()
		return
	}
	p.txns = append(p.txns, ts...)
	for range ts {
		p.queued = append(p.queued, now)
	}
	p.mu.Unlock()
	if p.metrics != nil {
		p.metrics.queued.Add(int64(len(ts)))
	}
	p.signal()
}

// requestRoll asks for a new log file before the next batch (a snapshot
// started).
func (p *persister) requestRoll() {
	p.mu.Lock()
	p.roll = true
	p.mu.Unlock()
}

// takeRoll reports and clears a roll request, for a Member's driver,
// which writes each batch itself.
func (p *persister) takeRoll() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	roll := p.roll
	p.roll = false
	return roll
}

func (p *persister) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take returns the next batch, whether to roll first, whether there was
// one, and whether the persister was closed with nothing left to do. A
// roll request waits for a batch: it applies to the next txn appended.
func (p *persister) take() (b diskBatch, roll, ok, stop bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.rd != nil:
		b = diskBatch{rd: *p.rd, at: p.rdAt}
		p.rd = nil
	case len(p.txns) > 0:
		n := min(len(p.txns), maxBatchTxns)
		if p.metrics != nil {
			p.metrics.queueSize.Add(int64(len(p.txns)))
		}
		b = diskBatch{txns: p.txns[:n:n], queued: p.queued[:n:n]}
		p.txns, p.queued = p.txns[n:], p.queued[n:]
		if len(p.txns) == 0 {
			p.txns, p.queued = nil, nil
		}
	default:
		return b, false, false, p.closed
	}
	roll, p.roll = p.roll, false
	return b, roll, true, false
}

// run is the persister goroutine.
func (p *persister) run() {
	defer close(p.done)
	for {
		b, roll, ok, stop := p.take()
		if stop {
			return
		}
		if !ok {
			<-p.wake
			continue
		}
		// Let the goroutines the loop readied before it handed this batch
		// over run first, above all the quorum links' writers with a
		// leader's PROPOSALs (peer.SendEarly). The sync below keeps this
		// goroutine's processor until the runtime's monitor takes it back
		// (20 µs at the soonest, often the whole sync), so with one
		// processor (co-located members, cmd/keeper/processors.go) the
		// proposals left only after the leader's own sync, and the
		// followers' syncs started that much later (BENCHMARKS.md, "The
		// leader's proposals waited for its own sync").
		runtime.Gosched()
		taken := time.Now()
		r := p.write(b, roll)
		if r.err == nil {
			p.measure(b, taken)
		} else {
			p.mu.Lock()
			p.failed, p.txns, p.queued = true, nil, nil
			p.mu.Unlock()
		}
		select {
		case p.results <- r:
		case <-p.stopped: // the loop is gone; Close is waiting for us
		}
		if r.err != nil {
			return // the log is poisoned: nothing more is written
		}
	}
}

// close stops the persister after it has written what was queued.
func (p *persister) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.signal()
	<-p.done
}

// measure records a durable batch: its size, and each txn's time in the
// queue and until durable, as ZooKeeper's SyncRequestProcessor does.
func (p *persister) measure(b diskBatch, taken time.Time) {
	m := p.metrics
	if m == nil {
		return
	}
	n := len(b.queued) + len(b.rd.Entries)
	if n == 0 {
		return
	}
	m.batchSize.Add(int64(n))
	m.flushTime.Add(since(taken))
	for _, q := range b.queued {
		m.queueTime.Add(taken.Sub(q).Milliseconds())
		m.queueAndFlushTime.Add(since(q))
	}
	for range b.rd.Entries {
		m.queueTime.Add(taken.Sub(b.at).Milliseconds())
		m.queueAndFlushTime.Add(since(b.at))
	}
}

// persistBatch writes one batch: the log roll a snapshot asked for, then
// a member's Zab batch (peer.Persist) or a standalone server's txns,
// synced once. It runs on the persister goroutine, or where a Member's
// driver runs it.
func (s *Server) persistBatch(b diskBatch, roll bool) persisted {
	r := persisted{diskBatch: b}
	if roll {
		if r.err = s.disk.log.Roll(); r.err != nil {
			return r
		}
	}
	if s.quorum != nil {
		r.ps, r.err = s.quorum.peer.Persist(b.rd)
		return r
	}
	r.err = s.appendTxns(b.txns)
	return r
}

// BatchWriter is where a standalone server's batches go: its log
// (*MemberLog, whose epochs a standalone server never writes), or a
// simulator's wrapper of it.
type BatchWriter interface {
	// Append buffers txns in the log; Sync makes them durable. It must
	// keep neither es nor their Data once it returns: the caller encodes
	// the next batch into the same memory.
	Append(es []zab.Entry) error
	Sync() error
}

// appendTxns appends a standalone server's txns and syncs them once. After
// an error the log is poisoned and nothing is retried.
//
// The txns are encoded one after another into one buffer kept from batch
// to batch (the log copies each into its own), rather than each into a
// buffer of its own: at a standalone server's write rates those were a
// sixth of all it allocated.
func (s *Server) appendTxns(ts []*txn.Txn) error {
	p := s.disk
	p.enc.B, p.ends = p.enc.B[:0], p.ends[:0]
	for _, t := range ts {
		txn.AppendTo(&p.enc, t)
		p.ends = append(p.ends, len(p.enc.B))
	}
	es, start := p.entries[:0], 0
	for i, t := range ts {
		es = append(es, zab.Entry{Zxid: t.Header.Zxid, Data: p.enc.B[start:p.ends[i]:p.ends[i]]})
		start = p.ends[i]
	}
	err := s.soloLog.Append(es)
	clear(es)
	p.entries = es[:0]
	if cap(p.enc.B) > maxKeptEncodedBytes {
		p.enc.B = nil
	}
	if err != nil {
		return err
	}
	return s.soloLog.Sync()
}

// queuedTxns reports whether a standalone server's txns wait for the
// disk.
func (p *persister) queuedTxns() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.txns) > 0
}

// finishBatch completes a batch back from disk, on the loop: a member's
// through its peer (finishZabBatch), a standalone server's by applying
// its txns. A failed batch stops writes for good; the batches made
// durable before it were finished first, in order.
func (s *Server) finishBatch(r persisted) {
	if s.quorum != nil {
		s.finishZabBatch(r)
		return
	}
	if r.err != nil {
		s.stm.failed()
		s.core.FailWrites(r.err)
		return
	}
	s.applyDurable(r.txns)
}
