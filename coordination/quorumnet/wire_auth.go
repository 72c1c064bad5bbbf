package quorumnet

import (
	"encoding/binary"
	"fmt"
	"io"

	"keeper/coordination/jute"
)

// QuorumAuthPacket, the one message of SASL between members (quorum.auth.*;
// docs/sasl.md), sent with no length prefix on either port before the
// connection's own traffic:
//
//	+------------+------------+------------------------------------+
//	| long magic | int status | buffer token (int length, -1 null) |
//	+------------+------------+------------------------------------+
//
// magic is AuthMagic, so that a server reading the first eight bytes tells
// an authenticating peer from one that sends a QuorumPacket (whose small
// type, then the top of a zxid, never make that long) or, after the
// election handshake, a notification frame. status is AuthInProgress,
// AuthSuccess or AuthError.
const (
	// AuthMagic opens every QuorumAuthPacket. ZooKeeper writes it as the
	// negation of the 64-bit pattern 0xa0dbcafecafe1234, which is this
	// positive number (its first byte, 0x5f, is no TLS record either).
	AuthMagic int64 = 0x5f2435013501edcc
	// AuthInProgress: a learner's token, or a server's challenge with more
	// to come. AuthSuccess: the server's last token; the peer is in.
	// AuthError: the exchange failed.
	AuthInProgress int32 = 0
	AuthSuccess    int32 = 1
	AuthError      int32 = -1

	// MaxAuthTokenBytes bounds a received token: a DIGEST-MD5 challenge is
	// at most 2 KiB and a response at most 4 KiB, so this leaves room and
	// keeps a hostile peer from making us allocate.
	MaxAuthTokenBytes = 64 << 10

	authHeaderBytes = 8 + 4 + 4
)

// AuthPacket is a decoded QuorumAuthPacket. A null token is nil; an empty
// one is empty and not nil.
type AuthPacket struct {
	Magic  int64
	Status int32
	Token  []byte
}

// EncodeAuthPacket returns the bytes of a QuorumAuthPacket with AuthMagic;
// a nil token is sent as the null buffer.
func EncodeAuthPacket(status int32, token []byte) []byte {
	e := jute.Encoder{B: make([]byte, 0, authHeaderBytes+len(token))}
	e.Long(AuthMagic)
	e.Int(status)
	e.Buffer(token)
	return e.B
}

// DecodeAuthPacket decodes one QuorumAuthPacket that must fill b exactly.
func DecodeAuthPacket(b []byte) (AuthPacket, error) {
	r := &sliceReader{b: b}
	p, err := readAuthPacket(r, MaxAuthTokenBytes)
	if err == nil && len(r.b) != 0 {
		err = fmt.Errorf("%w: %d bytes after the auth packet", ErrMalformed, len(r.b))
	}
	return p, err
}

// readAuthPacket reads exactly one QuorumAuthPacket from r, reading no
// byte past it (a learner reads its replies straight from the connection,
// whose next bytes belong to someone else). The magic is not checked: the
// caller peeked the first one, and ZooKeeper reads later ones unchecked.
func readAuthPacket(r io.Reader, maxTokenBytes int) (AuthPacket, error) {
	var head [authHeaderBytes]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return AuthPacket{}, err
	}
	p := AuthPacket{
		Magic:  int64(binary.BigEndian.Uint64(head[0:])),
		Status: int32(binary.BigEndian.Uint32(head[8:])),
	}
	n := int32(binary.BigEndian.Uint32(head[12:]))
	switch {
	case n == -1:
		return p, nil
	case n < -1:
		return p, fmt.Errorf("%w: auth token length %d", ErrMalformed, n)
	case int(n) > maxTokenBytes:
		return p, fmt.Errorf("%w: auth token of %d bytes (at most %d)", ErrTooLarge, n, maxTokenBytes)
	}
	p.Token = make([]byte, n)
	if _, err := io.ReadFull(r, p.Token); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return p, err
	}
	return p, nil
}

// sliceReader reads from a byte slice, leaving the rest in b.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
