package zkclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// Defaults for zero Options fields.
const (
	// DefaultSessionTimeout is the session timeout asked for when
	// Options.SessionTimeout is zero; zkCli asks for the same.
	DefaultSessionTimeout = 30 * time.Second
	// DefaultEventBuffer is the capacity of the Events channel when
	// Options.EventBuffer is zero: enough for a burst of notifications
	// from a recursive watch while the consumer is busy, small enough to
	// be noticed (see the package doc) when nobody drains the channel.
	DefaultEventBuffer = 1024
)

const (
	// readBufferBytes sizes the socket read buffer: one read picks up many
	// pipelined replies.
	readBufferBytes = 64 << 10
	// maxSpareWriteBytes bounds the write buffer the writer keeps for
	// reuse, so that one huge burst does not pin its memory forever.
	maxSpareWriteBytes = 1 << 20
)

var (
	// ErrClosed is the error of calls made after Close, and Err's value
	// once Close has finished.
	ErrClosed = errors.New("zkclient: connection closed")

	// ErrConnectionLoss is wrapped by the error of every call that failed
	// because the connection broke. It is a *zkproto.Error, so
	// zkproto.CodeOf gives CodeConnectionLoss.
	ErrConnectionLoss = &zkproto.Error{Code: zkproto.CodeConnectionLoss}

	// ErrEventOverflow is wrapped by the connection's error when a
	// notification arrived while Events was full (see the package doc).
	ErrEventOverflow = errors.New("zkclient: watch event channel full")
)

// Options configures Dial. The zero value is ready to use.
type Options struct {
	// SessionTimeout is the session timeout to ask for; the server clamps
	// it into its [min, max] range. Zero means DefaultSessionTimeout.
	SessionTimeout time.Duration
	// ReadOnly tells the server that this client accepts a read-only
	// server (the handshake's readOnly byte).
	ReadOnly bool
	// MaxBuffer bounds a reply frame in bytes, as jute.maxbuffer does for
	// the Java client: a larger frame ends the connection. Zero means
	// jute.DefaultMaxBuffer.
	MaxBuffer int
	// EventBuffer is the capacity of the Events channel. Zero means
	// DefaultEventBuffer.
	EventBuffer int
	// Logger receives debug logs about the connection; nil discards them.
	Logger *slog.Logger
	// SessionID, if not zero, asks the server to reattach the connection
	// to that session (one whose connection to this or another server of
	// the ensemble broke) instead of creating one; SessionPasswd is the
	// session's password (Conn.SessionPasswd) and LastZxidSeen the
	// highest zxid the client saw (Conn.LastZxid), so that a server
	// behind it refuses the client. A session the server no longer has
	// fails the dial with zkproto.ErrSessionExpired.
	SessionID     int64
	SessionPasswd []byte
	LastZxidSeen  int64
	// Watches, if it sets any, are set again on the session right after
	// the handshake (the old connection's Conn.Watches), as the Java
	// client does when it reconnects: the server fires at once those
	// whose node changed after Watches.RelativeZxid. A server that
	// refuses them fails the dial.
	Watches *zkproto.SetWatches2
	// TLS, if set, makes the connection TLS: the handshake runs before
	// the ConnectRequest, within the dial's ctx. Without a ServerName the
	// host of the address dialled is the name checked.
	TLS *tls.Config
	// SASL, if set, starts a SASL exchange for each connection, which
	// runs right after the ConnectResponse and before any other request
	// (sasl.go); a failed exchange fails the dial with an error wrapping
	// ErrSASLRefused and zkproto.ErrAuthFailed. It is given the address
	// dialled and the connection's remote address, from which a Kerberos
	// client names the server's principal.
	SASL func(addr string, remote net.Addr) (SASLClient, error)
	// DialContext, if set, opens the connection instead of a net.Dialer
	// (tests: an in-memory network, internal/memnet, which a
	// testing/synctest bubble can wait on).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	noPing bool // tests: never ping, to watch a session expire
	// onEvent, if set, is handed each notification on the reader
	// goroutine, before the replies that follow it are: a Session's
	// dispatch, which must see a notification before a later reply's
	// callback arms a watch. It must not block.
	onEvent func(zkproto.WatcherEvent)
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	switch {
	case o.SessionTimeout < 0:
		return fmt.Errorf("zkclient: negative session timeout %v", o.SessionTimeout)
	case o.SessionTimeout > time.Duration(math.MaxInt32)*time.Millisecond:
		return fmt.Errorf("zkclient: session timeout %v does not fit the protocol's int32 ms", o.SessionTimeout)
	case o.MaxBuffer < 0:
		return fmt.Errorf("zkclient: negative max buffer %d", o.MaxBuffer)
	case o.EventBuffer < 0:
		return fmt.Errorf("zkclient: negative event buffer %d", o.EventBuffer)
	case o.SessionID != 0 && len(o.SessionPasswd) != zkproto.PasswdLen:
		return fmt.Errorf("zkclient: session password of %d bytes, want %d", len(o.SessionPasswd), zkproto.PasswdLen)
	}
	return nil
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.MaxBuffer == 0 {
		o.MaxBuffer = jute.DefaultMaxBuffer
	}
	if o.EventBuffer == 0 {
		o.EventBuffer = DefaultEventBuffer
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Result is the outcome of one request.
type Result struct {
	// Header is the reply header; zero if no reply arrived.
	Header zkproto.ReplyHeader
	// Record is the decoded reply body (the type zkproto.NewResponse gives
	// for the op); nil on error and for ops whose reply has no body.
	Record jute.Record
	// Err is nil, a *zkproto.Error for a reply with a non-zero err, or the
	// reason no reply will come (see the package doc).
	Err error
}

// call is a request waiting for its reply.
type call struct {
	xid int32
	op  zkproto.Op
	req jute.Record // kept for the path of an error
	cb  func(Result)
}

// Conn is one client connection and its session. It is safe for
// concurrent use.
type Conn struct {
	nc           net.Conn
	addr         string
	log          *slog.Logger
	maxBuffer    int
	sessionID    int64
	passwd       []byte        // the session's password; read-only after newConn
	timeout      time.Duration // negotiated
	pingInterval time.Duration // send a ping after this long without sending
	readTimeout  time.Duration // fail after this long without receiving
	readOnly     bool          // the server said it is read-only

	events chan zkproto.WatcherEvent
	book   *watchBook    // the session's watches not yet fired (Watches)
	wake   chan struct{} // capacity 1: out has frames for the writer
	done   chan struct{} // closed when the reader has finished every call
	wg     sync.WaitGroup

	start    time.Time    // the origin of lastRecv
	lastRecv atomic.Int64 // ns after start that the last frame arrived
	lastZxid atomic.Int64
	pongs    atomic.Int64 // ping replies received, for tests

	mu       sync.Mutex
	xid      int32     // the last ordinary xid used
	out      []byte    // frames not yet handed to the writer
	pending  callQueue // ordinary requests, in the order sent
	auths    callQueue // auth packets (xid -4), in the order sent
	pings    int       // pings awaiting their reply
	err      error     // why the connection ended; nil while it is up
	closing  bool      // Close has started
	finished bool      // the reader has failed every call; err is final

	// Owned by the reader goroutine.
	dec           *jute.Decoder
	sessionClosed bool // the closeSession reply has arrived

	noPing  bool                       // from Options; read-only after Dial
	onEvent func(zkproto.WatcherEvent) // from Options; read-only after Dial
}

// Dial connects to addr, creates a session and returns the connection.
// ctx bounds the dial and the handshake; without a deadline the handshake
// may take up to the requested session timeout. If the server answers
// with a zero timeout (an expired or invalid session) the error wraps
// zkproto.ErrSessionExpired.
func Dial(ctx context.Context, addr string, opts Options) (*Conn, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	dial := opts.DialContext
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("zkclient: dial %s: %w", addr, err)
	}
	if opts.TLS != nil {
		if nc, err = dialTLS(ctx, nc, addr, opts.TLS); err != nil {
			return nil, err
		}
	}
	c, err := start(ctx, nc, addr, opts)
	if err != nil {
		return nil, err
	}
	if err := c.restoreWatches(ctx, opts.Watches); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// start performs the handshake on a fresh connection and starts its
// goroutines. opts has its defaults filled in.
func start(ctx context.Context, nc net.Conn, addr string, opts Options) (*Conn, error) {
	br := bufio.NewReaderSize(nc, readBufferBytes)
	resp, err := handshake(ctx, nc, br, opts)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("zkclient: handshake with %s: %w", addr, err)
	}
	var xid int32
	if opts.SASL != nil {
		if xid, err = authenticate(ctx, nc, br, addr, opts); err != nil {
			nc.Close()
			return nil, fmt.Errorf("zkclient: authenticate to %s: %w", addr, err)
		}
	}
	c := newConn(nc, addr, opts, resp)
	c.xid = xid // the SASL exchange's requests took the first xids
	c.log.Debug("session established", "addr", addr,
		"session", fmt.Sprintf("%#x", c.sessionID), "timeout", c.timeout)
	c.wg.Add(2)
	go c.readLoop(br)
	go c.writeLoop()
	return c, nil
}

// handshake sends the ConnectRequest for a new session and reads the
// ConnectResponse.
func handshake(ctx context.Context, nc net.Conn, br *bufio.Reader, opts Options) (zkproto.ConnectResponse, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(opts.SessionTimeout)
	}
	if err := nc.SetDeadline(deadline); err != nil {
		return zkproto.ConnectResponse{}, err
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	req := zkproto.ConnectRequest{
		TimeoutMs:    int32(opts.SessionTimeout.Milliseconds()),
		Passwd:       make([]byte, zkproto.PasswdLen),
		ReadOnly:     opts.ReadOnly,
		HasReadOnly:  true,
		SessionID:    opts.SessionID,
		LastZxidSeen: opts.LastZxidSeen,
	}
	if opts.SessionID != 0 {
		copy(req.Passwd, opts.SessionPasswd)
	}
	var resp zkproto.ConnectResponse
	_, err := nc.Write(zkproto.AppendFrame(nil, jute.Marshal(&req)))
	if err == nil {
		var frame []byte
		if frame, err = zkproto.ReadFrame(br, nil, opts.MaxBuffer); err == nil {
			resp, err = zkproto.DecodeConnectResponse(frame, opts.MaxBuffer)
		}
	}
	if !stop() || ctx.Err() != nil {
		return resp, context.Cause(ctx) // the deadline fired: say why
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && ok:
		// The socket's deadline is ctx's, and it can fire a moment first.
		return resp, fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return resp, fmt.Errorf("no response within the session timeout %v: %w", opts.SessionTimeout, err)
	case err != nil:
		return resp, err
	case resp.TimeoutMs <= 0:
		return resp, fmt.Errorf("server answered timeout %d: %w", resp.TimeoutMs, zkproto.ErrSessionExpired)
	case len(resp.Passwd) != zkproto.PasswdLen:
		return resp, fmt.Errorf("session password of %d bytes, want %d", len(resp.Passwd), zkproto.PasswdLen)
	}
	return resp, nc.SetDeadline(time.Time{})
}

// newConn builds the Conn for an established session.
func newConn(nc net.Conn, addr string, opts Options, resp zkproto.ConnectResponse) *Conn {
	timeout := time.Duration(resp.TimeoutMs) * time.Millisecond
	c := &Conn{
		nc:           nc,
		addr:         addr,
		log:          opts.Logger,
		maxBuffer:    opts.MaxBuffer,
		sessionID:    resp.SessionID,
		passwd:       append([]byte(nil), resp.Passwd...),
		timeout:      timeout,
		pingInterval: timeout / 3,
		readTimeout:  timeout * 2 / 3,
		readOnly:     resp.ReadOnly,
		events:       make(chan zkproto.WatcherEvent, opts.EventBuffer),
		book:         newWatchBook(),
		wake:         make(chan struct{}, 1),
		done:         make(chan struct{}),
		start:        time.Now(),
		dec:          jute.NewDecoder(nil, opts.MaxBuffer),
		noPing:       opts.noPing,
		onEvent:      opts.onEvent,
	}
	c.lastZxid.Store(opts.LastZxidSeen)
	c.pending.init()
	c.auths.init()
	return c
}

// SessionID returns the session's id.
func (c *Conn) SessionID() int64 { return c.sessionID }

// SessionPasswd returns the session's password, for Options.SessionPasswd
// when reattaching to the session.
func (c *Conn) SessionPasswd() []byte { return append([]byte(nil), c.passwd...) }

// SessionTimeout returns the session timeout the server granted.
func (c *Conn) SessionTimeout() time.Duration { return c.timeout }

// ReadOnly reports whether the server said it is in read-only mode.
func (c *Conn) ReadOnly() bool { return c.readOnly }

// Addr returns the address the connection was dialled with.
func (c *Conn) Addr() string { return c.addr }

// LastZxid returns the largest zxid seen in a reply header, 0 if none.
func (c *Conn) LastZxid() int64 { return c.lastZxid.Load() }

// lastHeard returns when the last frame arrived (the handshake's, if none
// since).
func (c *Conn) lastHeard() time.Time { return c.start.Add(time.Duration(c.lastRecv.Load())) }

// Events returns the channel of watch notifications. It is closed once
// the connection has ended and every call has completed.
func (c *Conn) Events() <-chan zkproto.WatcherEvent { return c.events }

// Done is closed once the connection has ended and every call has
// completed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns nil while the connection is up, and afterwards why it ended:
// ErrClosed after Close, else an error as described in the package doc.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Go sends a request and returns at once; cb receives the result on the
// reader goroutine (see the package doc for what it may do). Callbacks
// run in the order Go was called. cb may be nil. req must be the request
// record of op (zkproto.NewRequest), or nil for ops without a body.
//
// Go never blocks, and the connection does not bound the requests in
// flight: the caller does (a load generator keeps a window). Frames the
// server is slow to read wait in memory.
//
// OpAuth is sent with xid -4. OpPing and OpCloseSession are reserved for
// the connection itself (Close ends the session), and ops with no known
// reply format are rejected; these, and calls after Close, complete at
// once, on the calling goroutine, with an error.
func (c *Conn) Go(op zkproto.Op, req jute.Record, cb func(Result)) {
	if cb == nil {
		cb = func(Result) {}
	}
	if op == zkproto.OpPing || op == zkproto.OpCloseSession {
		cb(Result{Err: fmt.Errorf("zkclient: op %v is reserved for the connection", op)})
		return
	}
	if _, ok := zkproto.NewResponse(op); !ok {
		cb(Result{Err: fmt.Errorf("zkclient: op %v: %w", op, zkproto.ErrUnimplemented)})
		return
	}
	c.send(op, req, c.book.track(op, req, cb), false)
}

// Do sends a request and waits for its reply or for ctx to end. It returns
// the reply header, the decoded body (see Result) and the error. If ctx
// ends first, the request stays in flight and its reply is discarded.
func (c *Conn) Do(ctx context.Context, op zkproto.Op, req jute.Record) (zkproto.ReplyHeader, jute.Record, error) {
	if err := ctx.Err(); err != nil {
		return zkproto.ReplyHeader{}, nil, err
	}
	ch := make(chan Result, 1)
	c.Go(op, req, func(r Result) { ch <- r })
	select {
	case r := <-ch:
		return r.Header, r.Record, r.Err
	case <-ctx.Done():
		return zkproto.ReplyHeader{}, nil, context.Cause(ctx)
	}
}

// send queues one request. internal is set for the closeSession that
// Close sends after closing has started.
func (c *Conn) send(op zkproto.Op, req jute.Record, cb func(Result), internal bool) {
	c.mu.Lock()
	switch {
	case c.finished:
		err := c.err
		c.mu.Unlock()
		cb(Result{Err: err})
		return
	case c.closing && !internal:
		c.mu.Unlock()
		cb(Result{Err: ErrClosed})
		return
	}
	xid := zkproto.XidAuth
	if op != zkproto.OpAuth {
		xid = c.nextXidLocked()
	}
	// Once the connection has failed, the call is only queued: the reader
	// fails it after every earlier call, which keeps completions FIFO.
	if c.err == nil {
		c.out = zkproto.AppendRequestFrame(c.out, zkproto.RequestHeader{Xid: xid, Op: op}, req)
	}
	cl := call{xid: xid, op: op, req: req, cb: cb}
	if op == zkproto.OpAuth {
		c.auths.push(cl)
	} else {
		c.pending.push(cl)
	}
	c.mu.Unlock()
	c.kick()
}

// nextXidLocked returns the next ordinary xid: 1, 2, ..., 2^31-1, 1, ...
func (c *Conn) nextXidLocked() int32 {
	if c.xid == math.MaxInt32 {
		c.xid = 0
	}
	c.xid++
	return c.xid
}

// kick wakes the writer.
func (c *Conn) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Close ends the session: it sends closeSession, waits for the reply (at
// most the read timeout, 2/3 of the session timeout), closes the socket
// and waits for the connection's goroutines to exit. The server deletes
// the session's ephemeral nodes before it replies. Close returns nil if
// the session was closed cleanly, else why not (for example, the
// connection had already failed). Calls made after Close has started fail
// with ErrClosed; a second Close waits for the first and returns nil.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		<-c.done
		c.wg.Wait()
		return nil
	}
	c.closing = true
	c.mu.Unlock()

	ch := make(chan Result, 1)
	c.send(zkproto.OpCloseSession, nil, func(r Result) { ch <- r }, true)
	timer := time.NewTimer(c.readTimeout)
	defer timer.Stop()
	var err error
	select {
	case r := <-ch:
		err = r.Err
	case <-timer.C:
		err = fmt.Errorf("no reply within %v", c.readTimeout)
	}
	c.fail(ErrClosed)
	<-c.done
	c.wg.Wait()
	if err != nil {
		return fmt.Errorf("zkclient: close session %#x: %w", c.sessionID, err)
	}
	return nil
}

// fail records err as the reason the connection ends, unless a reason is
// already recorded, and closes the socket. The reader then wakes up, fails
// every pending call in order and exits; only the reader completes calls,
// so completions stay FIFO however the connection ends.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	c.nc.Close()
}
