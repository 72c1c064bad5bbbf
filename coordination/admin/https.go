package admin

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"keeper/internal/metric"
)

// HTTPS is how the admin server speaks TLS (admin.forceHttps,
// admin.portUnification, admin.needClientAuth; docs/tls.md). The zero value
// is plaintext HTTP only.
type HTTPS struct {
	// TLS serves the handshakes: the key store, the trust store and, with
	// admin.needClientAuth, a required and verified client certificate.
	// nil means plaintext only.
	TLS *tls.Config
	// PlaintextToo: plaintext HTTP is served on the same port beside HTTPS
	// (admin.portUnification without admin.forceHttps). The first byte of
	// a connection decides: a TLS handshake record starts with 0x16, which
	// no HTTP method does.
	PlaintextToo bool
}

// tlsHandshakeRecord is the first byte of a TLS ClientHello.
const tlsHandshakeRecord = 0x16

// stsHeaderValue is the Strict-Transport-Security header ZooKeeper's admin
// server sets on every HTTPS response: a day, subdomains included.
const stsHeaderValue = "max-age=86400; includeSubDomains"

// listener wraps ln for h: every connection TLS (forced HTTPS), every
// connection deciding on its first byte (port unification, counting the
// plaintext ones in insecure), or ln itself.
func (h HTTPS) listener(ln net.Listener, insecure *metric.Counter) net.Listener {
	switch {
	case h.TLS == nil:
		return ln
	case h.PlaintextToo:
		return unifiedListener{Listener: ln, tls: h.TLS, insecure: insecure}
	default:
		return tls.NewListener(ln, h.TLS)
	}
}

// unifiedListener hands out connections that become TLS or stay plaintext
// on their first byte. The peek happens in the connection's first Read,
// on the HTTP server's per-connection goroutine and under its read
// deadline, so a silent client holds up no one else.
type unifiedListener struct {
	net.Listener
	tls      *tls.Config
	insecure *metric.Counter // plaintext connections, as ZooKeeper's insecure_admin_count
}

// Accept wraps the next connection.
func (l unifiedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &unifiedConn{Conn: c, tls: l.tls, insecure: l.insecure}, nil
}

// unifiedConn is a connection on a port-unification listener. Until its
// first Read it is undecided; then it is either a tls.Server over the raw
// connection (with the peeked byte put back) or the raw connection.
type unifiedConn struct {
	net.Conn
	tls      *tls.Config
	insecure *metric.Counter

	once    sync.Once
	err     error                    // the first byte could not be read; set by once
	decided atomic.Pointer[decision] // set by once; read by Write, Close and handlers
}

// decision is what a unifiedConn's first byte decided.
type decision struct {
	conn  net.Conn // tls.Server over the raw connection, or the raw connection
	isTLS bool
}

// bufferedConn reads through r, which holds bytes peeked from Conn.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// decide peeks the first byte and picks TLS or plaintext.
func (c *unifiedConn) decide() {
	c.once.Do(func() {
		// One byte is all the peek needs; the reader's smallest buffer
		// bounds what it holds.
		r := bufio.NewReaderSize(c.Conn, 16)
		first, err := r.Peek(1)
		if err != nil {
			c.err = err
			return
		}
		bc := &bufferedConn{Conn: c.Conn, r: r}
		if first[0] == tlsHandshakeRecord {
			c.decided.Store(&decision{conn: tls.Server(bc, c.tls), isTLS: true})
			return
		}
		if c.insecure != nil {
			c.insecure.Inc()
		}
		c.decided.Store(&decision{conn: bc})
	})
}

// Read reads from the decided connection.
func (c *unifiedConn) Read(p []byte) (int, error) {
	c.decide()
	if c.err != nil {
		return 0, c.err
	}
	return c.decided.Load().conn.Read(p)
}

// Write writes to the decided connection. The HTTP server reads a request
// before it writes, so Write never decides; before a decision it fails.
func (c *unifiedConn) Write(p []byte) (int, error) {
	d := c.decided.Load()
	if d == nil {
		return 0, errors.New("admin: write before the first read")
	}
	return d.conn.Write(p)
}

// Close closes the decided connection (a TLS one sends close_notify), or
// the raw one.
func (c *unifiedConn) Close() error {
	if d := c.decided.Load(); d != nil {
		return d.conn.Close()
	}
	return c.Conn.Close()
}

// connKey is the context key under which the HTTP server keeps a
// request's connection, for secureRequest.
type connKey struct{}

// rememberConn is the HTTP server's ConnContext: it keeps the connection
// so that a handler can ask whether a port-unification connection turned
// out to be TLS.
func rememberConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// secureRequest reports whether r came over TLS.
func secureRequest(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	uc, ok := r.Context().Value(connKey{}).(*unifiedConn)
	if !ok {
		return false
	}
	d := uc.decided.Load()
	return d != nil && d.isTLS
}

// withSTS sets the Strict-Transport-Security header on responses to HTTPS
// requests, as ZooKeeper's admin server does.
func withSTS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if secureRequest(r) {
			w.Header().Set("Strict-Transport-Security", stsHeaderValue)
		}
		next.ServeHTTP(w, r)
	})
}
