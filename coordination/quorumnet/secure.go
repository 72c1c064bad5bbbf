package quorumnet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// Certificates hands out the stores' configuration for a handshake that
// begins now: Certificates holds this server's key and chain, ClientCAs
// the certificates a peer's must chain to (nil: the system's roots), with
// the versions, suites and ClientAuth to use. Implementations may reload
// their files between calls; the result is not modified.
// (clienttls.Server.Current provides it.)
type Certificates interface {
	Current() *tls.Config
}

// TLS secures both ports (zoo.cfg sslQuorum, portUnification,
// ssl.quorum.*; docs/tls.md). A transport without one speaks plaintext
// only.
type TLS struct {
	// Certificates gives each handshake its key, chain and trust.
	Certificates Certificates
	// Dial makes this server speak TLS on the connections it opens
	// (sslQuorum). Without it, it dials in plaintext.
	Dial bool
	// AcceptPlaintext lets plaintext peers in on both ports besides TLS
	// ones (portUnification). Without it, a peer that does not open with
	// a TLS handshake is refused.
	AcceptPlaintext bool
	// HostnameVerification checks, on both sides of every connection,
	// that the peer's certificate names the peer's IP address (or, with
	// ReverseDNS, a name the address resolves back to), as ZooKeeper's
	// quorum trust manager does (ssl.quorum.hostnameVerification).
	HostnameVerification bool
	// ReverseDNS allows the reverse lookup (ssl.quorum.allowReverseDnsLookup).
	ReverseDNS bool
	// DetectionTimeout bounds the wait for an accepted connection's first
	// byte, which tells TLS from plaintext (0: DialTimeout;
	// ssl.quorum.handshakeDetectionTimeoutMillis).
	DetectionTimeout time.Duration
}

// mode names what the ports accept and how this server dials, for the
// log: off (plaintext), only (TLS), or unified (both accepted), with the
// dialling side after a slash when it is plaintext.
func (s *TLS) mode() string {
	switch {
	case s == nil:
		return "off"
	case !s.AcceptPlaintext:
		return "only"
	case s.Dial:
		return "unified"
	}
	return "unified/plaintext-dials"
}

// tlsRecordHandshake is the first byte of a TLS connection: a handshake
// record. A plaintext peer opens with a QuorumPacket's type (0 for the
// packets that open a link), the election handshake's protocol version
// (0xff) or a QuorumAuthPacket's magic (0x5f), never 0x16.
const tlsRecordHandshake = 0x16

// reverseLookupTimeout bounds the reverse DNS lookup of a host name check.
const reverseLookupTimeout = 2 * time.Second

var (
	errPlaintextRefused = errors.New("plaintext connection on a TLS-only port (sslQuorum without portUnification)")
	errNoPeerCert       = errors.New("peer presented no certificate")
)

// secureDialed runs the client side of the TLS handshake on a connection
// this server opened, when it dials in TLS; it returns the connection to
// use, tracked for Close in raw's place.
func (t *Transport) secureDialed(raw net.Conn) (net.Conn, error) {
	sec := t.cfg.TLS
	if sec == nil || !sec.Dial {
		return raw, nil
	}
	cur := sec.Certificates.Current()
	ip := remoteIP(raw)
	cfg := &tls.Config{
		MinVersion:   cur.MinVersion,
		MaxVersion:   cur.MaxVersion,
		CipherSuites: cur.CipherSuites,
		// The server's certificate is checked by verifyPeer against the
		// trust store and the address dialled, as ZooKeeper checks it, not
		// against a server name.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return t.verifyPeer(cs, cur.ClientCAs, x509.ExtKeyUsageServerAuth, ip)
		},
	}
	if len(cur.Certificates) > 0 {
		cert := cur.Certificates[0]
		cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return clientCertificate(cri, &cert), nil
		}
	}
	return t.handshake(raw, tls.Client(raw, cfg))
}

// clientCertificate is what a dialling member answers the accepting
// member's CertificateRequest with: its certificate, if the request names
// no CA or one that issued a certificate of its chain (and its key can
// sign with a scheme the request lists), and otherwise no certificate, as
// ZooKeeper's key manager (Java's PKIX X509KeyManager) holds back a chain
// whose issuers the request does not name or whose key type it cannot
// use. Under
// ssl.quorum.clientAuth=want the accepting member then lets the dialling
// one in without a certificate; under need it refuses it either way.
// (The accepting member names the subjects of its trust store, Go's
// ClientCAs; docs/tls.md, "Between servers".)
func clientCertificate(cri *tls.CertificateRequestInfo, cert *tls.Certificate) *tls.Certificate {
	if cri.SupportsCertificate(cert) != nil {
		return &tls.Certificate{}
	}
	return cert
}

// secureAccepted tells a TLS peer from a plaintext one by the first byte
// of an accepted connection and runs the server side of the handshake;
// it returns the connection to use, tracked for Close in raw's place.
func (t *Transport) secureAccepted(raw net.Conn) (net.Conn, error) {
	sec := t.cfg.TLS
	if sec == nil {
		return raw, nil
	}
	timeout := sec.DetectionTimeout
	if timeout <= 0 {
		timeout = t.cfg.DialTimeout
	}
	var first [1]byte
	if err := raw.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(raw, first[:]); err != nil {
		return nil, fmt.Errorf("waiting for the first byte: %w", err)
	}
	if err := raw.SetReadDeadline(time.Time{}); err != nil {
		return nil, err
	}
	conn := &prefixedConn{Conn: raw, prefix: first[:]}
	if first[0] != tlsRecordHandshake {
		if !sec.AcceptPlaintext {
			return nil, errPlaintextRefused
		}
		return t.retrack(raw, conn)
	}
	cur := sec.Certificates.Current()
	cfg := cur.Clone()
	if sec.HostnameVerification {
		ip := remoteIP(raw)
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return nil // ClientAuth decided a certificate was not needed
			}
			return t.checkHost(cs.PeerCertificates[0], ip)
		}
	}
	return t.handshake(raw, tls.Server(conn, cfg))
}

// handshake runs c's handshake within DialTimeout, then tracks c for
// Close in raw's place.
func (t *Transport) handshake(raw net.Conn, c *tls.Conn) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(t.ctx, t.cfg.DialTimeout)
	defer cancel()
	if err := c.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	return t.retrack(raw, c)
}

// retrack makes Close close c instead of raw, which c wraps; if the
// transport closed meanwhile, it fails.
func (t *Transport) retrack(raw, c net.Conn) (net.Conn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.conns[raw]; !ok || t.closed {
		return nil, ErrClosed
	}
	delete(t.conns, raw)
	t.conns[c] = struct{}{}
	return c, nil
}

// verifyPeer checks the server's chain against the trust store (roots;
// nil: the system's) and, with HostnameVerification, its name.
func (t *Transport) verifyPeer(cs tls.ConnectionState, roots *x509.CertPool, usage x509.ExtKeyUsage, ip net.IP) error {
	if len(cs.PeerCertificates) == 0 {
		return errNoPeerCert
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	leaf := cs.PeerCertificates[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return err
	}
	if !t.cfg.TLS.HostnameVerification {
		return nil
	}
	return t.checkHost(leaf, ip)
}

// checkHost checks that cert names ip, or with ReverseDNS a name ip
// resolves back to: ZooKeeper's quorum trust manager checks the socket's
// address on both sides, the client's too.
func (t *Transport) checkHost(cert *x509.Certificate, ip net.IP) error {
	if ip == nil {
		return errors.New("hostname verification: no peer address")
	}
	err := cert.VerifyHostname(ip.String())
	if err == nil || !t.cfg.TLS.ReverseDNS {
		return err
	}
	ctx, cancel := context.WithTimeout(t.ctx, reverseLookupTimeout)
	defer cancel()
	names, lerr := net.DefaultResolver.LookupAddr(ctx, ip.String())
	if lerr != nil {
		return err
	}
	for _, n := range names {
		if cert.VerifyHostname(strings.TrimSuffix(n, ".")) == nil {
			return nil
		}
	}
	return err
}

// remoteIP is the IP address of the far end of c, nil if it has none.
func remoteIP(c net.Conn) net.IP {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP
	}
	return nil
}

// prefixedConn is a connection whose first bytes were read already, to
// tell TLS from plaintext; Read returns them first.
type prefixedConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixedConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
