package bookie

import (
	"errors"
	"sync"
	"time"

	"keeper/ledgerstore/bookie/journal"
)

// journalQueueLen bounds the records waiting for a journal goroutine.
// A full queue blocks the connection readers that feed it, which is the
// backpressure: about a second of adds at the rates one disk sustains.
const journalQueueLen = 16 << 10

// maxDrain bounds how many queued records the journal goroutine appends
// before it checks whether the batch must close, so that a constant
// stream of small adds cannot hold a batch open past its wait.
const maxDrain = 4096

// errJournalClosed answers records queued while the bookie shuts down.
var errJournalClosed = errors.New("bookie: journal closed")

// journalOp is one item for a journal goroutine: a record to append (its
// done runs once the record is durable, or failed), or a force marker
// (force set, no record) whose done runs once everything queued before it
// is durable.
type journalOp struct {
	rec    journal.Record
	force  bool
	queued time.Time
	done   func(error) // nil: nothing waits for this record (or add does)
	// add, when add.b is set, answers an ADD_ENTRY like done would: kept
	// by value, so that an add costs no closure.
	add addDone
	// frame, if not nil, is the request frame rec aliases: returned to its
	// pool once the journal has copied rec (or refused it), before done.
	frame *frameBuf
}

// waits reports whether anything waits for op's outcome.
func (op *journalOp) waits() bool { return op.done != nil || op.add.b != nil }

// complete reports op's outcome to whoever waits for it.
func (op *journalOp) complete(err error) {
	switch {
	case op.done != nil:
		op.done(err)
	case op.add.b != nil:
		op.add.reply(err)
	}
}

// appended ends op's hold on its request frame: rec no longer refers to
// anything.
func (op *journalOp) appended() {
	op.rec = journal.Record{}
	op.frame.put()
	op.frame = nil
}

// journaler owns one journal directory's Journal and runs its group
// commit on one goroutine (docs/bookkeeper-protocol.md §7.3): it appends
// queued records, closes a batch when journal.ShouldFlush says so (by
// default as soon as nothing more is queued; with
// journalFlushWhenQueueEmpty=false after journalMaxGroupWaitMSec; or past
// the buffered-bytes threshold), syncs it, and only then completes the
// batch's callbacks, in order. Records queued while a sync runs make the
// next batch, so an idle journal syncs a record at once and syncs
// coalesce under load, with no timer on the way (natural group commit).
type journaler struct {
	idx     int
	dir     string
	j       *journal.Journal // owned by the goroutine after start
	in      chan journalOp
	noSync  bool          // journalSyncData=false
	syncGap time.Duration // journalPageCacheFlushInterval, when noSync
	m       *metrics
	onFail  func(error) // called once when the journal fails

	// mu guards closed: enqueue holds it shared while it sends, so that
	// once stop has set closed, nothing more arrives.
	mu     sync.RWMutex
	closed bool
	stopCh chan struct{}
	exited chan struct{}

	markMu sync.Mutex
	mark   journal.Position // durable mark, published after each sync

	// Goroutine state.
	waiting   []journalOp // appended (or markers) since the last commit
	oldest    time.Time   // when the oldest of waiting was queued
	needSync  bool        // waiting holds a force marker
	batchSize int64
	unsynced  bool // noSync: flushed data not yet synced
	lastSync  time.Time
}

func newJournaler(idx int, dir string, j *journal.Journal, cfg Config, m *metrics, onFail func(error)) *journaler {
	return &journaler{
		idx: idx, dir: dir, j: j,
		in:      make(chan journalOp, journalQueueLen),
		noSync:  cfg.JournalSyncDisabled,
		syncGap: cfg.JournalPageCacheFlushInterval,
		m:       m,
		onFail:  onFail,
		stopCh:  make(chan struct{}),
		exited:  make(chan struct{}),
		mark:    j.Mark(),
	}
}

// durableMark returns the journal's mark as of its last sync: every
// record before it is durable, and (since the bookie adds to ledger
// storage before it journals) in ledger storage.
func (jr *journaler) durableMark() journal.Position {
	jr.markMu.Lock()
	defer jr.markMu.Unlock()
	return jr.mark
}

// enqueue hands op to the goroutine. It blocks while the queue is full.
// After stop, op completes with errJournalClosed at once.
func (jr *journaler) enqueue(op journalOp) {
	op.queued = time.Now()
	jr.mu.RLock()
	defer jr.mu.RUnlock()
	if jr.closed {
		op.appended()
		op.complete(errJournalClosed)
		return
	}
	jr.in <- op
	jr.m.journalQueueSize.Inc()
}

// stop makes the goroutine commit what is queued and exit, and waits.
func (jr *journaler) stop() {
	jr.mu.Lock()
	already := jr.closed
	jr.closed = true
	jr.mu.Unlock()
	if !already {
		close(jr.stopCh)
	}
	<-jr.exited
}

// run is the group-commit loop.
func (jr *journaler) run() {
	defer close(jr.exited)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var syncTick <-chan time.Time
	if jr.noSync {
		t := time.NewTicker(jr.syncGap)
		defer t.Stop()
		syncTick = t.C
	}
	for {
		var wake <-chan time.Time
		if len(jr.waiting) > 0 {
			wake = timer.C
		}
		select {
		case op := <-jr.in:
			jr.accept(op)
		case <-wake:
		case <-syncTick:
			jr.periodicSync()
		case <-jr.stopCh:
			jr.drainAndCommit()
			return
		}
		jr.drain(maxDrain)
		if jr.due() {
			jr.commit()
		} else if len(jr.waiting) > 0 {
			timer.Reset(max(jr.j.FlushWait(time.Since(jr.oldest)), 10*time.Microsecond))
		}
	}
}

// drain appends up to n queued records without blocking.
func (jr *journaler) drain(n int) {
	for range n {
		select {
		case op := <-jr.in:
			jr.accept(op)
		default:
			return
		}
	}
}

// drainAndCommit, at stop, appends everything queued and commits it.
// enqueue refuses new records once closed is set, so the queue ends.
func (jr *journaler) drainAndCommit() {
	for {
		select {
		case op := <-jr.in:
			jr.accept(op)
			continue
		default:
		}
		break
	}
	jr.needSync = true
	jr.commit()
}

// accept appends op's record to the current batch (or notes a force
// marker). A record the journal refuses, or a failed journal, answers op
// at once.
func (jr *journaler) accept(op journalOp) {
	jr.m.journalQueueSize.Add(-1)
	now := time.Now()
	jr.m.journalQueueLatency.Record(now.Sub(op.queued).Microseconds(), true)
	if op.force {
		jr.needSync = true
	} else if _, err := jr.j.Append(op.rec); err != nil {
		op.appended()
		jr.failed(err)
		op.complete(err)
		return
	} else {
		n := len(op.rec.Body())
		op.appended() // Append copied the record into the journal's buffer
		jr.batchSize += int64(n)
		jr.m.journalWriteBytes.Add(float64(n))
	}
	if len(jr.waiting) == 0 {
		jr.oldest = op.queued
	}
	jr.waiting = append(jr.waiting, op)
}

// due reports whether the batch must close now.
func (jr *journaler) due() bool {
	if len(jr.waiting) == 0 {
		return false
	}
	if jr.needSync {
		return true
	}
	switch jr.j.FlushCause(time.Since(jr.oldest), len(jr.in) == 0) {
	case journal.FlushMaxWait:
		jr.m.flushMaxWait.Inc()
		return true
	case journal.FlushOutstanding:
		jr.m.flushMaxOutstanding.Inc()
		return true
	case journal.FlushQueueEmpty:
		jr.m.flushEmptyQueue.Inc()
		return true
	}
	return jr.onlyMarkers()
}

// onlyMarkers reports whether waiting holds nothing the journal must
// write (a marker after everything was committed).
func (jr *journaler) onlyMarkers() bool {
	for _, op := range jr.waiting {
		if !op.force {
			return false
		}
	}
	return true
}

// commit closes the batch: it syncs (or, with journalSyncData=false,
// only flushes, unless a force marker waits), publishes the new mark, and
// then completes the batch's callbacks in order.
func (jr *journaler) commit() {
	start := time.Now()
	var err error
	if jr.noSync && !jr.needSync {
		err = jr.j.Flush()
		jr.unsynced = true
		observe(jr.m.journalFlush, start, err == nil)
	} else {
		err = jr.sync()
	}
	if err != nil {
		jr.failed(err)
	}
	jr.m.journalBatchEntries.Record(int64(len(jr.waiting)), err == nil)
	jr.m.journalBatchBytes.Record(jr.batchSize, err == nil)
	for i, op := range jr.waiting {
		switch {
		case !op.waits():
		case op.force:
			observe(jr.m.journalForceLedger, op.queued, err == nil)
			op.complete(err)
		default:
			observe(jr.m.journalAddEntry, op.queued, err == nil)
			op.complete(err)
		}
		jr.waiting[i] = journalOp{}
	}
	jr.waiting = jr.waiting[:0]
	jr.needSync = false
	jr.batchSize = 0
}

// sync makes everything appended durable and publishes the mark.
func (jr *journaler) sync() error {
	start := time.Now()
	err := jr.j.Sync()
	observe(jr.m.journalSync, start, err == nil)
	if err != nil {
		return err
	}
	jr.unsynced = false
	jr.lastSync = time.Now()
	jr.markMu.Lock()
	jr.mark = jr.j.Mark()
	jr.markMu.Unlock()
	return nil
}

// periodicSync, with journalSyncData=false, syncs what earlier flushes
// wrote, so that checkpoints can move on.
func (jr *journaler) periodicSync() {
	if !jr.unsynced || time.Since(jr.lastSync) < jr.syncGap {
		return
	}
	if err := jr.sync(); err != nil {
		jr.failed(err)
	}
}

// failed reports a journal failure to the bookie. The journal is
// poisoned: every later call returns the same error.
func (jr *journaler) failed(err error) {
	if jr.j.Err() != nil {
		jr.onFail(err)
	}
}

// close closes the journal file. Call after stop.
func (jr *journaler) close() error {
	err := jr.j.Close()
	if errors.Is(err, journal.ErrClosed) {
		return nil
	}
	return err
}
