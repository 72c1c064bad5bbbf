package bookie

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"keeper/ledgerstore/bkproto"
)

// readBufferBytes is each connection's read buffer: a few typical adds.
const readBufferBytes = 64 << 10

// maxSpareBytes bounds the write buffer a connection keeps for reuse, so
// that a burst of large read responses does not pin its memory.
const maxSpareBytes = 1 << 20

// writeChunkBytes is the most of a batch the writer hands to the socket
// at once; each chunk must be taken within StuckClientTimeout, so a client
// reading slower than this per timeout (8.7 KB/s at the default) counts as
// stuck and is closed.
const writeChunkBytes = 256 << 10

// conn is one client connection. Its reader goroutine decodes requests
// and hands them to the bookie; responses, which the journal goroutine,
// fence completions and long polls produce in any order, are queued and
// written by its writer goroutine in batches. What it holds is bounded as
// limits.go describes.
type conn struct {
	b   *Bookie
	raw net.Conn // the socket; closing it ends every read and write
	// nc is what requests are read from and responses written to: raw,
	// or after START_TLS the TLS connection over it. The reader sets it,
	// under mu, while the writer is idle (tls.go); the writer reads it
	// under mu.
	nc net.Conn

	// mu guards the fields below it.
	mu         sync.Mutex
	out        []byte        // framed responses not yet handed to the writer
	outHeld    held          // the calls answered in out
	spare      []byte        // the writer's previous buffer, for reuse
	writes     int           // write calls in progress: read, response not yet written
	reads      int           // other calls in progress
	reqBytes   int64         // the calls' bytes (call.bytes)
	extraBytes int64         // the part beyond the reserve of responses queued or being written
	unsent     int64         // response bytes queued or being written
	peakBytes  int64         // the most reqBytes+extraBytes has been
	dead       bool          // closed: responses are dropped
	changed    chan struct{} // closed, and cleared, when the connection releases anything; made by a waiter

	// secure is set by the reader once a START_TLS handshake succeeded.
	secure bool

	// v2 is set by the reader, for good, once a frame is not a v3 Request:
	// from then on the connection speaks BookKeeper's v2 protocol
	// (docs/bookkeeper-protocol.md §6.2). Only the reader touches it.
	v2 bool

	turn   chan struct{} // cap 1: held while building a response that carries entry data
	wake   chan struct{} // cap 1: out has data
	closed chan struct{}
	once   sync.Once
}

func newConn(b *Bookie, nc net.Conn) *conn {
	return &conn{
		b: b, raw: nc, nc: nc,
		turn:   make(chan struct{}, 1),
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

// close closes the connection; the goroutines then exit. What the queued
// responses held is released; responses sent afterwards are dropped. It
// does not wait for the writer, so closing a stuck connection blocks no
// one.
func (c *conn) close() {
	c.once.Do(func() {
		c.mu.Lock()
		c.dead = true
		h := c.outHeld
		c.unsent -= int64(len(c.out))
		c.out, c.spare, c.outHeld = nil, nil, held{}
		c.releaseLocked(h)
		c.mu.Unlock()
		c.b.mem.release(h.bytes())
		close(c.closed)
		// The socket, not a TLS connection over it: a TLS close waits for
		// a writer stuck on a client that reads nothing.
		_ = c.raw.Close()
	})
}

// readLoop reads and dispatches requests until the connection ends. As
// BookKeeper's bookie does, it decodes each frame as a v3 Request until one
// is not a Request at all, and from that frame on decodes v2 packets
// (docs/bookkeeper-protocol.md §6.2), which bkproto translates into the v3
// requests they stand for: both protocols run the same handlers, and only
// the responses are encoded differently (call.v2). A frame that is too
// large, or that is not a v2 packet either, closes the connection: it
// cannot be resynchronised. A request that is malformed for its operation
// gets its status (EBADREQ, EBADVERSION, EUA), as a Java bookie answers,
// and the connection goes on.
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
	for {
		if !c.awaitRead() {
			return
		}
		frame, fb, err := c.readFrame(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				b.log.Debug("closing connection", "remote", c.nc.RemoteAddr().String(), "err", err)
			}
			return
		}
		req, v2, aliased, err := c.decode(frame, fb)
		if !aliased {
			fb.put() // nothing refers to the frame any more
			fb = nil
		}
		var perr *bkproto.Error
		if err != nil && (!errors.As(err, &perr) || req.GetHeader() == nil) {
			fb.put()
			b.log.Debug("closing connection on an undecodable frame", "remote", c.nc.RemoteAddr().String(), "err", err)
			return
		}
		cl := call{c: c, v2: v2, write: isWrite(req.GetHeader().GetOperation()), bytes: int64(len(frame)) + requestReserveBytes}
		if !c.admit(cl) {
			fb.put()
			return
		}
		if err != nil {
			cl.sendStatus(req.GetHeader(), perr.Status) // req may live in fb: answer first
			fb.put()
			continue
		}
		if aliased {
			// An ADD_ENTRY (all the aliasing decoders alias): fb is
			// returned once the journal has copied the entry.
			b.addEntry(cl, req.Header, req.AddRequest, fb)
			continue
		}
		if req.GetHeader().GetOperation() == bkproto.OperationType_START_TLS && b.tls != nil {
			if r = c.startTLS(cl, req, r); r == nil {
				return
			}
			continue
		}
		b.dispatch(cl, req)
	}
}

// decode decodes one request frame in the connection's protocol, and
// switches the connection to v2 at the first frame that is not a v3
// Request. v2 is non-nil for a v2 request: what its response repeats.
// aliased means that the request is an ADD_ENTRY whose byte fields alias
// frame (bkproto.DecodeRequestAliased, or for v2
// bkproto.DecodeV2RequestAliased) and which lives in fb's AddBuffer if fb
// is not nil; otherwise nothing refers to frame or fb.
func (c *conn) decode(frame []byte, fb *frameBuf) (req *bkproto.Request, v2 *bkproto.V2Request, aliased bool, err error) {
	var buf *bkproto.AddBuffer
	if fb != nil {
		buf = &fb.add
	} else {
		buf = new(bkproto.AddBuffer)
	}
	if !c.v2 {
		req, aliased, err := bkproto.DecodeRequestAliasedInto(buf, frame)
		if req != nil {
			return req, nil, aliased, err
		}
		c.v2 = true
		c.b.log.Debug("connection speaks v2", "remote", c.nc.RemoteAddr().String())
	}
	req, v2r, aliased, err := bkproto.DecodeV2RequestAliasedInto(buf, frame)
	return req, &v2r, aliased, err
}

// writeLoop writes queued responses until the connection closes. Only
// once a response is written do its call's charges go.
func (c *conn) writeLoop() {
	defer c.b.tasks.Done()
	for {
		select {
		case <-c.wake:
		case <-c.closed:
			return
		}
		c.mu.Lock()
		data, h, nc := c.out, c.outHeld, c.nc
		if len(data) == 0 {
			c.mu.Unlock()
			continue
		}
		c.out, c.spare, c.outHeld = c.spare[:0], nil, held{} // senders fill the other buffer meanwhile
		c.mu.Unlock()
		began := time.Now()
		err := c.write(nc, data)
		observe(c.b.m.channelWrite, began, err == nil)
		c.mu.Lock()
		c.unsent -= int64(len(data))
		c.releaseLocked(h)
		if err == nil && !c.dead && cap(data) <= maxSpareBytes {
			c.spare = data[:0]
		}
		unsent := c.unsent
		c.mu.Unlock()
		c.b.mem.release(h.bytes())
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.b.log.Warn("closing a client that takes no responses", "remote", c.raw.RemoteAddr().String(),
					"timeout", c.b.cfg.StuckClientTimeout, "unsentBytes", unsent+int64(len(data)))
				if tc, ok := c.raw.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // reset: the kernel drops the socket buffer too, instead of retrying it
				}
			}
			c.close()
			return
		}
	}
}

// write writes data to nc, a chunk at a time, each within
// StuckClientTimeout.
func (c *conn) write(nc net.Conn, data []byte) error {
	for len(data) > 0 {
		n := min(len(data), writeChunkBytes)
		if err := nc.SetWriteDeadline(time.Now().Add(c.b.cfg.StuckClientTimeout)); err != nil {
			return err
		}
		if _, err := nc.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// responseHeader is the header of a response to a request with header h:
// the same operation, txnId and priority, at version 3 (even when the
// request claimed another, so that the client can read the EBADVERSION).
func responseHeader(h *bkproto.BKPacketHeader) *bkproto.BKPacketHeader {
	return &bkproto.BKPacketHeader{Version: versionV3, Operation: h.Operation, TxnId: h.TxnId, Priority: h.Priority}
}

// versionV3 is shared by every response header; nothing writes it.
var versionV3 = bkproto.ProtocolVersionV3.Enum()
