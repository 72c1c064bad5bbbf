package bookie

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"

	"keeper/ledgerstore/bkproto"
)

// readBufferBytes is each connection's read buffer: a few typical adds.
const readBufferBytes = 64 << 10

// maxSpareBytes bounds the write buffer a connection keeps for reuse, so
// that a burst of large read responses does not pin its memory.
const maxSpareBytes = 1 << 20

// conn is one client connection. Its reader goroutine decodes requests
// and hands them to the bookie; responses, which the journal goroutine,
// fence completions and long polls produce in any order, are queued and
// written by its writer goroutine in batches.
type conn struct {
	b  *Bookie
	nc net.Conn
	// slots bounds the requests in progress: the reader takes one per
	// request, send gives it back. A client that pipelines without
	// reading its responses stops being read from.
	slots chan struct{}

	mu     sync.Mutex
	out    []byte        // framed responses not yet written; mu guards it
	spare  []byte        // the writer's previous buffer, for reuse
	wake   chan struct{} // cap 1: out has data
	closed chan struct{}
	once   sync.Once
}

func newConn(b *Bookie, nc net.Conn) *conn {
	return &conn{
		b: b, nc: nc,
		slots:  make(chan struct{}, b.cfg.MaxPendingRequestsPerConn),
		wake:   make(chan struct{}, 1),
		closed: make(chan struct{}),
	}
}

// acceptLoop accepts connections until the listener closes.
func (b *Bookie) acceptLoop() {
	defer b.loops.Done()
	for {
		nc, err := b.ln.Accept()
		if err != nil {
			select {
			case <-b.stopping:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			b.log.Warn("accept failed", "err", err)
			continue
		}
		c := newConn(b, nc)
		b.connMu.Lock()
		select {
		case <-b.stopping:
			b.connMu.Unlock()
			_ = nc.Close()
			return
		default:
		}
		b.conns[c] = struct{}{}
		b.tasks.Add(2)
		b.connMu.Unlock()
		go c.readLoop()
		go c.writeLoop()
	}
}

// close closes the connection; the goroutines then exit. Responses sent
// afterwards are dropped.
func (c *conn) close() {
	c.once.Do(func() {
		close(c.closed)
		_ = c.nc.Close()
	})
}

// readLoop reads and dispatches requests until the connection ends. A
// frame that is too large or is not a v3 Request at all closes the
// connection: it cannot be resynchronised. A Request that is malformed
// for its operation gets its status (EBADREQ, EBADVERSION, EUA), as a Java
// bookie answers, and the connection goes on.
func (c *conn) readLoop() {
	b := c.b
	defer b.tasks.Done()
	defer func() {
		c.close()
		b.connMu.Lock()
		delete(b.conns, c)
		b.connMu.Unlock()
	}()
	r := bufio.NewReaderSize(c.nc, readBufferBytes)
	buf := make([]byte, readBufferBytes)
	for {
		frame, err := bkproto.ReadFrame(r, buf, b.cfg.MaxFrameBytes)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				b.log.Debug("closing connection", "remote", c.nc.RemoteAddr().String(), "err", err)
			}
			return
		}
		req, err := bkproto.DecodeRequest(frame)
		var perr *bkproto.Error
		if err != nil && (!errors.As(err, &perr) || req.GetHeader() == nil) {
			b.log.Debug("closing connection on an undecodable frame", "remote", c.nc.RemoteAddr().String(), "err", err)
			return
		}
		select {
		case c.slots <- struct{}{}:
		case <-c.closed:
			return
		}
		if err != nil {
			c.sendStatus(req.GetHeader(), perr.Status)
			continue
		}
		b.dispatch(c, req)
	}
}

// writeLoop writes queued responses until the connection closes.
func (c *conn) writeLoop() {
	defer c.b.tasks.Done()
	for {
		select {
		case <-c.wake:
		case <-c.closed:
			return
		}
		c.mu.Lock()
		data := c.out
		if len(data) == 0 {
			c.mu.Unlock()
			continue
		}
		c.out, c.spare = c.spare[:0], nil // senders fill the other buffer meanwhile
		c.mu.Unlock()
		if _, err := c.nc.Write(data); err != nil {
			c.close()
			return
		}
		if cap(data) <= maxSpareBytes {
			c.mu.Lock()
			c.spare = data[:0]
			c.mu.Unlock()
		}
	}
}

// send queues a response and frees the request's slot. It never blocks,
// so the journal goroutine can complete adds through it.
func (c *conn) send(resp *bkproto.Response) {
	c.mu.Lock()
	out, err := bkproto.AppendFrame(c.out, resp)
	if err == nil {
		c.out = out
	}
	c.mu.Unlock()
	if err != nil {
		c.b.log.Error("cannot encode a response", "op", resp.GetHeader().GetOperation().String(), "err", err)
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
	select {
	case <-c.slots:
	default:
	}
}

// sendStatus answers a request with only a status: the header echoed, the
// overall status set, no sub-response.
func (c *conn) sendStatus(h *bkproto.BKPacketHeader, status bkproto.StatusCode) {
	c.send(&bkproto.Response{Header: responseHeader(h), Status: status.Enum()})
}

// responseHeader is the header of a response to a request with header h:
// the same operation, txnId and priority, at version 3 (even when the
// request claimed another, so that the client can read the EBADVERSION).
func responseHeader(h *bkproto.BKPacketHeader) *bkproto.BKPacketHeader {
	return &bkproto.BKPacketHeader{Version: versionV3, Operation: h.Operation, TxnId: h.TxnId, Priority: h.Priority}
}

// versionV3 is shared by every response header; nothing writes it.
var versionV3 = bkproto.ProtocolVersionV3.Enum()
