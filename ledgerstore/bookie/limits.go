package bookie

import (
	"sync"
	"sync/atomic"
	"time"

	"keeper/ledgerstore/bkproto"
)

// Memory held for clients is bounded three ways (see Config):
//
//   - per connection, the requests in progress, by count of each kind
//     (MaxPendingAddsPerConn, MaxPendingReadsPerConn) and by bytes
//     (MaxPendingRequestBytesPerConn); a request stays in progress until
//     its response has been written to the socket;
//   - per connection, the responses not yet written (MaxUnsentBytesPerConn);
//   - across connections, both together (MaxPendingBytes).
//
// The reader of a connection checks the byte bounds before it reads a
// request and the count of the request's kind before it runs it; while a
// bound is reached it reads nothing, so TCP pushes back on the client.
// Responses that carry entry data (reads, fence reads, long polls,
// READ_LAC) are built one at a time per connection (conn.turn), each only
// while the connection's unsent bytes are below their bound. Responses
// without entry data fit in the reserve their request was charged, so the
// journal goroutine, which answers adds, never waits.
//
// So one connection holds at most
//
//	MaxPendingRequestBytesPerConn + MaxFrameBytes + requestReserveBytes
//	  + MaxUnsentBytesPerConn + its largest response
//
// (a response is at most an entry, entrystore.MaxEntryBytes, and an
// explicit LAC body, plus its protobuf, or a v2 batch read's entries,
// within MaxFrameBytes). Across connections the budget may
// be passed by what each connection takes while the budget is below its
// bound, or while the connection has nothing else in flight, so that one
// client that stops reading cannot stall the others: n connections hold
// at most
//
//	MaxPendingBytes + n × (MaxFrameBytes + requestReserveBytes + largest response)
//
// and never more than n times the per-connection bound. The writer closes
// a client that takes no responses for StuckClientTimeout, which frees
// what it held.

// requestReserveBytes is charged for every request in progress on top of
// its frame: its decoded form, the callback that answers it, and a
// response without entry data (status, add, write-LAC, force and
// bookie-info responses are all under 100 bytes). Only the part of a
// response beyond it is charged again.
const requestReserveBytes = 512

// memBudget is the bookie-wide count of bytes held for connections
// against Config.MaxPendingBytes. Charges and releases are atomic adds,
// so that connections do not serialize on it; a release takes mu only
// while some connection waits for room.
type memBudget struct {
	limit   int64
	used    atomic.Int64
	peak    atomic.Int64 // the highest used so far
	waiters atomic.Int32 // goroutines between watch and unwatch
	mu      sync.Mutex
	freed   chan struct{} // closed, and replaced, by a release while waiters > 0; mu guards it
}

func newMemBudget(limit int64) *memBudget {
	return &memBudget{limit: limit, freed: make(chan struct{})}
}

// below reports whether the budget has room.
func (m *memBudget) below() bool { return m.used.Load() < m.limit }

func (m *memBudget) charge(n int64) {
	if n == 0 {
		return
	}
	v := m.used.Add(n)
	for p := m.peak.Load(); v > p && !m.peak.CompareAndSwap(p, v); p = m.peak.Load() {
	}
}

func (m *memBudget) release(n int64) {
	if n == 0 {
		return
	}
	m.used.Add(-n)
	if m.waiters.Load() > 0 {
		m.mu.Lock()
		close(m.freed)
		m.freed = make(chan struct{})
		m.mu.Unlock()
	}
}

// watch registers a waiter and returns a channel closed by the next
// release. Check the budget after watch, not only before, and call
// unwatch once done.
func (m *memBudget) watch() <-chan struct{} {
	m.waiters.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.freed
}

func (m *memBudget) unwatch() { m.waiters.Add(-1) }

// call is one request in progress: the connection that answers it and
// what it holds against the limits until its response has been written to
// the socket, or the connection is gone. Every call ends exactly once,
// through send or drop.
type call struct {
	c     *conn
	v2    *bkproto.V2Request // a v2 request: its response goes out in v2's layout; nil for v3
	write bool               // ADD_ENTRY, WRITE_LAC or FORCE_LEDGER: counted against MaxPendingAddsPerConn
	bytes int64              // the request's frame and requestReserveBytes
}

// isWrite reports whether op counts as a write (maxPendingAddRequests)
// rather than a read.
func isWrite(op bkproto.OperationType) bool {
	switch op {
	case bkproto.OperationType_ADD_ENTRY, bkproto.OperationType_WRITE_LAC, bkproto.OperationType_FORCE_LEDGER:
		return true
	}
	return false
}

// held sums calls whose responses are queued for, or with, the writer.
type held struct {
	writes, reads int
	reqBytes      int64 // their calls' bytes
	extraBytes    int64 // the part of their responses beyond the reserve
}

func (h *held) add(cl call, extra int64) {
	if cl.write {
		h.writes++
	} else {
		h.reads++
	}
	h.reqBytes += cl.bytes
	h.extraBytes += extra
}

func (h held) bytes() int64 { return h.reqBytes + h.extraBytes }

// gate is what stops a waiter.
type gate int

const (
	open       gate = iota
	connGate        // the connection must release something first
	budgetGate      // some connection must release something first
)

// acquire waits until check, called with c.mu held, returns open, and
// returns true with c.mu still held; it returns false, without the lock,
// once the connection is closed.
func (c *conn) acquire(check func() gate) bool {
	c.mu.Lock()
	for {
		if c.dead {
			c.mu.Unlock()
			return false
		}
		g := check()
		if g == open {
			return true
		}
		var freed <-chan struct{}
		if g == budgetGate {
			freed = c.b.mem.watch()
			if check() == open { // a release came before watch
				c.b.mem.unwatch()
				return true
			}
		}
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-freed:
		case <-c.closed:
		}
		if freed != nil {
			c.b.mem.unwatch()
		}
		c.mu.Lock()
	}
}

// awaitRead waits until the connection may read its next request: its
// requests in progress and its unsent responses are below their bounds,
// and the budget has room or the connection has nothing in flight. false:
// the connection is closed.
func (c *conn) awaitRead() bool {
	cfg := &c.b.cfg
	ok := c.acquire(func() gate {
		switch {
		case c.reqBytes >= cfg.MaxPendingRequestBytesPerConn || c.unsent >= cfg.MaxUnsentBytesPerConn:
			return connGate
		case c.writes+c.reads > 0 && !c.b.mem.below():
			return budgetGate
		}
		return open
	})
	if ok {
		c.mu.Unlock()
	}
	return ok
}

// admit waits until the connection may take one more call of cl's kind,
// and charges it. false: the connection is closed; cl holds nothing.
func (c *conn) admit(cl call) bool {
	cfg := &c.b.cfg
	var blockedAt time.Time // set while the reader waits for a slot (ADD/READ_ENTRY_BLOCKED)
	ok := c.acquire(func() gate {
		if (cl.write && c.writes >= cfg.MaxPendingAddsPerConn) || (!cl.write && c.reads >= cfg.MaxPendingReadsPerConn) {
			if blockedAt.IsZero() {
				blockedAt = c.b.m.blocked(cl.write)
			}
			return connGate
		}
		return open
	})
	if !blockedAt.IsZero() {
		c.b.m.unblocked(cl.write, blockedAt, ok)
	}
	if !ok {
		return false
	}
	c.b.m.track(cl.write, 1)
	if cl.write {
		c.writes++
	} else {
		c.reads++
	}
	c.reqBytes += cl.bytes
	c.notePeakLocked()
	c.mu.Unlock()
	c.b.mem.charge(cl.bytes)
	return true
}

// beginBody waits for the connection's turn to build a response carrying
// entry data, and for room for it: unsent responses below their bound, and
// budget, or nothing unsent at all. Call endBody after sending. false: the
// connection closed meanwhile, and cl has been dropped.
func (cl call) beginBody() bool {
	c := cl.c
	select {
	case c.turn <- struct{}{}:
	case <-c.closed:
		cl.drop()
		return false
	}
	cfg := &c.b.cfg
	if !c.acquire(func() gate {
		switch {
		case c.unsent >= cfg.MaxUnsentBytesPerConn:
			return connGate
		case c.unsent > 0 && !c.b.mem.below():
			return budgetGate
		}
		return open
	}) {
		<-c.turn
		cl.drop()
		return false
	}
	c.mu.Unlock()
	return true
}

// endBody gives the turn back.
func (cl call) endBody() { <-cl.c.turn }

// send queues cl's response for the writer. It never blocks, so that the
// journal goroutine can answer adds through it. cl holds its charge until
// the writer has written the response; on a closed connection the
// response is dropped and the charge released at once.
func (cl call) send(resp *bkproto.Response) {
	cl.sendFrame(resp.GetHeader().GetOperation(), func(dst []byte) ([]byte, error) { return cl.encode(dst, resp) })
}

// sendAdd sends the response to an add whose request header rh was taken
// from: what send(rh.Response(...)) sends, but encoded without building
// the message, in v2 or v3.
func (cl call) sendAdd(rh bkproto.AddReply, st bkproto.StatusCode, ledgerID, entryID int64) {
	if v2 := cl.v2; v2 != nil {
		cl.sendFrame(bkproto.OperationType_ADD_ENTRY, func(dst []byte) ([]byte, error) {
			return bkproto.AppendV2AddResponse(dst, *v2, st), nil
		})
		return
	}
	cl.sendFrame(bkproto.OperationType_ADD_ENTRY, func(dst []byte) ([]byte, error) {
		return rh.AppendFrame(dst, st, ledgerID, entryID)
	})
}

// sendFrame is send with the response's encoder: encode appends the
// response's frame to dst. op names the operation in a log.
func (cl call) sendFrame(op bkproto.OperationType, encode func(dst []byte) ([]byte, error)) {
	c := cl.c
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		cl.drop()
		return
	}
	start := len(c.out)
	out, err := encode(c.out)
	if err != nil {
		c.mu.Unlock()
		c.b.log.Error("cannot encode a response", "op", op.String(), "err", err)
		cl.drop()
		return
	}
	c.out = out
	n := int64(len(out) - start)
	extra := max(n-requestReserveBytes, 0)
	c.unsent += n
	c.extraBytes += extra
	c.outHeld.add(cl, extra)
	if extra > 0 {
		c.notePeakLocked()
	}
	c.mu.Unlock()
	c.b.mem.charge(extra)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// encode appends resp to dst in the protocol of cl's request.
func (cl call) encode(dst []byte, resp *bkproto.Response) ([]byte, error) {
	if cl.v2 != nil {
		return bkproto.AppendV2Response(dst, *cl.v2, resp)
	}
	return bkproto.AppendResponseFrame(dst, resp)
}

// sendStatus answers with only a status: the header echoed, the overall
// status set, no sub-response.
func (cl call) sendStatus(h *bkproto.BKPacketHeader, status bkproto.StatusCode) {
	cl.send(&bkproto.Response{Header: responseHeader(h), Status: status.Enum()})
}

// drop ends a call that gets no response (its connection is gone, or the
// response could not be encoded), releasing its charge.
func (cl call) drop() {
	c := cl.c
	var h held
	h.add(cl, 0)
	c.mu.Lock()
	c.releaseLocked(h)
	c.mu.Unlock()
	c.b.mem.release(h.bytes())
}

// releaseLocked forgets the calls of h, which have ended, and wakes the
// connection's waiters. Caller holds c.mu, and releases h from the
// budget after unlocking.
func (c *conn) releaseLocked(h held) {
	c.writes -= h.writes
	c.reads -= h.reads
	if h.writes > 0 {
		c.b.m.track(true, -int64(h.writes))
	}
	if h.reads > 0 {
		c.b.m.track(false, -int64(h.reads))
	}
	c.reqBytes -= h.reqBytes
	c.extraBytes -= h.extraBytes
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// notePeakLocked records the most the connection has held. Caller holds
// c.mu.
func (c *conn) notePeakLocked() {
	c.peakBytes = max(c.peakBytes, c.reqBytes+c.extraBytes)
}
