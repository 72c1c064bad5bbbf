// Package clientconn drives one client socket: it reads length-prefixed
// frames, decodes them on its own goroutine and hands them to a Handler, and
// writes what the server queues for it, in order, batching small frames into
// few writes.
//
// A connection starts with either a four-letter word (a four-byte ASCII
// command such as "ruok", answered with text and a close), or a
// ConnectRequest. A frame whose length is negative or above jute.maxbuffer
// closes the connection, as Apache ZooKeeper does.
//
// What one client can make the server hold is bounded (docs/backpressure.md):
// reading pauses while MaxOutstanding requests await their replies, while
// the connection's requests in flight exceed MaxInflightRequestBytes, and
// while the server as a whole is over its Limiter; the core stops running
// a connection's requests while its unsent output is over budget (it learns
// what was written through Handler.Written); and a connection whose writes
// make no progress for WriteTimeout is closed.
//
// With Config.TLS the connection speaks TLS: the reader goroutine runs the
// handshake before it reads the opening frame, and HandshakeTimeout bounds
// both together, so a client that opens TCP and never speaks TLS is closed
// like one that never sends its ConnectRequest. With PlaintextToo as well
// (ZooKeeper's client.portUnification), the first byte decides: 0x16, the
// type of a TLS handshake record, means TLS; anything else is a plaintext
// client (a ConnectRequest's length or a four-letter word never starts
// with it).
package clientconn

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/internal/metric"
)

// Handler receives what connections read. Calls for one connection come from
// its reader goroutine, in order; calls for different connections may be
// concurrent.
type Handler interface {
	// FourLetter runs a four-letter word and returns its text output.
	FourLetter(c *Conn, cmd string, arg int64) []byte
	// Connect delivers the ConnectRequest that opens the session.
	Connect(c *Conn, req *zkproto.ConnectRequest)
	// Request delivers one decoded request.
	Request(c *Conn, r zkcore.Request)
	// Written reports that n bytes of the output queued by Send were
	// written to the socket. It is called from the writer goroutine.
	Written(c *Conn, n int)
	// Closed reports that the connection is gone; err says why (nil for a
	// close the server asked for). It may be called from any goroutine that
	// calls Close, including the one that calls Send, so it must not wait
	// for that goroutine.
	Closed(c *Conn, err error)
}

// Config bounds a connection.
type Config struct {
	// MaxBuffer is jute.maxbuffer: the largest frame accepted.
	MaxBuffer int
	// MaxOutstanding is how many requests may await replies before reading
	// pauses.
	MaxOutstanding int
	// MaxInflightRequestBytes bounds the bytes of one connection's requests
	// read and not yet answered; reading pauses above it. A request larger
	// than it is still read when nothing else of the connection is in
	// flight. 0 means DefaultMaxInflightRequestBytes.
	MaxInflightRequestBytes int
	// MaxPendingOutputBytes is a last resort: output queued for a client
	// beyond it closes the connection. The core's output budget keeps
	// queued output far below it.
	MaxPendingOutputBytes int
	// HandshakeTimeout bounds the wait for the first frame.
	HandshakeTimeout time.Duration
	// WriteTimeout closes a connection when a write of up to
	// writeChunkBytes makes no progress for this long: a client that
	// stopped reading, or reads a byte now and then. 0 means no timeout.
	WriteTimeout time.Duration
	// Limiter, shared by a server's connections, bounds their requests in
	// flight together; nil means no server-wide bound.
	Limiter *Limiter
	// TLS, when not nil, makes the connection speak TLS with this
	// configuration (see the package comment).
	TLS *tls.Config
	// PlaintextToo, with TLS, serves a client that opens without TLS too.
	PlaintextToo bool
	// Stats, shared by a server's connections, counts their TLS
	// handshakes and plaintext starts; nil counts nothing.
	Stats *Stats
	// Logger receives per-connection debug logs; nil discards them.
	Logger *slog.Logger
}

// Stats counts how a server's connections started, for ZooKeeper's mntr
// figures of the same names (docs/observability.md). Safe for concurrent
// use.
type Stats struct {
	// HandshakesInProgress is the TLS handshakes under way
	// (outstanding_tls_handshake).
	HandshakesInProgress atomic.Int64
	// FailedHandshakes counts the TLS handshakes that failed: a plaintext
	// client on a TLS-only port, a certificate refused, a client cut off or
	// too slow (unsuccessful_handshake). nil counts nothing.
	FailedHandshakes *metric.Counter
	// SessionlessExpired counts the connections closed because no
	// ConnectRequest (nor four-letter word) came within HandshakeTimeout
	// (sessionless_connections_expired). nil counts nothing.
	SessionlessExpired *metric.Counter
	// PlaintextLoopback and PlaintextRemote count the connections served
	// without TLS, from a loopback address and from any other
	// (non_mtls_local_conn_count, non_mtls_remote_conn_count).
	PlaintextLoopback, PlaintextRemote atomic.Int64
}

// plaintext counts a connection served without TLS from addr.
func (s *Stats) plaintext(addr net.Addr) {
	if s == nil {
		return
	}
	if ta, ok := addr.(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		s.PlaintextRemote.Add(1)
		return
	}
	s.PlaintextLoopback.Add(1)
}

// DefaultMaxInflightRequestBytes is a connection's default request budget:
// several requests of jute.maxbuffer's default size, so a client that
// pipelines large writes keeps its throughput, while one that floods the
// server holds it to a few megabytes.
const DefaultMaxInflightRequestBytes = 8 << 20

// DefaultWriteTimeout is how long a write may make no progress before the
// connection is closed: ZooKeeper's default maximum session timeout, past
// which the client's session would be expiring anyway.
const DefaultWriteTimeout = 40 * time.Second

// writeChunkBytes is the largest single write. The write timeout applies
// to each chunk, so a client must read at least this much per WriteTimeout
// to stay connected.
const writeChunkBytes = 256 << 10

// DefaultConfig returns Apache ZooKeeper's limits.
func DefaultConfig() Config {
	return Config{
		MaxBuffer:               jute.DefaultMaxBuffer,
		MaxOutstanding:          1000,
		MaxInflightRequestBytes: DefaultMaxInflightRequestBytes,
		MaxPendingOutputBytes:   64 << 20,
		HandshakeTimeout:        10 * time.Second,
		WriteTimeout:            DefaultWriteTimeout,
	}
}

// errAnswered ends the reader of a four-letter-word connection: the writer
// closes the connection once the answer is written.
var errAnswered = errors.New("clientconn: four-letter word answered")

// ErrOutputOverflow means the client stopped reading while its output grew
// past Config.MaxPendingOutputBytes.
var ErrOutputOverflow = errors.New("clientconn: client not reading its replies")

// Conn is one client connection.
type Conn struct {
	id     zkcore.ConnID
	nc     net.Conn // the socket: deadlines and Close
	remote netip.AddrPort
	// tlsState is the handshake's outcome, nil for a plaintext client; set
	// by the reader before it delivers the opening frame.
	tlsState *tls.ConnectionState
	cfg      Config
	h        Handler
	log      *slog.Logger

	credits chan struct{} // one token per request awaiting its reply
	r       *bufio.Reader // the reader goroutine's buffered stream
	// writeDeadline is the socket's write deadline, the writer's own.
	writeDeadline time.Time

	mu sync.Mutex
	// stream carries the protocol: nc, or the TLS connection over it. The
	// reader sets it before it delivers the opening frame, so before
	// anything is sent.
	stream     net.Conn
	out        []byte // mu guards stream, out, closeAfter, released, closed, overflow, inflight, inflightBytes
	closeAfter bool
	released   int
	closed     bool
	overflow   bool // out passed MaxPendingOutputBytes: the writer closes
	// inflight holds the sizes of the requests read and not yet answered,
	// oldest first (replies come in request order); inflightBytes is their
	// sum. Send pops the answered ones.
	inflight      []int
	inflightBytes int
	answered      chan struct{} // cap 1: Send answered requests
	wake          chan struct{}
	done          chan struct{}
	closeOnce     sync.Once
	// lingering is closed when the server ends the connection after its
	// last reply (see linger); readerDone when the reader has returned.
	lingering  chan struct{}
	readerDone chan struct{}
}

// lingerTimeout bounds how long a connection the server ends waits for
// the client to read the last reply and close its side.
const lingerTimeout = time.Second

// errLingering ends the reader of a connection the server is ending.
var errLingering = errors.New("clientconn: connection ending")

// New wraps a new connection; Start begins serving it.
func New(id zkcore.ConnID, nc net.Conn, cfg Config, h Handler) *Conn {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Conn{
		id: id, nc: nc, stream: nc, cfg: cfg, h: h, log: logger,
		credits:    make(chan struct{}, cfg.MaxOutstanding),
		answered:   make(chan struct{}, 1),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		lingering:  make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	if c.cfg.MaxInflightRequestBytes <= 0 {
		c.cfg.MaxInflightRequestBytes = DefaultMaxInflightRequestBytes
	}
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		c.remote = ap
	}
	return c
}

// Start launches the connection's reader and writer goroutines.
func (c *Conn) Start() {
	go c.readLoop()
	go c.writeLoop()
}

// ID returns the connection's id.
func (c *Conn) ID() zkcore.ConnID { return c.id }

// Remote returns the client's address.
func (c *Conn) Remote() netip.AddrPort { return c.remote }

// TLS returns the TLS handshake's outcome, or nil for a plaintext client.
// It is set before Handler.Connect or Handler.FourLetter is called.
func (c *Conn) TLS() *tls.ConnectionState { return c.tlsState }

// Send queues frames for the client. completed is the number of requests
// they answer; close asks for the connection to be closed once they are
// written. Send never blocks and never calls the Handler: the server's
// loop calls it.
func (c *Conn) Send(data []byte, completed int, close bool) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if len(c.out) == 0 {
		c.out = data
	} else {
		c.out = append(c.out, data...)
	}
	c.released += completed
	c.closeAfter = c.closeAfter || close
	if len(c.out) > c.cfg.MaxPendingOutputBytes {
		c.overflow = true
	}
	n, bytes := c.popAnsweredLocked(completed)
	c.mu.Unlock()
	c.cfg.Limiter.release(n, bytes)
	if n > 0 {
		signal(c.answered)
	}
	signal(c.wake)
}

// popAnsweredLocked forgets the oldest n requests in flight and returns
// how many there were and their bytes. mu must be held.
func (c *Conn) popAnsweredLocked(n int) (int, int64) {
	n = min(n, len(c.inflight))
	var bytes int
	for _, size := range c.inflight[:n] {
		bytes += size
	}
	c.inflight = c.inflight[n:]
	if len(c.inflight) == 0 {
		c.inflight = nil
	}
	c.inflightBytes -= bytes
	return n, int64(bytes)
}

// signal wakes the goroutine waiting on ch (cap 1) without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// IsClosed reports whether the connection has closed.
func (c *Conn) IsClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Close closes the connection now, dropping unsent output.
func (c *Conn) Close() { c.shutdown(nil) }

func (c *Conn) shutdown(err error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.out = nil
		n, bytes := c.popAnsweredLocked(len(c.inflight))
		c.mu.Unlock()
		c.cfg.Limiter.release(n, bytes)
		close(c.done)
		c.nc.Close()
		c.h.Closed(c, err)
	})
}

// readLoop reads the opening frame, then requests, until the socket fails.
func (c *Conn) readLoop() {
	defer close(c.readerDone)
	var deadline time.Time
	if c.cfg.HandshakeTimeout > 0 {
		deadline = time.Now().Add(c.cfg.HandshakeTimeout)
	}
	var err error
	stream := c.nc
	if c.cfg.TLS != nil {
		stream, err = c.startTLS(deadline)
	}
	if err == nil && c.tlsState == nil {
		c.cfg.Stats.plaintext(c.nc.RemoteAddr())
	}
	if err == nil {
		c.mu.Lock()
		c.stream = stream
		c.mu.Unlock()
		err = c.readOpening(bufio.NewReaderSize(stream, 64<<10), deadline)
		if errors.Is(err, os.ErrDeadlineExceeded) && c.cfg.Stats != nil && c.cfg.Stats.SessionlessExpired != nil {
			c.cfg.Stats.SessionlessExpired.Inc()
		}
	}
	for err == nil {
		err = c.readRequest()
	}
	if errors.Is(err, errAnswered) {
		c.drain() // the writer ends the connection once the answer is out
		return
	}
	if c.isLingering() {
		c.drain()
		err = nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		err = nil
	}
	c.shutdown(err)
}

// readOpening handles the first four bytes: a four-letter word, or the
// length of the ConnectRequest.
func (c *Conn) readOpening(r *bufio.Reader, deadline time.Time) error {
	c.r = r
	if !deadline.IsZero() {
		c.nc.SetReadDeadline(deadline)
	}
	var first [4]byte
	if _, err := io.ReadFull(r, first[:]); err != nil {
		return err
	}
	if cmd, ok := zkproto.IsFourLetterWord(first); ok {
		return c.fourLetter(r, cmd)
	}
	payload, err := readPayload(r, first, c.cfg.MaxBuffer)
	if err != nil {
		return err
	}
	c.nc.SetReadDeadline(time.Time{})
	var req zkproto.ConnectRequest
	d := jute.NewDecoder(payload, c.cfg.MaxBuffer)
	req.Decode(d)
	if d.Err() != nil {
		return fmt.Errorf("clientconn: bad connect request: %w", d.Err())
	}
	c.credits <- struct{}{}
	c.mu.Lock()
	c.inflight = append(c.inflight, len(payload))
	c.inflightBytes += len(payload)
	c.mu.Unlock()
	if !c.cfg.Limiter.acquire(len(payload), func() int { return 0 }, c.done) {
		return net.ErrClosed
	}
	c.h.Connect(c, &req)
	return nil
}

// fourLetter answers a four-letter word and ends the connection.
func (c *Conn) fourLetter(r *bufio.Reader, cmd string) error {
	var arg int64
	if cmd == "stmk" {
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return err
		}
		d := jute.NewDecoder(b[:], 8)
		arg = d.Long()
	}
	text := c.h.FourLetter(c, cmd, arg)
	c.Send(text, 0, true)
	return errAnswered
}

// readRequest reads and hands over one request, waiting first for a credit
// so that at most MaxOutstanding requests are unanswered, then, once it
// knows the request's size, for room in the connection's and the server's
// budgets of requests in flight.
func (c *Conn) readRequest() error {
	r := c.r
	select {
	case c.credits <- struct{}{}:
	case <-c.lingering:
		return errLingering
	case <-c.done:
		return net.ErrClosed
	}
	var first [4]byte
	if _, err := io.ReadFull(r, first[:]); err != nil {
		return err
	}
	n, err := frameLength(first, c.cfg.MaxBuffer)
	if err != nil {
		return err
	}
	if err := c.admit(n); err != nil {
		return err
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return err
	}
	if c.isLingering() {
		return errLingering // the server ends the connection: no more requests
	}
	req, err := zkcore.DecodeRequest(payload, c.cfg.MaxBuffer)
	if err != nil {
		return err
	}
	c.h.Request(c, req)
	return nil
}

// isLingering reports whether the server is ending the connection.
func (c *Conn) isLingering() bool {
	select {
	case <-c.lingering:
		return true
	default:
		return false
	}
}

// drain waits until the server ends the connection, then reads and drops
// what the client still sends until it closes its side or the linger
// deadline passes: closing a socket with unread input makes the kernel
// send a reset, which can destroy the last reply on its way to the client.
func (c *Conn) drain() {
	select {
	case <-c.lingering:
	case <-c.done:
		return
	}
	if c.r != nil {
		io.Copy(io.Discard, c.r)
	}
}

// admit waits until a request of n bytes fits the connection's budget of
// requests in flight and the server's Limiter, and counts it in both. A
// connection with nothing in flight never waits.
func (c *Conn) admit(n int) error {
	for {
		c.mu.Lock()
		own := len(c.inflight)
		if own == 0 || c.inflightBytes+n <= c.cfg.MaxInflightRequestBytes {
			c.mu.Unlock()
			break
		}
		c.mu.Unlock()
		select {
		case <-c.answered:
		case <-c.lingering:
			return errLingering
		case <-c.done:
			return net.ErrClosed
		}
	}
	own := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.inflight)
	}
	if !c.cfg.Limiter.acquire(n, own, c.done) {
		return net.ErrClosed
	}
	c.mu.Lock()
	c.inflight = append(c.inflight, n)
	c.inflightBytes += n
	c.mu.Unlock()
	return nil
}

// frameLength decodes a frame's length prefix, refusing lengths outside
// [0, maxBuffer] before anything is allocated.
func frameLength(first [4]byte, maxBuffer int) (int, error) {
	n := int32(uint32(first[0])<<24 | uint32(first[1])<<16 | uint32(first[2])<<8 | uint32(first[3]))
	if n < 0 || int(n) > maxBuffer {
		return 0, fmt.Errorf("%w: length %d", zkproto.ErrFrameTooLarge, n)
	}
	return int(n), nil
}

// readPayload reads the frame whose length is in first, refusing lengths
// outside [0, maxBuffer] before allocating.
func readPayload(r io.Reader, first [4]byte, maxBuffer int) ([]byte, error) {
	n, err := frameLength(first, maxBuffer)
	if err != nil {
		return nil, err
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, err
	}
	return payload, nil
}

// writeLoop writes queued output in as few writes as possible.
func (c *Conn) writeLoop() {
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		c.mu.Lock()
		w, out, closeAfter, released, overflow := c.stream, c.out, c.closeAfter, c.released, c.overflow
		c.out, c.released = nil, 0
		c.mu.Unlock()
		if overflow {
			c.shutdown(ErrOutputOverflow)
			return
		}
		if len(out) > 0 {
			if err := c.write(w, out); err != nil {
				c.shutdown(err)
				return
			}
			c.h.Written(c, len(out))
		}
		for range released {
			select {
			case <-c.credits:
			default:
			}
		}
		if closeAfter {
			c.linger(w)
			return
		}
	}
}

// linger ends a connection after its last reply, as a web server does: it
// closes the sending side, so the client reads the reply and then end of
// file, lets the reader drop what the client still sends until it closes
// or lingerTimeout passes, and only then closes the socket.
func (c *Conn) linger(w net.Conn) {
	cw, ok := w.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		c.shutdown(nil)
		return
	}
	c.nc.SetReadDeadline(time.Now().Add(lingerTimeout))
	close(c.lingering)
	t := time.NewTimer(2 * lingerTimeout)
	defer t.Stop()
	select {
	case <-c.readerDone:
	case <-c.done:
	case <-t.C:
	}
	c.shutdown(nil)
}

// write writes out in chunks of at most writeChunkBytes, each of which
// must complete within WriteTimeout. The deadline moves only when it is
// more than an eighth of WriteTimeout short of a full one: moving it is a
// call into the network poller, and a server writing one watch event to
// each of a thousand connections would make a thousand of them. A chunk
// then has between 7/8 of WriteTimeout and all of it.
func (c *Conn) write(w net.Conn, out []byte) error {
	for len(out) > 0 {
		chunk := out[:min(len(out), writeChunkBytes)]
		if c.cfg.WriteTimeout > 0 {
			now := time.Now()
			if c.writeDeadline.Sub(now) < c.cfg.WriteTimeout-c.cfg.WriteTimeout/8 {
				c.writeDeadline = now.Add(c.cfg.WriteTimeout)
				c.nc.SetWriteDeadline(c.writeDeadline)
			}
		}
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		out = out[len(chunk):]
	}
	return nil
}
