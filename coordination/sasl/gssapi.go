package sasl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"keeper/coordination/kerberos"
)

// layerNone is RFC 4752's "no security layer", the bit 0x01 of the
// negotiation's first byte (0x02 is integrity, 0x04 confidentiality).
// ZooKeeper's server offers authentication only, Java's default ("auth"),
// and keeper does the same.
const layerNone = 0x01

// GSSAPIMaxBufBytes is the receive buffer size the server announces in
// the security-layer offer: Java's default (javax.security.sasl.maxbuffer),
// which ZooKeeper does not change. With no layer chosen nothing is ever
// wrapped afterwards, so the number is only what a client reads.
const GSSAPIMaxBufBytes = 65536

// GSSAPIConfig configures the server side of GSSAPI, shared by all
// connections.
type GSSAPIConfig struct {
	// Acceptor checks tickets for the server's principal. It is not safe
	// for concurrent use: every exchange runs on the caller's one
	// goroutine (zkcore's loop).
	Acceptor *kerberos.Acceptor
	// Now reads the clock for the ticket and authenticator checks.
	Now func() time.Time
	// Authorize maps the authenticated principal and the authorization id
	// the client asked for to the connection's identity, as ZooKeeper's
	// SaslServerCallbackHandler does.
	Authorize func(authnID, authzID string) (string, error)
}

func (c *GSSAPIConfig) validate() error {
	if c.Acceptor == nil || c.Now == nil || c.Authorize == nil {
		return errors.New("sasl: GSSAPI needs an acceptor, a clock and Authorize")
	}
	return nil
}

// gssStep is where a GSSAPI exchange stands.
type gssStep int

const (
	gssContext gssStep = iota // waiting for the initiator's context token
	gssEmpty                  // context established; waiting for the empty token
	gssLayer                  // offer sent; waiting for the client's choice
	gssDone                   // complete, or failed
)

// GSSAPI is the server side of one SASL GSSAPI exchange (RFC 4752) as
// Java's server runs it for ZooKeeper:
//
//	client                                   server
//	initial context token (AP-REQ)   ->
//	                                 <-      AP-REP, when mutual authentication was asked
//	empty token                      ->      (only after an AP-REP)
//	                                 <-      wrap([layers=0x01, maxbuf 65536])
//	wrap([0x01, maxbuf, authzid])    ->
//	                                 <-      null token (complete)
//
// Without mutual authentication (Java's client asks for none) the first
// reply is the wrapped offer itself, as Java's server sends it.
//
// Every failure is an *Error that fails the exchange (AuthFailed), but for
// a security-layer answer shorter than four bytes, which aborts it (the
// connection is closed without a reply), as in ZooKeeper.
type GSSAPI struct {
	cfg  *GSSAPIConfig
	step gssStep
	ctx  *kerberos.Context
	id   string
}

// NewGSSAPI starts an exchange. cfg must be valid.
func NewGSSAPI(cfg *GSSAPIConfig) *GSSAPI { return &GSSAPI{cfg: cfg} }

// Mechanism reports "GSSAPI".
func (m *GSSAPI) Mechanism() string { return "GSSAPI" }

// Complete reports whether the client has authenticated.
func (m *GSSAPI) Complete() bool { return m.step == gssDone && m.id != "" }

// AuthorizationID is the connection's identity once Complete.
func (m *GSSAPI) AuthorizationID() string { return m.id }

// offer returns the wrapped security-layer offer: no layer, and the
// receive buffer size.
func (m *GSSAPI) offer() ([]byte, error) {
	offer := binary.BigEndian.AppendUint32(nil, GSSAPIMaxBufBytes)
	offer[0] = layerNone
	m.step = gssLayer
	return m.ctx.Wrap(offer)
}

// Evaluate takes the client's next token.
func (m *GSSAPI) Evaluate(token []byte) ([]byte, error) {
	out, err := m.evaluate(token)
	if err != nil {
		m.step, m.id = gssDone, ""
		var se *Error
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, &Error{Reason: "GSSAPI: " + err.Error()}
	}
	return out, nil
}

func (m *GSSAPI) evaluate(token []byte) ([]byte, error) {
	switch m.step {
	case gssContext:
		ctx, out, err := m.cfg.Acceptor.Accept(token, m.cfg.Now())
		if err != nil {
			return nil, err
		}
		m.ctx = ctx
		if out == nil {
			// No mutual authentication, so no AP-REP: Java's server
			// sends the security-layer offer in this same reply.
			return m.offer()
		}
		m.step = gssEmpty
		return out, nil
	case gssEmpty:
		if len(token) != 0 {
			return nil, errors.New("expected an empty token after the context was established")
		}
		return m.offer()
	case gssLayer:
		msg, err := m.ctx.Unwrap(token)
		if err != nil {
			return nil, err
		}
		if len(msg) < 4 {
			// Java's server reads past the end of the message: a runtime
			// error, and ZooKeeper closes the connection without a reply.
			return nil, &Error{Abort: true, Reason: fmt.Sprintf("GSSAPI: security-layer answer of %d bytes", len(msg))}
		}
		if msg[0]&layerNone == 0 {
			// As Java's server: the choice must include one offered
			// layer; the other bits are taken as they come, and mean
			// nothing here since ZooKeeper wraps no later traffic.
			return nil, fmt.Errorf("client chose security layers %#x; only 0x01 (none) is offered", msg[0])
		}
		authz := m.ctx.Peer
		if len(msg) > 4 {
			if !utf8.Valid(msg[4:]) {
				return nil, errors.New("authorization id is not UTF-8")
			}
			authz = string(msg[4:])
		}
		id, err := m.cfg.Authorize(m.ctx.Peer, authz)
		if err != nil {
			return nil, err
		}
		if id == "" {
			return nil, fmt.Errorf("%s has no identity", m.ctx.Peer)
		}
		m.step, m.id = gssDone, id
		return nil, nil
	}
	return nil, errors.New("token after the exchange ended")
}
