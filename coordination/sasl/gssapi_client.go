package sasl

import (
	"encoding/binary"
	"errors"
	"fmt"

	"keeper/coordination/kerberos"
)

// GSSAPIClient is the side of one SASL GSSAPI exchange (RFC 4752) that
// authenticates, as Java's SASL client runs it for a ZooKeeper learner
// (docs/sasl.md, "Kerberos between servers"):
//
//	learner                                  server
//	initial context token (AP-REQ)   ->      (the initial response)
//	                                 <-      AP-REP (mutual authentication)
//	empty token                      ->
//	                                 <-      wrap([layers, maxbuf])
//	wrap([0x01, 0, authzid])         ->      no security layer; complete
//
// The learner asks for no security layer, and the server must offer it.
type GSSAPIClient struct {
	init    *kerberos.Initiator
	first   []byte
	authzID string
	step    gssClientStep
}

type gssClientStep uint8

const (
	gssClientAPRep gssClientStep = iota // waiting for the AP-REP
	gssClientOffer                      // waiting for the wrapped offer
	gssClientDone                       // complete, or failed
)

// NewGSSAPIClient starts an exchange over a context whose initial token
// is first. authzID is the authorization id sent at the end: Java's
// learner sends its own principal, name@REALM, which ZooKeeper's server
// requires.
func NewGSSAPIClient(init *kerberos.Initiator, first []byte, authzID string) *GSSAPIClient {
	return &GSSAPIClient{init: init, first: first, authzID: authzID}
}

// InitialResponse is the first token: the initial context token.
func (c *GSSAPIClient) InitialResponse() []byte { return c.first }

// Complete reports whether the last token has been made; the exchange
// succeeded when the server then reports success.
func (c *GSSAPIClient) Complete() bool { return c.step == gssClientDone && c.init != nil }

// Evaluate takes the server's next token and returns the reply.
func (c *GSSAPIClient) Evaluate(challenge []byte) ([]byte, error) {
	out, err := c.evaluate(challenge)
	if err != nil {
		c.step, c.init = gssClientDone, nil
		return nil, fmt.Errorf("GSSAPI: %w", err)
	}
	return out, nil
}

func (c *GSSAPIClient) evaluate(challenge []byte) ([]byte, error) {
	switch {
	case c.init == nil:
		return nil, errors.New("the exchange failed")
	case c.step == gssClientAPRep:
		if err := c.init.Reply(challenge); err != nil {
			return nil, err
		}
		c.step = gssClientOffer
		return []byte{}, nil
	case c.step == gssClientOffer:
		offer, err := c.init.Unwrap(challenge)
		if err != nil {
			return nil, err
		}
		if len(offer) != 4 {
			return nil, fmt.Errorf("security-layer offer of %d bytes, want 4", len(offer))
		}
		if offer[0]&layerNone == 0 {
			return nil, fmt.Errorf("server offers security layers %#x, without 0x01 (none)", offer[0])
		}
		// No layer: the maximum buffer size is 0 (RFC 4752 §3.1).
		answer := binary.BigEndian.AppendUint32(nil, 0)
		answer[0] = layerNone
		out, err := c.init.Wrap(append(answer, c.authzID...))
		if err != nil {
			return nil, err
		}
		c.step = gssClientDone
		return out, nil
	}
	return nil, errors.New("server token after the exchange ended")
}
