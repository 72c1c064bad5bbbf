package diff

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// ioTimeout bounds every read and write. A server that has not answered in
// this long is broken (or hung in a GC far beyond anything normal), and the
// test fails rather than waits.
const ioTimeout = 20 * time.Second

// wireConn is a minimal synchronous client connection: one request at a time
// (plus a pipelined ping for barriers), replies matched strictly FIFO, and
// notifications collected in arrival order. It speaks zkproto directly so the
// test controls every byte: xids, reattaching a session, requests no client
// library sends. It is not safe for concurrent use.
type wireConn struct {
	nc       net.Conn
	br       *bufio.Reader
	xid      int32
	sid      int64
	passwd   []byte
	lastZxid int64   // the largest zxid seen in a reply, for reattaching
	events   []event // notifications since the last takeEvents
	// nudge makes await ping the server while a reply is slow (see
	// awaitNudging); set for ensemble members.
	nudge bool
}

// nudgeEvery is how long a reply may take before await nudges an ensemble
// member with a ping, and then the interval between pings.
const nudgeEvery = 500 * time.Millisecond

// nudges counts the pings awaitNudging sent, for the test's summary.
var nudges atomic.Int64

// event is one notification as received.
type event struct {
	zxid int64
	ev   zkproto.WatcherEvent
}

// reply is one decoded reply.
type reply struct {
	hdr     zkproto.ReplyHeader
	rec     jute.Record // nil on error and for ops without a body
	bodyLen int         // bytes after the header
}

// connectReq describes a ConnectRequest: a new session when sid is 0.
type connectReq struct {
	timeoutMs int32
	sid       int64
	passwd    []byte
	lastZxid  int64
}

// dialSession opens a connection and performs the handshake. A zero-timeout
// response (an invalid session) is returned without error, with the
// connection still open for the caller to close.
func dialSession(addr string, r connectReq) (*wireConn, zkproto.ConnectResponse, error) {
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		return nil, zkproto.ConnectResponse{}, err
	}
	c := &wireConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), lastZxid: r.lastZxid}
	passwd := r.passwd
	if passwd == nil {
		passwd = make([]byte, zkproto.PasswdLen)
	}
	req := zkproto.ConnectRequest{
		LastZxidSeen: r.lastZxid,
		TimeoutMs:    r.timeoutMs,
		SessionID:    r.sid,
		Passwd:       passwd,
		HasReadOnly:  true,
	}
	if err := c.writeFrame(jute.Marshal(&req)); err != nil {
		nc.Close()
		return nil, zkproto.ConnectResponse{}, fmt.Errorf("connect: %w", err)
	}
	frame, err := c.readFrame()
	if err != nil {
		nc.Close()
		return nil, zkproto.ConnectResponse{}, fmt.Errorf("connect: %w", err)
	}
	resp, err := zkproto.DecodeConnectResponse(frame, 0)
	if err != nil {
		nc.Close()
		return nil, zkproto.ConnectResponse{}, err
	}
	c.sid, c.passwd = resp.SessionID, resp.Passwd
	return c, resp, nil
}

func (c *wireConn) writeFrame(payload []byte) error {
	if err := c.nc.SetWriteDeadline(time.Now().Add(ioTimeout)); err != nil {
		return err
	}
	_, err := c.nc.Write(zkproto.AppendFrame(nil, payload))
	return err
}

func (c *wireConn) readFrame() ([]byte, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
		return nil, err
	}
	return zkproto.ReadFrame(c.br, nil, 0)
}

// nextXid returns the xid for op: the reserved one for ping and auth, else
// the next ordinary xid, as the Java client numbers them.
func (c *wireConn) nextXid(op zkproto.Op) int32 {
	switch op {
	case zkproto.OpPing:
		return zkproto.XidPing
	case zkproto.OpAuth:
		return zkproto.XidAuth
	case zkproto.OpSetWatches, zkproto.OpSetWatches2:
		return zkproto.XidSetWatches
	}
	if c.xid == math.MaxInt32 {
		c.xid = 0
	}
	c.xid++
	return c.xid
}

// send writes one request and returns its xid.
func (c *wireConn) send(op zkproto.Op, rec jute.Record) (int32, error) {
	xid := c.nextXid(op)
	return xid, c.writeFrame(zkproto.EncodeRequest(zkproto.RequestHeader{Xid: xid, Op: op}, rec))
}

// await reads frames until the reply with xid arrives, collecting the
// notifications before it. A reply with another xid is an ordering
// violation.
func (c *wireConn) await(xid int32, op zkproto.Op) (reply, error) {
	if c.nudge {
		return c.awaitNudging(xid, op)
	}
	return c.awaitReply(xid, op)
}

// awaitNudging is await for a connection to an Apache ZooKeeper 3.8.0
// ensemble member, whose commit processor can miss the wake-up for a
// commit that arrives as it goes idle (ZOOKEEPER-4537, fixed in 3.8.1): a
// follower then holds a forwarded write or a sync until another request
// reaches it, which, with the one request at a time this test sends, never
// happens. While the reply is slow a ping is sent every nudgeEvery: any
// request wakes the processor, and a ping changes nothing. Their replies,
// which come after the awaited one, are read before returning; one the
// server closed the connection before answering is not an error (the
// caller learns of the close next).
func (c *wireConn) awaitNudging(xid int32, op zkproto.Op) (reply, error) {
	var pings atomic.Int32
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(nudgeEvery)
		defer t.Stop()
		ping := zkproto.EncodeRequest(zkproto.RequestHeader{Xid: zkproto.XidPing, Op: zkproto.OpPing}, nil)
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if c.writeFrame(ping) != nil {
					return
				}
				pings.Add(1)
				nudges.Add(1)
			}
		}
	}()
	r, err := c.awaitReply(xid, op)
	close(stop)
	<-stopped
	if err != nil {
		return r, err
	}
	for range pings.Load() {
		if _, perr := c.awaitReply(zkproto.XidPing, zkproto.OpPing); perr != nil {
			if isClosedErr(perr) {
				break
			}
			return reply{}, fmt.Errorf("nudging ping: %w", perr)
		}
	}
	return r, nil
}

// awaitReply is await without nudging.
func (c *wireConn) awaitReply(xid int32, op zkproto.Op) (reply, error) {
	for {
		frame, err := c.readFrame()
		if err != nil {
			return reply{}, err
		}
		h, body, err := zkproto.DecodeReplyHeader(frame)
		if err != nil {
			return reply{}, err
		}
		if h.Xid == zkproto.XidNotification {
			var ev zkproto.WatcherEvent
			if err := jute.Unmarshal(body, &ev, 0); err != nil {
				return reply{}, fmt.Errorf("notification: %w", err)
			}
			c.events = append(c.events, event{zxid: h.Zxid, ev: ev})
			continue
		}
		if h.Xid != xid {
			return reply{}, fmt.Errorf("xid out of order: reply %d (err %v), expected %d (%v)", h.Xid, h.Err, xid, op)
		}
		if h.Zxid > c.lastZxid {
			c.lastZxid = h.Zxid
		}
		r := reply{hdr: h, bodyLen: len(body)}
		if _, known := zkproto.NewResponse(op); !known {
			return r, nil // an opcode the test sends to be refused
		}
		_, r.rec, err = zkproto.DecodeReply(frame, op, 0)
		if err != nil {
			return reply{}, err
		}
		return r, nil
	}
}

// call sends one request and waits for its reply.
func (c *wireConn) call(op zkproto.Op, rec jute.Record) (reply, error) {
	xid, err := c.send(op, rec)
	if err != nil {
		return reply{}, err
	}
	return c.await(xid, op)
}

// takeEvents returns the notifications received since the last call.
func (c *wireConn) takeEvents() []event {
	ev := c.events
	c.events = nil
	return ev
}

// drainToEOF reads until the server closes the connection, collecting any
// notifications. It reports whether the server closed it within wait (a
// connection still open then is reported, not an error); a reply other
// than a notification is an error.
func (c *wireConn) drainToEOF(wait time.Duration) (bool, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return false, err
	}
	for {
		frame, err := zkproto.ReadFrame(c.br, nil, 0)
		var ne net.Error
		switch {
		case isClosedErr(err):
			return true, nil
		case errors.As(err, &ne) && ne.Timeout():
			return false, nil
		case err != nil:
			return false, err
		}
		h, body, err := zkproto.DecodeReplyHeader(frame)
		if err != nil {
			return false, err
		}
		if h.Xid != zkproto.XidNotification {
			return false, fmt.Errorf("unexpected reply xid %d after the last request", h.Xid)
		}
		var ev zkproto.WatcherEvent
		if err := jute.Unmarshal(body, &ev, 0); err != nil {
			return false, fmt.Errorf("notification: %w", err)
		}
		c.events = append(c.events, event{zxid: h.Zxid, ev: ev})
	}
}

// awaitEvent reads until a notification arrives or wait passes. Nothing
// else may arrive: no request is outstanding.
func (c *wireConn) awaitEvent(wait time.Duration) error {
	if err := c.nc.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	frame, err := zkproto.ReadFrame(c.br, nil, 0)
	if err != nil {
		return err
	}
	h, body, err := zkproto.DecodeReplyHeader(frame)
	if err != nil {
		return err
	}
	if h.Xid != zkproto.XidNotification {
		return fmt.Errorf("unexpected reply xid %d while waiting for a notification", h.Xid)
	}
	var ev zkproto.WatcherEvent
	if err := jute.Unmarshal(body, &ev, 0); err != nil {
		return fmt.Errorf("notification: %w", err)
	}
	c.events = append(c.events, event{zxid: h.Zxid, ev: ev})
	return nil
}

func (c *wireConn) close() {
	if c != nil {
		c.nc.Close()
	}
}

// isClosedErr reports whether err means the peer closed the connection, as
// opposed to a timeout or a protocol violation.
func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}
