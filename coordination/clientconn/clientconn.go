// Package clientconn drives one client socket: it reads length-prefixed
// frames, decodes them on its own goroutine and hands them to a Handler, and
// writes what the server queues for it, in order, batching small frames into
// few writes.
//
// A connection starts with either a four-letter word (spec §8.1), answered
// with text and a close, or a ConnectRequest. A frame whose length is
// negative or above jute.maxbuffer closes the connection, as Apache
// ZooKeeper does. Reading pauses while MaxOutstanding requests await their
// replies, so one client cannot queue unbounded work.
package clientconn

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
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
	// Closed reports that the connection is gone; err says why (nil for a
	// close the server asked for).
	Closed(c *Conn, err error)
}

// Config bounds a connection.
type Config struct {
	// MaxBuffer is jute.maxbuffer: the largest frame accepted.
	MaxBuffer int
	// MaxOutstanding is how many requests may await replies before reading
	// pauses.
	MaxOutstanding int
	// MaxPendingOutputBytes bounds output queued for a client that does not
	// read; beyond it the connection is closed.
	MaxPendingOutputBytes int
	// HandshakeTimeout bounds the wait for the first frame.
	HandshakeTimeout time.Duration
	// Logger receives per-connection debug logs; nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns Apache ZooKeeper's limits.
func DefaultConfig() Config {
	return Config{
		MaxBuffer:             jute.DefaultMaxBuffer,
		MaxOutstanding:        1000,
		MaxPendingOutputBytes: 64 << 20,
		HandshakeTimeout:      10 * time.Second,
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
	nc     net.Conn
	remote netip.AddrPort
	cfg    Config
	h      Handler
	log    *slog.Logger

	credits chan struct{} // one token per request awaiting its reply

	mu         sync.Mutex
	out        []byte // mu guards out, closeAfter, released, closed
	closeAfter bool
	released   int
	closed     bool
	wake       chan struct{}
	done       chan struct{}
	closeOnce  sync.Once
}

// New wraps a new connection; Start begins serving it.
func New(id zkcore.ConnID, nc net.Conn, cfg Config, h Handler) *Conn {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Conn{
		id: id, nc: nc, cfg: cfg, h: h, log: logger,
		credits: make(chan struct{}, cfg.MaxOutstanding),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
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

// Send queues frames for the client. completed is the number of requests
// they answer; close asks for the connection to be closed once they are
// written. Send never blocks.
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
	overflow := len(c.out) > c.cfg.MaxPendingOutputBytes
	c.mu.Unlock()
	if overflow {
		c.shutdown(ErrOutputOverflow)
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Close closes the connection now, dropping unsent output.
func (c *Conn) Close() { c.shutdown(nil) }

func (c *Conn) shutdown(err error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.out = nil
		c.mu.Unlock()
		close(c.done)
		c.nc.Close()
		c.h.Closed(c, err)
	})
}

// readLoop reads the opening frame, then requests, until the socket fails.
func (c *Conn) readLoop() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	err := c.readOpening(r)
	for err == nil {
		err = c.readRequest(r)
	}
	if errors.Is(err, errAnswered) {
		return
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		err = nil
	}
	c.shutdown(err)
}

// readOpening handles the first four bytes: a four-letter word, or the
// length of the ConnectRequest.
func (c *Conn) readOpening(r *bufio.Reader) error {
	if c.cfg.HandshakeTimeout > 0 {
		c.nc.SetReadDeadline(time.Now().Add(c.cfg.HandshakeTimeout))
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
// so that at most MaxOutstanding requests are unanswered.
func (c *Conn) readRequest(r *bufio.Reader) error {
	select {
	case c.credits <- struct{}{}:
	case <-c.done:
		return net.ErrClosed
	}
	var first [4]byte
	if _, err := io.ReadFull(r, first[:]); err != nil {
		return err
	}
	payload, err := readPayload(r, first, c.cfg.MaxBuffer)
	if err != nil {
		return err
	}
	req, err := zkcore.DecodeRequest(payload, c.cfg.MaxBuffer)
	if err != nil {
		return err
	}
	c.h.Request(c, req)
	return nil
}

// readPayload reads the frame whose length is in first, refusing lengths
// outside [0, maxBuffer] before allocating.
func readPayload(r io.Reader, first [4]byte, maxBuffer int) ([]byte, error) {
	n := int32(uint32(first[0])<<24 | uint32(first[1])<<16 | uint32(first[2])<<8 | uint32(first[3]))
	if n < 0 || int(n) > maxBuffer {
		return nil, fmt.Errorf("%w: length %d", zkproto.ErrFrameTooLarge, n)
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
		out, closeAfter, released := c.out, c.closeAfter, c.released
		c.out, c.released = nil, 0
		c.mu.Unlock()
		if len(out) > 0 {
			if _, err := c.nc.Write(out); err != nil {
				c.shutdown(err)
				return
			}
		}
		for range released {
			select {
			case <-c.credits:
			default:
			}
		}
		if closeAfter {
			c.shutdown(nil)
			return
		}
	}
}
