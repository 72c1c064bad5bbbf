package zkclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// This file is what a connection does between the socket and the session
// when asked to: the TLS handshake (Options.TLS) before the
// ConnectRequest, and the SASL exchange (Options.SASL) after the
// ConnectResponse and before any other request, as the Java client runs
// them (docs/sasl.md, docs/tls.md).

// SASLClient is the client side of one SASL exchange: a state machine that
// takes the server's token and returns the client's next one
// (sasl.DigestMD5Client is one). The exchange starts with an empty token
// from the client, as the Java client starts a mechanism without an
// initial response (DIGEST-MD5).
type SASLClient interface {
	// Evaluate takes the server's token and returns the client's reply;
	// nil once Complete.
	Evaluate(token []byte) ([]byte, error)
	// Complete reports whether the server has proved itself and the
	// exchange is over.
	Complete() bool
}

// initialResponder is a SASLClient whose mechanism starts with a token of
// its own (GSSAPI's initial context token), sent in the first sasl(102)
// request instead of an empty one, as the Java client sends a mechanism's
// initial response.
type initialResponder interface {
	InitialResponse() []byte
}

// maxSASLRounds bounds the sasl(102) round trips of one exchange:
// DIGEST-MD5 takes two, and a server that keeps answering tokens without
// the mechanism completing is refused rather than followed for ever.
const maxSASLRounds = 8

// ErrSASLRefused is wrapped, with zkproto.ErrAuthFailed, by the error of
// a dial whose SASL exchange failed: the server refused the credentials,
// or did not prove it knows them. The Java client goes to its AUTH_FAILED
// state then and never retries; a Session gives up the same way.
var ErrSASLRefused = errors.New("zkclient: SASL authentication failed")

// authFailed is the error of a failed SASL exchange.
func authFailed(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %w", ErrSASLRefused, fmt.Sprintf(format, args...), zkproto.ErrAuthFailed)
}

// dialTLS runs the TLS handshake on nc with cfg. Without a ServerName in
// cfg the host of addr is the name the server's certificate must bear
// (unless cfg skips that check and verifies the chain itself).
func dialTLS(ctx context.Context, nc net.Conn, addr string, cfg *tls.Config) (net.Conn, error) {
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("zkclient: TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// authenticate runs the SASL exchange right after the handshake, before
// the connection's goroutines start: sasl(102) requests with ordinary
// xids counting from 1, each answered before the next leaves, until the
// mechanism completes. It returns the last xid used. A reply with an
// error code (ZooKeeper answers AuthFailed, or SessionClosedRequireSasl
// when the server requires SASL) or a token the mechanism rejects is an
// error wrapping zkproto.ErrAuthFailed.
func authenticate(ctx context.Context, nc net.Conn, br *bufio.Reader, addr string, opts Options) (int32, error) {
	cl, err := opts.SASL(addr, nc.RemoteAddr())
	if err != nil {
		return 0, fmt.Errorf("SASL: %w", err)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(opts.SessionTimeout)
	}
	if err := nc.SetDeadline(deadline); err != nil {
		return 0, err
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	xid, err := saslRounds(nc, br, cl, opts.MaxBuffer)
	if !stop() || ctx.Err() != nil {
		return 0, context.Cause(ctx)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, fmt.Errorf("SASL: no answer in time: %w", err)
	}
	if err != nil {
		return 0, err
	}
	return xid, nc.SetDeadline(time.Time{})
}

// saslRounds runs the exchange's round trips. A mechanism that completes
// with a last token to send (GSSAPI's answer to the security-layer offer)
// sends it, and the server's OK to it ends the exchange; one that
// completes with nothing to send (DIGEST-MD5 once the server's rspauth
// checks out) ends it at once.
func saslRounds(nc net.Conn, br *bufio.Reader, cl SASLClient, maxBuffer int) (int32, error) {
	token := []byte{}
	if ir, ok := cl.(initialResponder); ok {
		token = ir.InitialResponse()
	}
	var frame []byte
	last := false
	for xid := int32(1); xid <= maxSASLRounds; xid++ {
		out := zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: xid, Op: zkproto.OpSASL},
			&zkproto.GetSASLRequest{Token: token})
		if _, err := nc.Write(out); err != nil {
			return 0, fmt.Errorf("SASL: %w", err)
		}
		var err error
		if frame, err = zkproto.ReadFrame(br, frame[:0], maxBuffer); err != nil {
			return 0, fmt.Errorf("SASL: the server closed the exchange: %w", err)
		}
		resp, err := decodeSASLReply(frame, xid, maxBuffer)
		if err != nil {
			return 0, err
		}
		if last {
			return xid, nil
		}
		if token, err = cl.Evaluate(resp.Token); err != nil {
			return 0, authFailed("%v", err)
		}
		if cl.Complete() {
			if token == nil {
				return xid, nil
			}
			last = true
		}
	}
	return 0, authFailed("no outcome after %d rounds", maxSASLRounds)
}

// decodeSASLReply decodes the reply to the sasl(102) request xid.
func decodeSASLReply(frame []byte, xid int32, maxBuffer int) (zkproto.SetSASLResponse, error) {
	var resp zkproto.SetSASLResponse
	h, body, err := zkproto.DecodeReplyHeader(frame)
	switch {
	case err != nil:
		return resp, fmt.Errorf("SASL: %w", err)
	case h.Xid != xid:
		return resp, fmt.Errorf("SASL: reply xid %d, want %d", h.Xid, xid)
	case h.Err != zkproto.CodeOK:
		return resp, authFailed("the server answered %v", h.Err)
	}
	if err := jute.Unmarshal(body, &resp, maxBuffer); err != nil {
		return resp, fmt.Errorf("SASL: reply: %w", err)
	}
	return resp, nil
}
