package bookie

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"time"

	"keeper/ledgerstore/bkproto"
)

// startTLS answers a START_TLS request on a bookie with TLS as
// BookKeeper's does (docs/bookie-tls.md): EOK in plain text, then a TLS
// handshake on the same socket, as the server side. It returns the reader
// of the secured connection, or nil when the connection must close: the
// handshake failed (an untrusted or missing client certificate with
// tlsClientAuthentication, garbage instead of a ClientHello) or did not
// finish within the handshake timeout.
//
// The switch waits until every earlier request of the connection has
// been answered and written, so that no response crosses it; BookKeeper's
// client sends START_TLS first and nothing until it is done. A second
// START_TLS on a secured connection is answered EBADREQ.
func (c *conn) startTLS(cl call, req *bkproto.Request, r *bufio.Reader) *bufio.Reader {
	b := c.b
	h := req.GetHeader()
	if c.secure {
		cl.sendStatus(h, bkproto.StatusCode_EBADREQ)
		return r
	}
	timeout := b.tls.HandshakeTimeout()
	// One deadline for the wait, the EOK and the handshake: a client that
	// sends START_TLS and then nothing, or garbage, costs its own
	// connection for at most this long.
	timer := time.AfterFunc(timeout, c.close)
	defer timer.Stop()
	if !c.acquire(func() gate {
		if c.writes+c.reads > 1 || c.unsent > 0 { // the START_TLS call itself is one read
			return connGate
		}
		return open
	}) {
		cl.drop()
		return nil
	}
	c.mu.Unlock()
	// The writer is idle and nothing can queue a response: the reader,
	// which alone makes calls, is here. So the EOK goes straight to the
	// socket, ahead of the handshake.
	frame, err := bkproto.AppendFrame(nil, &bkproto.Response{Header: responseHeader(h),
		Status: bkproto.StatusCode_EOK.Enum(), StartTLSResponse: &bkproto.StartTLSResponse{}})
	cl.drop()
	if err != nil {
		b.log.Error("cannot encode a response", "op", h.GetOperation().String(), "err", err)
		return nil
	}
	_ = c.raw.SetDeadline(time.Now().Add(timeout))
	if _, err := c.raw.Write(frame); err != nil {
		return nil
	}
	// Bytes the client sent after START_TLS without waiting for the EOK
	// are already in r: they are the start of the handshake.
	tc := tls.Server(&bufferedConn{Conn: c.raw, r: io.MultiReader(bufferedBytes(r), c.raw)}, b.tls.Server())
	if err := tc.Handshake(); err != nil {
		b.log.Warn("tls handshake failed; closing the connection", "remote", c.raw.RemoteAddr().String(), "err", err)
		return nil
	}
	if !timer.Stop() {
		return nil // the deadline passed as the handshake finished: the connection is closing
	}
	_ = c.raw.SetDeadline(time.Time{})
	c.mu.Lock()
	c.nc, c.secure = tc, true
	c.mu.Unlock()
	b.log.Debug("connection secured", "remote", c.raw.RemoteAddr().String(),
		"version", tls.VersionName(tc.ConnectionState().Version), "cipherSuite", tls.CipherSuiteName(tc.ConnectionState().CipherSuite))
	return bufio.NewReaderSize(tc, readBufferBytes)
}

// bufferedBytes returns a copy of what r holds unread.
func bufferedBytes(r *bufio.Reader) io.Reader {
	buf, _ := r.Peek(r.Buffered())
	return bytes.NewReader(append([]byte(nil), buf...))
}

// bufferedConn is a connection whose reads come from r first.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
