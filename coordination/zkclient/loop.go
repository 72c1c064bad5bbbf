package zkclient

import (
	"bufio"
	"errors"
	"fmt"
	"time"

	"keeper/coordination/zkproto"
)

// This file holds the two goroutines of a connection: the reader, which
// matches replies to calls and completes them, and the writer, which
// flushes queued frames and keeps the session alive.

// errAuthFailed is the connection's error after the server rejected an
// auth packet; the server closes the connection after that reply.
var errAuthFailed = fmt.Errorf("zkclient: authentication failed, connection closed: %w", zkproto.ErrAuthFailed)

// lostError is the error of calls failed by a broken connection.
type lostError struct {
	addr  string
	cause error
}

func (e *lostError) Error() string {
	return "zkclient: connection to " + e.addr + " lost: " + e.cause.Error()
}

// Unwrap makes errors.Is match both ErrConnectionLoss and the cause.
func (e *lostError) Unwrap() []error { return []error{ErrConnectionLoss, e.cause} }

// readLoop reads frames until the connection ends, then fails whatever is
// still pending.
func (c *Conn) readLoop(br *bufio.Reader) {
	defer c.wg.Done()
	c.lastRecv.Store(int64(time.Since(c.start)))
	buf := make([]byte, 0, readBufferBytes)
	var err error
	for {
		var frame []byte
		if frame, err = zkproto.ReadFrame(br, buf, c.maxBuffer); err != nil {
			break
		}
		c.lastRecv.Store(int64(time.Since(c.start)))
		if err = c.dispatch(frame); err != nil {
			break
		}
	}
	c.finish(err)
}

// dispatch handles one reply frame. An error ends the connection.
func (c *Conn) dispatch(frame []byte) error {
	h, body, err := zkproto.DecodeReplyHeader(frame)
	if err != nil {
		return err
	}
	if h.Zxid > c.lastZxid.Load() {
		c.lastZxid.Store(h.Zxid) // the reader is the only writer
	}
	switch h.Xid {
	case zkproto.XidNotification:
		return c.deliverEvent(h, body)
	case zkproto.XidPing:
		return c.pingReply()
	}
	cl, err := c.pop(h.Xid)
	if err != nil {
		return err
	}
	res, err := c.decodeResult(cl, h, body)
	cl.cb(res)
	switch {
	case err != nil:
		return err
	case cl.op == zkproto.OpCloseSession && h.Err == zkproto.CodeOK:
		c.sessionClosed = true
	case cl.op == zkproto.OpAuth && h.Err == zkproto.CodeAuthFailed:
		return errAuthFailed
	}
	return nil
}

// pop removes the call a reply with this xid answers: the head of the auth
// queue for xid -4, else the head of pending, which must carry the xid.
func (c *Conn) pop(xid int32) (call, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := &c.pending
	if xid == zkproto.XidAuth {
		q = &c.auths
	}
	cl, ok := q.pop()
	switch {
	case !ok:
		return call{}, fmt.Errorf("zkclient: reply with xid %d but no request outstanding", xid)
	case cl.xid != xid:
		q.unpop(cl) // the reader fails it with the connection
		return call{}, fmt.Errorf("zkclient: xid out of order: reply %d, expected %d (%v)", xid, cl.xid, cl.op)
	}
	return cl, nil
}

// decodeResult builds a call's result from its reply. An error means the
// body did not decode; the connection cannot be trusted after that.
func (c *Conn) decodeResult(cl call, h zkproto.ReplyHeader, body []byte) (Result, error) {
	if h.Err != zkproto.CodeOK {
		return Result{Header: h, Err: &zkproto.Error{Code: h.Err, Path: requestPath(cl.req)}}, nil
	}
	rec, _ := zkproto.NewResponse(cl.op) // Go admits only ops it knows
	if rec == nil {
		return Result{Header: h}, nil
	}
	c.dec.Reset(body)
	rec.Decode(c.dec)
	if err := c.dec.Err(); err != nil {
		err = fmt.Errorf("zkclient: decode %v reply (xid %d): %w", cl.op, h.Xid, err)
		return Result{Header: h, Err: err}, err
	}
	return Result{Header: h, Record: rec}, nil
}

// deliverEvent decodes a notification and queues it on Events.
func (c *Conn) deliverEvent(h zkproto.ReplyHeader, body []byte) error {
	if h.Err != zkproto.CodeOK {
		return fmt.Errorf("zkclient: notification with err %v", h.Err)
	}
	var ev zkproto.WatcherEvent
	c.dec.Reset(body)
	ev.Decode(c.dec)
	if err := c.dec.Err(); err != nil {
		return fmt.Errorf("zkclient: decode notification: %w", err)
	}
	c.book.fired(ev)
	if c.onEvent != nil {
		c.onEvent(ev)
	}
	select {
	case c.events <- ev:
		return nil
	default:
		return fmt.Errorf("%w (capacity %d); dropped %v for %s", ErrEventOverflow, cap(c.events), ev.Type, ev.Path)
	}
}

// pingReply accounts for one ping reply.
func (c *Conn) pingReply() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pings == 0 {
		return errors.New("zkclient: ping reply without a ping outstanding")
	}
	c.pings--
	c.pongs.Add(1)
	return nil
}

// finish ends the connection: it settles the connection's error, fails
// every call still queued, in order, and closes Events and Done.
func (c *Conn) finish(readErr error) {
	c.mu.Lock()
	if c.err == nil {
		switch {
		case c.sessionClosed:
			c.err = ErrClosed
		case errors.Is(readErr, zkproto.ErrAuthFailed):
			c.err = readErr
		default:
			c.err = &lostError{addr: c.addr, cause: readErr}
		}
	}
	err := c.err
	c.finished = true
	auths, pending := c.auths.drain(), c.pending.drain()
	c.out = nil
	c.mu.Unlock()
	c.nc.Close()
	for _, cl := range auths {
		cl.cb(Result{Err: err})
	}
	for _, cl := range pending {
		cl.cb(Result{Err: err})
	}
	close(c.events)
	close(c.done)
	c.log.Debug("connection ended", "addr", c.addr, "session", fmt.Sprintf("%#x", c.sessionID), "err", err)
}

// writeLoop hands queued frames to the socket, one write per batch, and
// keeps the session alive while the caller is idle.
func (c *Conn) writeLoop() {
	defer c.wg.Done()
	timer := time.NewTimer(c.pingInterval)
	defer timer.Stop()
	var spare []byte
	lastSend := time.Now()
	for {
		select {
		case <-c.done:
			return
		case now := <-timer.C:
			next, err := c.keepAlive(now, lastSend)
			if err != nil {
				c.fail(err)
				return
			}
			timer.Reset(next)
		case <-c.wake:
		}
		c.mu.Lock()
		batch := c.out
		c.out = spare[:0]
		c.mu.Unlock()
		if len(batch) == 0 {
			spare = batch
			continue
		}
		if _, err := c.nc.Write(batch); err != nil {
			c.fail(&lostError{addr: c.addr, cause: err})
			return
		}
		lastSend = time.Now()
		spare = nil
		if cap(batch) <= maxSpareWriteBytes {
			spare = batch[:0]
		}
	}
}

// keepAlive runs when the writer's timer fires. It queues a ping if
// nothing has been sent for the ping interval, fails if nothing has been
// received for the read timeout, and returns when to look again.
func (c *Conn) keepAlive(now, lastSend time.Time) (time.Duration, error) {
	silent := now.Sub(c.start) - time.Duration(c.lastRecv.Load())
	if silent > c.readTimeout {
		return 0, &lostError{addr: c.addr, cause: fmt.Errorf("nothing received for %v", silent.Round(time.Millisecond))}
	}
	next := c.pingInterval - now.Sub(lastSend)
	if next <= 0 {
		if !c.noPing {
			c.queuePing()
		}
		next = c.pingInterval
	}
	return max(min(next, c.readTimeout-silent), time.Millisecond), nil
}

// queuePing queues a ping frame for the writer.
func (c *Conn) queuePing() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.out = zkproto.AppendRequestFrame(c.out, zkproto.RequestHeader{Xid: zkproto.XidPing, Op: zkproto.OpPing}, nil)
	c.pings++
}
