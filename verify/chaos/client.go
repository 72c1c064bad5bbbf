package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// The harness's client is deliberately small: one TCP connection, one
// session, requests matched to replies in order. Unlike keeper's zkclient
// it can resume a session on another server (session id, password and
// last seen zxid in the handshake), which scenarios 5 and 6 are about, it
// tells a refused handshake apart from a lost one, it keeps a session's
// xids across connections (so that a request can be found in the
// committed log by session and xid), and it can be paused to stand for a
// stopped client process.

var (
	// ErrRefused means the server closed the connection before answering
	// the handshake: it is not serving, or the client has seen a newer
	// zxid than the server has (ZooKeeper's CLIENT_ZXID_AHEAD).
	ErrRefused = errors.New("chaos: handshake refused (connection closed without a reply)")
	// ErrConnLost is wrapped by the error of a request whose reply will
	// never come because the connection ended: its outcome is unknown.
	ErrConnLost = errors.New("chaos: connection lost")
	// ErrTimeout is wrapped by the error of a request whose context ended
	// first; the connection is dropped, so the outcome is unknown.
	ErrTimeout = errors.New("chaos: request timed out")
)

const (
	// clientMaxBuffer bounds a reply frame, as jute.maxbuffer does, but
	// 64 times its default: the end-of-run tree walks read child lists
	// that long runs grow past 1 MiB (scenario 2 left 129,124 children
	// under /set after 3 minutes, a 1.76 MB getChildren reply), which a
	// client with the default refuses, as Apache ZooKeeper's does.
	clientMaxBuffer = 64 * jute.DefaultMaxBuffer
	// clientWriteTimeout bounds one socket write.
	clientWriteTimeout = 5 * time.Second
	// keepAliveTick is how often the keep-alive goroutine looks at the
	// connection.
	keepAliveTick = 50 * time.Millisecond
	// eventBuffer bounds undelivered watch events; a full buffer fails the
	// connection rather than lose an event.
	eventBuffer = 4096
)

// Session is what resumes a session on another connection.
type Session struct {
	ID      int64
	Passwd  []byte
	Timeout time.Duration // negotiated
}

// DialOptions configure Dial.
type DialOptions struct {
	// Session to resume; a zero ID asks for a new session.
	Session Session
	// Timeout is the session timeout to ask for a new session.
	Timeout time.Duration
	// LastZxid is the highest zxid the client has seen (lastZxidSeen).
	LastZxid int64
	// Xids numbers the session's requests across its connections; nil
	// starts at 1 for this connection.
	Xids *atomic.Int32
}

// Reply is a request's outcome as the connection saw it.
type Reply struct {
	Xid    int32 // the request's xid (set even when no reply came)
	Header zkproto.ReplyHeader
	Record jute.Record // nil on error or for bodiless replies
	Seq    int64       // the reply's position among the frames received
	At     time.Time   // when it was received
}

// Event is a watch notification with its place in the stream.
type Event struct {
	zkproto.WatcherEvent
	Zxid int64 // the header's zxid (the server's last zxid; -1 from ZooKeeper)
	Seq  int64
	At   time.Time
}

type call struct {
	xid int32
	op  zkproto.Op
	ch  chan callResult
}

type callResult struct {
	reply Reply
	err   error
}

// Conn is one connection and its session. It is safe for concurrent use:
// requests from several goroutines are answered in the order sent.
type Conn struct {
	nc      net.Conn
	addr    string
	sess    Session
	xids    *atomic.Int32
	events  chan Event
	done    chan struct{}
	paused  atomic.Bool
	recvSeq atomic.Int64

	lastZxid atomic.Int64
	lastRecv atomic.Int64 // unix ns
	lastSend atomic.Int64 // unix ns

	wmu sync.Mutex // serialises writes, so pending is in wire order

	mu      sync.Mutex
	pending []*call
	err     error
}

// Dial connects to addr and performs the handshake. It returns ErrRefused
// when the server closed without answering and an error wrapping
// zkproto.ErrSessionExpired when it answered that the session is invalid.
func Dial(ctx context.Context, addr string, o DialOptions) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("chaos: dial %s: %w", addr, err)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	_ = nc.SetDeadline(deadline)
	br := bufio.NewReaderSize(nc, 64<<10)
	resp, err := handshake(nc, br, o)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("chaos: handshake with %s: %w", addr, err)
	}
	_ = nc.SetDeadline(time.Time{})
	xids := o.Xids
	if xids == nil {
		xids = new(atomic.Int32)
	}
	c := &Conn{nc: nc, addr: addr, xids: xids, events: make(chan Event, eventBuffer), done: make(chan struct{}),
		sess: Session{ID: resp.SessionID, Passwd: resp.Passwd, Timeout: time.Duration(resp.TimeoutMs) * time.Millisecond}}
	c.lastZxid.Store(o.LastZxid)
	now := time.Now().UnixNano()
	c.lastRecv.Store(now)
	c.lastSend.Store(now)
	go c.readLoop(br)
	go c.keepAlive()
	return c, nil
}

func handshake(nc net.Conn, br *bufio.Reader, o DialOptions) (zkproto.ConnectResponse, error) {
	passwd := o.Session.Passwd
	if len(passwd) == 0 {
		passwd = make([]byte, zkproto.PasswdLen)
	}
	timeout := o.Timeout
	if o.Session.ID != 0 && o.Session.Timeout > 0 {
		timeout = o.Session.Timeout
	}
	req := zkproto.ConnectRequest{LastZxidSeen: o.LastZxid, TimeoutMs: int32(timeout.Milliseconds()),
		SessionID: o.Session.ID, Passwd: passwd, HasReadOnly: true}
	if _, err := nc.Write(zkproto.AppendFrame(nil, jute.Marshal(&req))); err != nil {
		return zkproto.ConnectResponse{}, refusedOr(err)
	}
	frame, err := zkproto.ReadFrame(br, nil, clientMaxBuffer)
	if err != nil {
		return zkproto.ConnectResponse{}, refusedOr(err)
	}
	resp, err := zkproto.DecodeConnectResponse(frame, clientMaxBuffer)
	switch {
	case err != nil:
		return resp, err
	case resp.TimeoutMs <= 0:
		return resp, fmt.Errorf("session %#x: %w", o.Session.ID, zkproto.ErrSessionExpired)
	case len(resp.Passwd) != zkproto.PasswdLen:
		return resp, fmt.Errorf("password of %d bytes", len(resp.Passwd))
	}
	return resp, nil
}

// refusedOr maps the server closing the connection to ErrRefused.
func refusedOr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	return err
}

// Session returns the session this connection carries.
func (c *Conn) Session() Session { return c.sess }

// Addr is the address dialled.
func (c *Conn) Addr() string { return c.addr }

// LastZxid is the highest zxid seen in an ordinary reply (or the one the
// connection was opened with).
func (c *Conn) LastZxid() int64 { return c.lastZxid.Load() }

// LastRecv is when the last frame (reply, ping reply or event) arrived.
func (c *Conn) LastRecv() time.Time { return time.Unix(0, c.lastRecv.Load()) }

// Events delivers watch notifications in arrival order. It is not closed.
func (c *Conn) Events() <-chan Event { return c.events }

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, nil while it is up.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Pause stands for a stopped client process: no pings go out and the
// connection is not failed for silence until Resume.
func (c *Conn) Pause() { c.paused.Store(true) }

// Resume ends Pause. If nothing arrived meanwhile, the silence check
// fails the connection at once, as a resumed Java client would.
func (c *Conn) Resume() { c.paused.Store(false) }

// Do sends a request and waits for its reply, the end of the connection,
// or ctx. A reply with a non-zero err is a Reply, not an error; the error
// is only for a reply that did not come (outcome unknown).
func (c *Conn) Do(ctx context.Context, op zkproto.Op, req jute.Record) (Reply, error) {
	cl := &call{op: op, ch: make(chan callResult, 1)}
	c.wmu.Lock()
	cl.xid = c.xids.Add(1)
	c.mu.Lock()
	if err := c.err; err != nil {
		c.mu.Unlock()
		c.wmu.Unlock()
		return Reply{Xid: cl.xid}, fmt.Errorf("%w: %v", ErrConnLost, err)
	}
	c.pending = append(c.pending, cl)
	c.mu.Unlock()
	frame := zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: cl.xid, Op: op}, req)
	err := c.write(frame)
	c.wmu.Unlock()
	if err != nil {
		c.fail(err)
	}
	select {
	case r := <-cl.ch:
		return r.reply, r.err
	case <-ctx.Done():
		c.fail(ErrTimeout)
		r := <-cl.ch // the reply may have beaten the failure
		if r.err != nil {
			r.err = fmt.Errorf("%w: %w", ErrTimeout, r.err)
		}
		return r.reply, r.err
	}
}

// write sends one frame; the caller holds wmu.
func (c *Conn) write(frame []byte) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(clientWriteTimeout))
	_, err := c.nc.Write(frame)
	c.lastSend.Store(time.Now().UnixNano())
	return err
}

// Close ends the session (closeSession) and the connection. ctx bounds
// the wait for the reply.
func (c *Conn) Close(ctx context.Context) (Reply, error) {
	r, err := c.Do(ctx, zkproto.OpCloseSession, nil)
	c.fail(errors.New("closed"))
	return r, err
}

// Drop closes the socket without ending the session, as a crashed client
// would.
func (c *Conn) Drop() { c.fail(errors.New("dropped")) }

// fail ends the connection: every waiting request fails with ErrConnLost.
func (c *Conn) fail(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = cause
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	c.nc.Close()
	for _, cl := range pending {
		cl.ch <- callResult{reply: Reply{Xid: cl.xid}, err: fmt.Errorf("%w: %v", ErrConnLost, cause)}
	}
	close(c.done)
}

// readLoop reads frames until the connection ends.
func (c *Conn) readLoop(br *bufio.Reader) {
	buf := make([]byte, 64<<10)
	for {
		frame, err := zkproto.ReadFrame(br, buf, clientMaxBuffer)
		if err != nil {
			c.fail(err)
			return
		}
		now := time.Now()
		c.lastRecv.Store(now.UnixNano())
		seq := c.recvSeq.Add(1)
		if err := c.dispatch(frame, seq, now); err != nil {
			c.fail(err)
			return
		}
	}
}

// dispatch handles one frame.
func (c *Conn) dispatch(frame []byte, seq int64, now time.Time) error {
	h, _, err := zkproto.DecodeReplyHeader(frame)
	if err != nil {
		return err
	}
	switch h.Xid {
	case zkproto.XidPing:
		return nil
	case zkproto.XidNotification:
		_, rec, err := zkproto.DecodeReply(frame, zkproto.OpNotification, clientMaxBuffer)
		if err != nil {
			return err
		}
		select {
		case c.events <- Event{WatcherEvent: *rec.(*zkproto.WatcherEvent), Zxid: h.Zxid, Seq: seq, At: now}:
			return nil
		default:
			return errors.New("chaos: watch event buffer full")
		}
	}
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return fmt.Errorf("chaos: reply xid %d with no request waiting", h.Xid)
	}
	cl := c.pending[0]
	c.pending = c.pending[1:]
	c.mu.Unlock()
	if cl.xid != h.Xid {
		cl.ch <- callResult{reply: Reply{Xid: cl.xid}, err: fmt.Errorf("%w: reply xid %d, want %d", ErrConnLost, h.Xid, cl.xid)}
		return fmt.Errorf("chaos: reply xid %d, want %d", h.Xid, cl.xid)
	}
	_, rec, err := zkproto.DecodeReply(frame, cl.op, clientMaxBuffer)
	if err != nil {
		cl.ch <- callResult{reply: Reply{Xid: cl.xid}, err: fmt.Errorf("%w: %v", ErrConnLost, err)}
		return err
	}
	if h.Zxid > c.lastZxid.Load() {
		c.lastZxid.Store(h.Zxid)
	}
	cl.ch <- callResult{reply: Reply{Xid: cl.xid, Header: h, Record: rec, Seq: seq, At: now}}
	return nil
}

// keepAlive pings after a third of the session timeout without sending,
// and fails the connection after two thirds without receiving, as the
// Java client does; both are suspended while the connection is paused.
func (c *Conn) keepAlive() {
	ping := zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: zkproto.XidPing, Op: zkproto.OpPing}, nil)
	t := c.sess.Timeout
	tick := time.NewTicker(keepAliveTick)
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-tick.C:
		}
		if c.paused.Load() {
			continue
		}
		now := time.Now().UnixNano()
		if time.Duration(now-c.lastRecv.Load()) > t*2/3 {
			c.fail(fmt.Errorf("nothing received for %v", t*2/3))
			return
		}
		if time.Duration(now-c.lastSend.Load()) >= t/3 {
			c.wmu.Lock()
			err := c.write(ping)
			c.wmu.Unlock()
			if err != nil {
				c.fail(err)
				return
			}
		}
	}
}
