package clientconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ErrHandshake wraps a failed TLS handshake: a plaintext client on a TLS
// port, a certificate the trust store does not vouch for, a client cut off
// or too slow.
var ErrHandshake = errors.New("clientconn: tls handshake failed")

// tlsHandshakeRecord is the content type of a TLS handshake record, the
// first byte a TLS client sends.
const tlsHandshakeRecord = 0x16

// startTLS runs the TLS handshake (after telling TLS from plaintext with
// PlaintextToo) before deadline and returns the stream the protocol runs
// over.
func (c *Conn) startTLS(deadline time.Time) (net.Conn, error) {
	if !deadline.IsZero() {
		c.nc.SetDeadline(deadline)
	}
	raw := c.nc
	if c.cfg.PlaintextToo {
		var first [1]byte
		if _, err := io.ReadFull(c.nc, first[:]); err != nil {
			return nil, err
		}
		raw = &prefixConn{Conn: c.nc, prefix: first[:]}
		if first[0] != tlsHandshakeRecord {
			c.nc.SetWriteDeadline(time.Time{})
			return raw, nil
		}
	}
	tc := tls.Server(raw, c.cfg.TLS)
	if st := c.cfg.Stats; st != nil {
		st.HandshakesInProgress.Add(1)
		defer st.HandshakesInProgress.Add(-1)
	}
	if err := tc.Handshake(); err != nil {
		if st := c.cfg.Stats; st != nil && st.FailedHandshakes != nil {
			st.FailedHandshakes.Inc()
		}
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	// The read deadline stays until the opening frame is read.
	c.nc.SetWriteDeadline(time.Time{})
	st := tc.ConnectionState()
	c.tlsState = &st
	return tc, nil
}

// prefixConn gives back bytes already read from its connection before
// reading more.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
