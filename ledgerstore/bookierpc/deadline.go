package bookierpc

import (
	"errors"
	"time"

	"keeper/ledgerstore/bkproto"
)

// ErrTimeout is the error of a call sent with Send whose deadline passed
// before its response arrived.
var ErrTimeout = errors.New("bookierpc: call timed out")

// Send sends req, as Go does, and calls done with its result exactly
// once: the response; ErrTimeout if deadline passes first (the call is
// then forgotten, and a late response dropped); or the connection's
// error. It spends no goroutine and no timer of its own on the call: the
// connection's reader delivers responses, and one timer per connection
// fires at the earliest deadline (as BookKeeper's client scans its
// connections for timed-out requests). done runs on the reader, on that
// timer's goroutine, or, if the connection is already broken or the send
// fails, on the caller's before Send returns; it must not block and must
// not call the Client. A v2 connection (DialV2) still waits for each
// call on a goroutine.
func (c *Client) Send(req *bkproto.Request, deadline time.Time, done func(Result)) {
	if !c.v2 {
		c.sendV3(req, pendingCall{done: done}, deadline)
		return
	}
	txn, ch := c.sendV2(req)
	go func() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case r := <-ch:
			done(r)
		case <-t.C:
			c.forget(txn)
			done(Result{Err: ErrTimeout})
		}
	}()
}

// maxStaleDeadlines is how many deadlines of calls already answered the
// queue may hold beyond twice the calls pending before it drops them:
// answered calls leave their deadline behind (removing it from the heap
// would cost as much as keeping it), so the queue stays within a small
// multiple of the pending calls.
const maxStaleDeadlines = 1024

// deadlineQueue is a connection's deadlines: a min-heap of the calls sent
// with one, and the timer armed for the earliest. The Client's mu guards
// it.
type deadlineQueue struct {
	h       []deadlineEntry
	timer   *time.Timer
	armedAt time.Time // when the timer fires; zero: not armed
	stopped bool      // the connection ended: no more timeouts
}

type deadlineEntry struct {
	at  time.Time
	txn uint64
}

// push adds call txn's deadline, and arms the timer if it is the
// earliest.
func (q *deadlineQueue) push(c *Client, txn uint64, at time.Time) {
	if q.stopped {
		return
	}
	if len(q.h) >= 2*len(c.pending)+maxStaleDeadlines {
		q.compact(c.pending)
	}
	q.h = append(q.h, deadlineEntry{at: at, txn: txn})
	q.up(len(q.h) - 1)
	if q.armedAt.IsZero() || at.Before(q.armedAt) {
		q.arm(c, at)
	}
}

func (q *deadlineQueue) arm(c *Client, at time.Time) {
	d := time.Until(at)
	if q.timer == nil {
		q.timer = time.AfterFunc(d, c.expire)
	} else {
		q.timer.Reset(d) // a run of expire already under way finds nothing more to do
	}
	q.armedAt = at
}

// stop ends the timeouts: the connection is gone and its calls failed.
func (q *deadlineQueue) stop() {
	q.stopped = true
	q.h = nil
	if q.timer != nil {
		q.timer.Stop()
	}
}

// compact drops the deadlines of calls no longer pending.
func (q *deadlineQueue) compact(pending map[uint64]pendingCall) {
	kept := q.h[:0]
	for _, e := range q.h {
		if _, ok := pending[e.txn]; ok {
			kept = append(kept, e)
		}
	}
	clear(q.h[len(kept):])
	q.h = kept
	for i := len(q.h)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

// popDue removes and returns the earliest deadline if it is not after now.
func (q *deadlineQueue) popDue(now time.Time) (deadlineEntry, bool) {
	if len(q.h) == 0 || q.h[0].at.After(now) {
		return deadlineEntry{}, false
	}
	e := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	q.down(0)
	return e, true
}

func (q *deadlineQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.h[i].at.Before(q.h[p].at) {
			return
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *deadlineQueue) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(q.h) {
			return
		}
		m := l
		if r := l + 1; r < len(q.h) && q.h[r].at.Before(q.h[l].at) {
			m = r
		}
		if !q.h[m].at.Before(q.h[i].at) {
			return
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
}

// expire fails the calls whose deadlines have passed and re-arms the
// timer for the next one. It runs on the timer's goroutine.
func (c *Client) expire() {
	now := time.Now()
	var late []pendingCall
	c.mu.Lock()
	q := &c.deadlines
	if q.stopped {
		c.mu.Unlock()
		return
	}
	for {
		e, ok := q.popDue(now)
		if !ok {
			break
		}
		if pc, ok := c.pending[e.txn]; ok {
			delete(c.pending, e.txn)
			late = append(late, pc)
		}
	}
	q.armedAt = time.Time{}
	if len(q.h) > 0 {
		q.arm(c, q.h[0].at)
	}
	c.mu.Unlock()
	for _, pc := range late {
		pc.deliver(Result{Err: ErrTimeout})
	}
}
