package quorumnet

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"keeper/coordination/kerberos"
	"keeper/coordination/sasl"
	"keeper/coordination/zab"
)

// SASL authenticates members to each other on both ports, as Apache
// ZooKeeper 3.8 does with quorum.auth.enableSasl (docs/sasl.md): the side
// that opens a connection (the learner, on the quorum port; the dialler,
// on the election port) authenticates to the side that accepts it, before
// the connection's own traffic, with DIGEST-MD5 or, when its JAAS section
// logs in with Kerberos, GSSAPI. Each side picks its mechanism on its own,
// as ZooKeeper's does.
type SASL struct {
	// LearnerRequire makes this server authenticate, with Username and
	// Password, or with KerberosLearner when set, on every connection it
	// opens (quorum.auth.learnerRequireSasl). Without it it sends no
	// authentication, as ZooKeeper's learner then does.
	LearnerRequire     bool
	Username, Password string
	// KerberosLearner, when set, authenticates this server with GSSAPI
	// instead of a password: it starts an exchange with the server at
	// host (the host of that server's server.N line), whose service
	// principal is quorum.auth.kerberos.servicePrincipal with _HOST
	// replaced by host. It may block on the KDC; the exchange's deadline
	// does not bound it, the KDC client's own timeouts do.
	KerberosLearner func(host string) (*sasl.GSSAPIClient, error)
	// KerberosPrincipal is the principal KerberosLearner logged in as,
	// name@REALM, for the log.
	KerberosPrincipal string
	// ServerRequire closes an accepted connection that does not
	// authenticate, or fails to (quorum.auth.serverRequireSasl). Without
	// it such a connection is served: the rolling change to SASL.
	ServerRequire bool
	// Users are the user names and passwords accepted (the JAAS
	// QuorumServer section). A peer authenticates as itself: the
	// authorization id it asks for must be its user name.
	Users map[string]string
	// KerberosServer, when set, accepts GSSAPI with this acceptor (the
	// QuorumServer section's Krb5LoginModule) instead of the Users.
	KerberosServer *kerberos.Acceptor
	// AuthorizedHosts are the hosts of the configuration's server.N lines.
	// A Kerberos peer is let in only as service/host@REALM with one of
	// them as host, asking for its own principal as authorization id, as
	// ZooKeeper's SaslQuorumServerCallbackHandler checks (its fix of
	// CVE-2023-44981).
	AuthorizedHosts map[string]bool
	// Now reads the clock for the Kerberos checks (nil: time.Now).
	Now func() time.Time
	// Entropy supplies nonces (nil: crypto/rand.Reader).
	Entropy io.Reader
}

// mode names the SASL mode for the log: off; optional (this server sends
// no authentication and lets every peer in); learner (it authenticates,
// and lets every peer in); required (both).
func (s *SASL) mode() string {
	switch {
	case s == nil:
		return "off"
	case s.ServerRequire:
		return "required"
	case s.LearnerRequire:
		return "learner"
	}
	return "optional"
}

func (s *SASL) validate() error {
	if s.LearnerRequire && s.Username == "" && s.KerberosLearner == nil {
		return errors.New("quorumnet: SASL.LearnerRequire without a user name or a Kerberos login")
	}
	return nil
}

// authorizeKerberos is ZooKeeper's check of a Kerberos learner: it asks
// for itself, and its principal splits at every '/' and '@' (trailing
// empty parts dropped, as Java's String.split drops them) into exactly
// service, host and realm, with host one of the configuration's.
func (s *SASL) authorizeKerberos(authn, authz string) (string, error) {
	if authn != authz {
		return "", fmt.Errorf("%s asked for authorization id %q", authn, authz)
	}
	parts := splitPrincipal(authz)
	if len(parts) != 3 || !s.AuthorizedHosts[parts[1]] {
		return "", fmt.Errorf("%s is not authorized to connect: not service/host@REALM with the host of a server of the configuration", authz)
	}
	return authz, nil
}

// splitPrincipal splits p at every '/' and '@' and drops the empty parts
// at its end.
func splitPrincipal(p string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '/' || p[i] == '@' {
			parts = append(parts, p[start:i])
			start = i + 1
		}
	}
	parts = append(parts, p[start:])
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// maxAuthRounds bounds the server's challenges in one exchange, as
// ZooKeeper's does (DIGEST-MD5 needs two).
const maxAuthRounds = 5

var (
	errAuthRequired = errors.New("sasl: peer did not authenticate and quorum.auth.serverRequireSasl is true")
	errAuthRefused  = errors.New("sasl: the server refused our authentication")
)

// learnerAuth authenticates this server on a connection it opened to
// addr, within DialTimeout, reading exactly the server's replies. Without
// SASL.LearnerRequire it does nothing.
func (t *Transport) learnerAuth(conn net.Conn, addr string) error {
	s := t.cfg.SASL
	if s == nil || !s.LearnerRequire {
		return nil
	}
	cl, first, who, err := t.learnerClient(addr)
	if err != nil {
		return fmt.Errorf("quorum sasl as %s: %w", who, err)
	}
	if err := conn.SetDeadline(time.Now().Add(t.cfg.DialTimeout)); err != nil {
		return err
	}
	if _, err := conn.Write(EncodeAuthPacket(AuthInProgress, first)); err != nil {
		return err
	}
	p, err := readAuthPacket(conn, MaxAuthTokenBytes)
	for err == nil && !cl.Complete() {
		var resp []byte
		switch p.Status {
		case AuthSuccess:
			if resp, err = cl.Evaluate(p.Token); err == nil && resp != nil {
				err = errors.New("sasl: protocol error: the server ended the exchange before us")
			}
		case AuthInProgress:
			if resp, err = cl.Evaluate(p.Token); err == nil {
				if _, err = conn.Write(EncodeAuthPacket(AuthInProgress, resp)); err == nil {
					p, err = readAuthPacket(conn, MaxAuthTokenBytes)
				}
			}
		default:
			err = errAuthRefused
		}
	}
	if err == nil && p.Status != AuthSuccess {
		err = errAuthRefused
	}
	if err != nil {
		return fmt.Errorf("quorum sasl as %s: %w", who, err)
	}
	t.logger.Info("quorum sasl: authenticated to peer", "remote", conn.RemoteAddr().String(), "as", who)
	return conn.SetDeadline(time.Time{})
}

// saslClient is the side of an exchange that authenticates.
type saslClient interface {
	Evaluate(challenge []byte) ([]byte, error)
	Complete() bool
}

// learnerClient starts this server's side of an exchange with the server
// at addr, and returns its first token and, for the log, who it
// authenticates as.
func (t *Transport) learnerClient(addr string) (saslClient, []byte, string, error) {
	s := t.cfg.SASL
	if s.KerberosLearner == nil {
		// DIGEST-MD5 has no initial response: an empty token opens.
		return sasl.NewDigestMD5Client(&sasl.DigestMD5ClientConfig{Protocol: sasl.QuorumProtocol, ServerName: sasl.QuorumServerName,
			Username: s.Username, Password: s.Password, Entropy: t.entropy()}), []byte{}, strconv.Quote(s.Username), nil
	}
	who := "kerberos"
	if s.KerberosPrincipal != "" {
		who = strconv.Quote(s.KerberosPrincipal)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, who, err
	}
	cl, err := s.KerberosLearner(host)
	if err != nil {
		return nil, nil, who, err
	}
	return cl, cl.InitialResponse(), who, nil
}

// serverAuth authenticates the peer on a connection this server accepted,
// reading from br, the connection's reader from then on. An error means
// the connection must be closed: the peer failed, or did not try, while
// SASL.ServerRequire. Otherwise the connection goes on; without
// ServerRequire a peer that failed is logged and served, as ZooKeeper
// serves it.
func (t *Transport) serverAuth(port string, conn net.Conn, br *bufio.Reader) error {
	s := t.cfg.SASL
	if s == nil {
		return nil
	}
	if err := conn.SetDeadline(time.Now().Add(t.cfg.DialTimeout)); err != nil {
		return err
	}
	head, err := br.Peek(8)
	if err != nil || int64(binary.BigEndian.Uint64(head)) != AuthMagic {
		if s.ServerRequire {
			if err != nil {
				return fmt.Errorf("%w: %w", errAuthRequired, err)
			}
			return errAuthRequired
		}
		// Not authenticating: the bytes (or the error) are the
		// connection's own, left to its reader.
		return conn.SetDeadline(time.Time{})
	}
	user, err := t.runServerAuth(conn, br)
	if err != nil {
		if s.ServerRequire {
			return fmt.Errorf("quorum sasl: %w", err)
		}
		t.logger.Warn("quorum sasl failed; serving the peer, since quorum.auth.serverRequireSasl is false",
			"port", port, "remote", conn.RemoteAddr().String(), "err", err)
	} else {
		t.logger.Info("quorum sasl: peer authenticated", "port", port, "remote", conn.RemoteAddr().String(), "user", user)
	}
	return conn.SetDeadline(time.Time{})
}

// runServerAuth runs the server's side of the exchange whose first packet
// br holds, and returns the authenticated user. A failed exchange sends
// AuthError to the peer.
func (t *Transport) runServerAuth(conn net.Conn, br *bufio.Reader) (string, error) {
	s := t.cfg.SASL
	var mech sasl.Mechanism
	if s.KerberosServer != nil {
		now := s.Now
		if now == nil {
			now = time.Now
		}
		mech = &lockedMechanism{mu: &t.kerberosMu, m: sasl.NewGSSAPI(&sasl.GSSAPIConfig{
			Acceptor: s.KerberosServer, Now: now, Authorize: s.authorizeKerberos})}
	} else {
		mech = t.digestMechanism()
	}
	p, err := readAuthPacket(br, MaxAuthTokenBytes)
	for round := 1; err == nil; round++ {
		var reply []byte
		if reply, err = mech.Evaluate(p.Token); err != nil {
			break
		}
		if mech.Complete() {
			if _, err = conn.Write(EncodeAuthPacket(AuthSuccess, reply)); err != nil {
				return "", err
			}
			return mech.AuthorizationID(), nil
		}
		if round >= maxAuthRounds {
			err = errors.New("sasl: too many rounds")
			break
		}
		if _, err = conn.Write(EncodeAuthPacket(AuthInProgress, reply)); err != nil {
			return "", err
		}
		p, err = readAuthPacket(br, MaxAuthTokenBytes)
	}
	conn.Write(EncodeAuthPacket(AuthError, []byte{})) // best effort: the peer may be gone
	return "", err
}

// digestMechanism is the server side of DIGEST-MD5 with the Users.
func (t *Transport) digestMechanism() sasl.Mechanism {
	s := t.cfg.SASL
	return sasl.NewDigestMD5(&sasl.DigestMD5Config{
		Protocol: sasl.QuorumProtocol, ServerName: sasl.QuorumServerName,
		Password: func(user string) (string, bool) { p, ok := s.Users[user]; return p, ok },
		Authorize: func(authn, authz string) (string, error) {
			if authn != authz {
				return "", fmt.Errorf("authorization id %q is not the user", authz)
			}
			return authz, nil
		},
		Entropy: t.entropy(),
	})
}

// lockedMechanism runs a mechanism's steps under mu: a Kerberos acceptor
// (its replay cache) serves one exchange at a time, and every accepted
// connection runs its exchange on its own goroutine.
type lockedMechanism struct {
	mu *sync.Mutex
	m  sasl.Mechanism
}

func (l *lockedMechanism) Evaluate(token []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m.Evaluate(token)
}

func (l *lockedMechanism) Complete() bool          { return l.m.Complete() }
func (l *lockedMechanism) AuthorizationID() string { return l.m.AuthorizationID() }
func (l *lockedMechanism) Mechanism() string       { return l.m.Mechanism() }

// closing reports whether Close has begun: failures then are expected.
func (t *Transport) closing() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func (t *Transport) entropy() io.Reader {
	if t.cfg.SASL != nil && t.cfg.SASL.Entropy != nil {
		return t.cfg.SASL.Entropy
	}
	return rand.Reader
}

// mayAdmit reports whether admitPeerLocked would let id in, without
// learning it: a cheap check before the exchange.
func (t *Transport) mayAdmit(id zab.PeerID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.knownPeerLocked(id) {
		return true
	}
	return t.cfg.AcceptUnknown && id > 0 && id != t.cfg.ID && t.learned < MaxLearnedPeers
}
