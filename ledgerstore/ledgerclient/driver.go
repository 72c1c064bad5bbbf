package ledgerclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// The inputs a state machine of package ledger may take. Each machine
// implements the ones it needs; the driver feeds an input only to a
// machine that takes it.
type (
	stateMachine interface{ Ready() ledger.Ready }
	addHandler   interface {
		HandleAdd(ledger.AddRequest, bkproto.StatusCode)
	}
	readHandler interface {
		HandleRead(ledger.ReadRequest, ledger.ReadReply)
	}
	metadataReceiver interface{ HandleMetadata(ledger.Metadata) }
	metadataWriter   interface {
		metadataReceiver
		HandleMetadataWritten(version int64)
	}
	ticker           interface{ Tick() }
	bookieWatcher    interface{ BookieFailed(ledger.BookieID) }
	candidatesSetter interface{ SetBookies(ledger.Candidates) }
)

// driver carries out one state machine (package ledger, "Driving a
// machine"): a loop on one goroutine feeds it inputs from its inbox, its
// ticker and an optional metadata watch, and after each input carries out
// the Ready batch. Requests to bookies and metadata operations run on
// goroutines of their own, which post their answers back to the inbox, so
// the loop never blocks on I/O. The machine, and every field marked "loop
// only", is touched only by the loop.
type driver struct {
	c        *Client
	ledgerID int64
	m        stateMachine
	// deliver hands a batch's Completions, Entries and Done to the handle,
	// on the loop, and reports whether the loop should end.
	deliver func(rd *ledger.Ready) (finished bool)
	// watch, if set, carries the ledger's metadata as it changes.
	watch <-chan metadata.LedgerUpdate

	inbox   chan func()
	life    context.Context // ends with the loop; every request of the loop uses it
	cancel  context.CancelFunc
	parent  context.Context
	unhook  func() bool   // removes the hook that ends life with the client
	stopped chan struct{} // closed when the loop ends

	postMu sync.RWMutex // orders posts before the loop's final drain
	ended  bool         // postMu guards ended

	// Answers of requests sent with bookierpc.Client.Send come back
	// through replies rather than the inbox: they are handed over by a
	// connection's reader, which must never block, so they are appended
	// here and the loop is woken (repWake). They are bounded by the
	// requests the loop has sent (the machines bound those: a writer's
	// MaxPendingAdds).
	repMu    sync.Mutex
	replies  []func()      // repMu guards replies, repSpare, repEnded
	repSpare []func()      // the loop's previous batch, for reuse
	repEnded bool          // the loop has ended: replies are dropped
	repWake  chan struct{} // cap 1

	stored  ledger.Metadata  // loop only: latest stored metadata seen, the base of writes
	storedV metadata.Version // loop only
	err     error            // loop only: set by abort; ends the loop
	over    bool             // loop only: the loop has ended; leftover inputs are being drained
}

// newDriver registers a driver for machine m of ledger id, whose stored
// metadata is stored. The loop's requests end with parent or the client.
func (c *Client) newDriver(parent context.Context, id int64, m stateMachine, stored ledger.Metadata,
	v metadata.Version) (*driver, error) {
	d := &driver{c: c, ledgerID: id, m: m, parent: parent, inbox: make(chan func(), inboxSize),
		repWake: make(chan struct{}, 1), stopped: make(chan struct{}), stored: stored, storedV: v,
		deliver: func(rd *ledger.Ready) bool { return rd.Done != nil }}
	if err := c.register(d); err != nil {
		return nil, err
	}
	d.life, d.cancel = context.WithCancel(parent)
	d.unhook = context.AfterFunc(c.ctx, d.cancel)
	return d, nil
}

// run is the loop. It returns nil once the machine is done (or deliver
// says so), the error that aborted it, ErrClientClosed, or the parent
// context's error.
func (d *driver) run() error {
	defer d.end()
	tk, ticks := d.m.(ticker)
	var tick <-chan time.Time
	if ticks {
		t := time.NewTicker(d.c.cfg.Tick)
		defer t.Stop()
		tick = t.C
	}
	for {
		// Checked before acting on any input: inputs caused by Close (the
		// connections it ends) must not start ensemble changes.
		if d.c.ctx.Err() != nil {
			return ErrClientClosed
		}
		if d.flush() {
			return nil
		}
		if d.err != nil {
			return d.err
		}
		select {
		case <-d.life.Done():
			if d.c.ctx.Err() != nil {
				return ErrClientClosed
			}
			return d.parent.Err()
		case <-tick:
			tk.Tick()
		case f := <-d.inbox:
			f()
		case <-d.repWake:
			d.runReplies(false)
		case u, ok := <-d.watch:
			d.observe(u, ok)
		}
	}
}

// end stops the loop: later posts fail, inputs already queued run (with
// over set, so a handle can answer them without its machine), and the
// loop's requests are cancelled.
func (d *driver) end() {
	close(d.stopped)
	d.postMu.Lock()
	d.ended = true
	d.postMu.Unlock()
	d.over = true
	for {
		select {
		case f := <-d.inbox:
			f()
			continue
		default:
		}
		break
	}
	d.runReplies(true)
	d.cancel()
	d.unhook()
	d.c.unregister(d)
}

// post queues f to run on the loop. It reports false, not running f, once
// the loop has ended.
func (d *driver) post(f func()) bool {
	d.postMu.RLock()
	defer d.postMu.RUnlock()
	if d.ended {
		return false
	}
	select {
	case d.inbox <- f:
		return true
	case <-d.stopped:
		return false
	}
}

// reply queues f, the answer of a request sent with Send, to run on the
// loop. It never blocks; once the loop has ended, f is dropped (as post
// drops it).
func (d *driver) reply(f func()) {
	d.repMu.Lock()
	if d.repEnded {
		d.repMu.Unlock()
		return
	}
	d.replies = append(d.replies, f)
	d.repMu.Unlock()
	select {
	case d.repWake <- struct{}{}:
	default:
	}
}

// runReplies runs the queued replies, on the loop; last (at the end of
// the loop) also closes the queue.
func (d *driver) runReplies(last bool) {
	d.repMu.Lock()
	batch := d.replies
	d.replies, d.repSpare = d.repSpare[:0], nil
	d.repEnded = d.repEnded || last
	d.repMu.Unlock()
	for i, f := range batch {
		f()
		batch[i] = nil
	}
	d.repMu.Lock()
	if d.repSpare == nil && cap(batch) <= maxSpareReplies {
		d.repSpare = batch[:0]
	}
	d.repMu.Unlock()
}

// maxSpareReplies bounds the reply slice a loop keeps for reuse.
const maxSpareReplies = 4096

// abort ends the loop with err after the current step.
func (d *driver) abort(err error) {
	if d.err == nil {
		d.err = err
	}
}

// flush carries out the machine's Ready batches in the order package
// ledger prescribes. It reports whether the loop should end.
func (d *driver) flush() (finished bool) {
	for {
		rd := d.m.Ready()
		if rd.Empty() {
			return false
		}
		if rd.MetadataWrite != nil {
			d.writeMetadata(rd.MetadataWrite.Metadata)
		}
		for _, a := range rd.Adds {
			d.sendAdd(a)
		}
		for _, l := range rd.LACWrites {
			d.sendLACWrite(l)
		}
		for _, r := range rd.Reads {
			d.sendRead(r)
		}
		if rd.RefreshMetadata {
			d.refreshMetadata()
		}
		d.c.countStats(rd.Stats)
		if d.deliver(&rd) || rd.Done != nil {
			return true
		}
	}
}

// sendAdd sends one add; its answer (NoResponse after AddTimeout or a
// broken connection) comes back to the loop. On a live connection it is
// sent from the loop, its answer handed back by the connection's reader
// (or its deadline timer) through reply: no goroutine, context or timer
// per add. Otherwise a goroutine dials first and waits for the answer.
func (d *driver) sendAdd(req ledger.AddRequest) {
	h := d.m.(addHandler)
	if cl, cs := d.c.pool.live(req.Bookie); cl != nil {
		// One clock read serves the deadline and the connection's figure.
		sent := time.Now()
		cs.sent(bkproto.OperationType_ADD_ENTRY)
		cl.Send(req.Request(0), sent.Add(d.c.cfg.AddTimeout), func(r bookierpc.Result) {
			status := ledger.NoResponse
			if r.Err == nil {
				status = bkproto.ResponseStatus(r.Resp)
			}
			cs.answered(bkproto.OperationType_ADD_ENTRY, sent, status == bkproto.StatusCode_EOK, timedOut(r.Err))
			d.reply(func() { h.HandleAdd(req, status) })
		})
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(d.life, d.c.cfg.AddTimeout)
		defer cancel()
		status := ledger.NoResponse
		if resp, err := d.c.pool.call(ctx, req.Bookie, req.Request(0)); err == nil {
			status = bkproto.ResponseStatus(resp)
		}
		d.post(func() { h.HandleAdd(req, status) })
	}()
}

// sendLACWrite sends one explicit LAC and lets it go: its answer changes
// nothing (a bookie that missed it learns the LAC from the next add or
// the next explicit LAC). At most one per bookie and interval is sent,
// each bounded by AddTimeout.
func (d *driver) sendLACWrite(req ledger.LACWriteRequest) {
	go func() {
		ctx, cancel := context.WithTimeout(d.life, d.c.cfg.AddTimeout)
		defer cancel()
		resp, err := d.c.pool.call(ctx, req.Bookie, req.Request(0))
		if err == nil {
			err = bkproto.ErrorOf(bkproto.ResponseStatus(resp))
		}
		if err != nil && d.life.Err() == nil {
			d.c.log.Debug("explicit LAC not stored", "ledger", req.LedgerID, "bookie", req.Bookie, "lac", req.LAC, "err", err)
		}
	}()
}

// sendRead sends one read; a long poll may take LongPollTimeout longer
// than other reads before it counts as unanswered. Its answer (NoResponse
// after the timeout or on a broken connection) comes back to the loop.
func (d *driver) sendRead(req ledger.ReadRequest) {
	h := d.m.(readHandler)
	timeout := d.c.cfg.ReadTimeout
	if req.LongPoll {
		timeout += time.Duration(req.TimeoutMillis) * time.Millisecond
	}
	if req.Speculative {
		d.c.count(speculativeReads)
	}
	if !req.LongPoll && req.BatchMaxCount == 0 && !d.c.cfg.UseV2WireProtocol {
		// A plain v3 read on a live connection goes out from the loop as
		// an add does (sendAdd): no goroutine, context or timer per read,
		// which is most of a recovery's or a catch-up reader's client CPU.
		if cl, cs := d.c.pool.live(req.Bookie); cl != nil {
			r := req.Request(0)
			op := r.GetHeader().GetOperation()
			sent := time.Now()
			cs.sent(op)
			cl.Send(r, sent.Add(timeout), func(res bookierpc.Result) {
				cs.answered(op, sent, respOK(res.Resp, res.Err), timedOut(res.Err))
				reply := ledger.ReadReply{Status: ledger.NoResponse}
				if res.Err == nil {
					reply = ledger.ReadReplyOf(res.Resp)
				}
				d.reply(func() { h.HandleRead(req, reply) })
			})
			return
		}
	}
	go func() {
		ctx, cancel := context.WithTimeout(d.life, timeout)
		defer cancel()
		start := time.Now()
		var reply ledger.ReadReply
		switch {
		case req.BatchMaxCount > 0:
			reply = d.readBatch(ctx, req)
		case d.c.cfg.UseV2WireProtocol:
			reply = d.readV2(ctx, req)
		default:
			reply = d.read(ctx, req.Bookie, req.Request(0))
		}
		if req.LongPoll {
			d.c.observe(readLACAndEntry, start, reply.Status == bkproto.StatusCode_EOK)
		}
		d.post(func() { h.HandleRead(req, reply) })
	}()
}

// readBatch sends one v2 BATCH_READ_ENTRY (the machines ask for them only
// over v2) and returns its reply, the batch as its body (NoResponse if
// none came: a bookie before 4.17 closes the connection on the opcode).
func (d *driver) readBatch(ctx context.Context, req ledger.ReadRequest) ledger.ReadReply {
	cl, err := d.c.pool.conn(ctx, req.Bookie)
	if err != nil {
		return ledger.ReadReply{Status: ledger.NoResponse}
	}
	cs := d.c.pool.stats(req.Bookie)
	cs.sent(bkproto.OperationType_READ_ENTRY)
	start := time.Now()
	resp, err := cl.BatchRead(ctx, req.Request(0), req.BatchMaxCount, req.BatchMaxSize)
	cs.answered(bkproto.OperationType_READ_ENTRY, start, respOK(resp, err), timedOut(err))
	if err != nil {
		return ledger.ReadReply{Status: ledger.NoResponse}
	}
	return ledger.ReadReplyOf(resp)
}

// read sends one read request and returns its reply (NoResponse if none
// came).
func (d *driver) read(ctx context.Context, b ledger.BookieID, r *bkproto.Request) ledger.ReadReply {
	resp, err := d.c.pool.call(ctx, b, r)
	if err != nil {
		return ledger.ReadReply{Status: ledger.NoResponse}
	}
	return ledger.ReadReplyOf(resp)
}

// readV2 carries out a read over v2 as BookKeeper's client does
// (docs/bookkeeper-protocol.md §6.5): v2 has no READ_LAC, so a LAC read
// reads the last entry, whose header carries the piggybacked LAC; and it
// has no long poll, so a long poll reads the last entry once per Tick
// until its header LAC passes PreviousLAC, the answer is not EOK, or
// TimeoutMillis pass, and answers with the last of those reads.
func (d *driver) readV2(ctx context.Context, req ledger.ReadRequest) ledger.ReadReply {
	if req.Kind == ledger.ReadLAC || req.LongPoll {
		req = ledger.ReadRequest{Bookie: req.Bookie, Kind: ledger.ReadEntry, LedgerID: req.LedgerID,
			EntryID: bkproto.LastAddConfirmed, LongPoll: req.LongPoll, PreviousLAC: req.PreviousLAC,
			TimeoutMillis: req.TimeoutMillis}
	}
	if !req.LongPoll {
		return d.read(ctx, req.Bookie, req.Request(0))
	}
	plain := req
	plain.LongPoll = false
	deadline := time.Now().Add(time.Duration(req.TimeoutMillis) * time.Millisecond)
	for {
		reply := d.read(ctx, req.Bookie, plain.Request(0))
		if reply.Status != bkproto.StatusCode_EOK || time.Now().After(deadline) {
			return reply
		}
		if h, err := bkproto.ParseEntryHeader(reply.Body); err == nil && h.LAC > req.PreviousLAC {
			return reply
		}
		t := time.NewTimer(d.c.cfg.Tick)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return reply
		}
	}
}

// writeMetadata starts the compare-and-set a machine asked for. A write
// that fails for any reason, its outcome known or not, is answered with
// the metadata read back (the machine recognises its own write).
func (d *driver) writeMetadata(m ledger.Metadata) {
	h := d.m.(metadataWriter)
	next := toStore(d.stored, m)
	expected := metadata.Version(m.Version)
	if expected == d.storedV {
		// The machines follow these rules by construction; a proposal that
		// breaks them is a bug, and storing it could lose data.
		if err := metadata.CheckUpdate(d.stored, next); err != nil {
			d.abort(fmt.Errorf("ledgerclient: ledger %d: %w", d.ledgerID, err))
			return
		}
	}
	newEnsemble := len(next.Segments) > len(d.stored.Segments) // an ensemble change
	go func() {
		ctx, cancel := context.WithTimeout(d.life, d.c.cfg.MetadataTimeout)
		v, err := d.c.store.Write(ctx, d.ledgerID, next, expected)
		cancel()
		if err == nil {
			if m := d.c.cfg.Metrics; m != nil && newEnsemble {
				m.EnsembleChanges.Inc()
			}
			d.post(func() {
				d.stored, d.storedV = next, v
				h.HandleMetadataWritten(int64(v))
			})
			return
		}
		if d.life.Err() == nil {
			d.c.log.Debug("ledger metadata write failed; reading it back", "ledger", d.ledgerID, "err", err)
		}
		d.readBack(h)
	}()
}

// refreshMetadata answers Ready.RefreshMetadata.
func (d *driver) refreshMetadata() {
	if h, ok := d.m.(metadataReceiver); ok {
		go d.readBack(h)
	}
}

// readBack reads the stored metadata, retrying until it succeeds or the
// loop ends, and feeds it to h. It runs off the loop.
func (d *driver) readBack(h metadataReceiver) {
	backoff := 10 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(d.life, d.c.cfg.MetadataTimeout)
		smd, v, err := d.c.store.Read(ctx, d.ledgerID)
		cancel()
		switch {
		case err == nil:
			d.post(func() { d.feedMetadata(h, smd, v) })
			return
		case errors.Is(err, metadata.ErrNoLedger):
			d.post(func() { d.abort(fmt.Errorf("ledgerclient: ledger %d: %w", d.ledgerID, ErrNoSuchLedger)) })
			return
		}
		d.c.log.Debug("ledger metadata read failed; retrying", "ledger", d.ledgerID, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-d.life.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, time.Second)
	}
}

// feedMetadata passes stored metadata to the machine (on the loop).
func (d *driver) feedMetadata(h metadataReceiver, smd ledger.Metadata, v metadata.Version) {
	md, err := fromStore(smd, v)
	if err != nil {
		d.abort(fmt.Errorf("ledgerclient: ledger %d: %w", d.ledgerID, err))
		return
	}
	d.stored, d.storedV = smd, v
	h.HandleMetadata(md)
}

// observe takes one update of the metadata watch.
func (d *driver) observe(u metadata.LedgerUpdate, ok bool) {
	h, takes := d.m.(metadataReceiver)
	switch {
	case !ok:
		d.watch = nil // the watch ended (the client or its connection is closing)
	case u.Deleted:
		d.abort(fmt.Errorf("ledgerclient: ledger %d: %w", d.ledgerID, ErrNoSuchLedger))
	case u.Err != nil:
		d.c.log.Warn("undecodable ledger metadata", "ledger", d.ledgerID, "err", u.Err)
	case takes:
		d.feedMetadata(h, u.Metadata, u.Version)
	}
}
