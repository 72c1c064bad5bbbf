package kerberos

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// krb5OID is the DER encoding of 1.2.840.113554.1.2.2, the Kerberos 5
// GSS-API mechanism, with its tag and length.
var krb5OID = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// Token ids of the context tokens (RFC 4121 §4.1).
var (
	tokAPReq = [2]byte{0x01, 0x00}
	tokAPRep = [2]byte{0x02, 0x00}
)

// MaxContextTokenBytes bounds the initiator's first token. A ticket with
// a large PAC is a few kilobytes; ZooKeeper's frame limit (jute.maxbuffer)
// bounds it before this does, so the bound only stops absurd lengths in
// the DER header.
const MaxContextTokenBytes = 1 << 20

// decodeContextToken splits an initial context token into its token id
// and inner message. The framing must be exact: one 0x60 element that
// spans the whole token, the Kerberos 5 OID, a two-byte token id.
func decodeContextToken(b []byte) (tokID [2]byte, inner []byte, err error) {
	if len(b) > MaxContextTokenBytes {
		return tokID, nil, fmt.Errorf("context token of %d bytes is over %d", len(b), MaxContextTokenBytes)
	}
	if len(b) < 2 || b[0] != 0x60 {
		return tokID, nil, errors.New("not a GSS-API context token")
	}
	n, rest, err := derLength(b[1:])
	if err != nil {
		return tokID, nil, err
	}
	if n != len(rest) {
		return tokID, nil, fmt.Errorf("context token length %d, %d bytes follow", n, len(rest))
	}
	if !bytes.HasPrefix(rest, krb5OID) {
		return tokID, nil, errors.New("context token is not for the Kerberos 5 mechanism")
	}
	rest = rest[len(krb5OID):]
	if len(rest) < 2 {
		return tokID, nil, errors.New("context token has no token id")
	}
	copy(tokID[:], rest)
	return tokID, rest[2:], nil
}

// derLength reads a DER definite length (at most four length bytes) and
// returns it with the bytes after it.
func derLength(b []byte) (int, []byte, error) {
	if len(b) == 0 {
		return 0, nil, errors.New("context token cut in its length")
	}
	if b[0] < 0x80 {
		return int(b[0]), b[1:], nil
	}
	k := int(b[0] & 0x7f)
	if k == 0 || k > 4 || len(b) < 1+k {
		return 0, nil, errors.New("context token has a bad length")
	}
	n := 0
	for _, c := range b[1 : 1+k] {
		n = n<<8 | int(c)
	}
	if n > MaxContextTokenBytes || n < 0x80 {
		return 0, nil, errors.New("context token has a bad length")
	}
	return n, b[1+k:], nil
}

// encodeContextToken frames inner with token id tokID.
func encodeContextToken(tokID [2]byte, inner []byte) []byte {
	body := len(krb5OID) + 2 + len(inner)
	out := []byte{0x60}
	switch {
	case body < 0x80:
		out = append(out, byte(body))
	case body < 0x100:
		out = append(out, 0x81, byte(body))
	case body < 0x10000:
		out = append(out, 0x82, byte(body>>8), byte(body))
	default:
		out = append(out, 0x83, byte(body>>16), byte(body>>8), byte(body))
	}
	out = append(out, krb5OID...)
	out = append(out, tokID[:]...)
	return append(out, inner...)
}

// Wrap token flags (RFC 4121 §4.2.2).
const (
	flagSentByAcceptor = 0x01
	flagSealed         = 0x02
	flagAcceptorSubkey = 0x04
)

// wrapHeaderBytes is the length of a wrap token's header.
const wrapHeaderBytes = 16

// wrapToken is a decoded wrap token without confidentiality.
type wrapToken struct {
	flags    byte
	seq      uint64
	data     []byte // the wrapped message
	checksum []byte // the trailing checksum, EC bytes
}

// decodeWrapToken parses b as a wrap token without confidentiality. It
// undoes the rotation RRC asks for. It does not check the checksum.
func decodeWrapToken(b []byte) (*wrapToken, error) {
	if len(b) < wrapHeaderBytes {
		return nil, fmt.Errorf("wrap token of %d bytes is shorter than its header", len(b))
	}
	if b[0] != 0x05 || b[1] != 0x04 {
		return nil, fmt.Errorf("token id %02x%02x is not a wrap token's", b[0], b[1])
	}
	if b[3] != 0xff {
		return nil, errors.New("wrap token filler byte is not 0xff")
	}
	w := &wrapToken{flags: b[2], seq: binary.BigEndian.Uint64(b[8:16])}
	if w.flags&^(flagSentByAcceptor|flagSealed|flagAcceptorSubkey) != 0 {
		return nil, fmt.Errorf("wrap token has unknown flags %#x", w.flags)
	}
	if w.flags&flagSealed != 0 {
		return nil, errors.New("wrap token is sealed (confidentiality), which the negotiation step never uses")
	}
	ec := int(binary.BigEndian.Uint16(b[4:6]))
	rrc := int(binary.BigEndian.Uint16(b[6:8]))
	body := bytes.Clone(b[wrapHeaderBytes:])
	if ec > len(body) {
		return nil, fmt.Errorf("wrap token checksum of %d bytes is longer than its %d bytes", ec, len(body))
	}
	if len(body) > 0 {
		r := rrc % len(body)
		body = append(body[r:], body[:r]...)
	}
	w.data, w.checksum = body[:len(body)-ec], body[len(body)-ec:]
	return w, nil
}

// checksumInput is what a wrap token's checksum covers: the data, then the
// header with EC and RRC zero.
func checksumInput(flags byte, seq uint64, data []byte) []byte {
	in := make([]byte, 0, len(data)+wrapHeaderBytes)
	in = append(in, data...)
	in = append(in, 0x05, 0x04, flags, 0xff, 0, 0, 0, 0)
	return binary.BigEndian.AppendUint64(in, seq)
}

// encode returns w as bytes with RRC 0.
func (w *wrapToken) encode() []byte {
	out := make([]byte, 0, wrapHeaderBytes+len(w.data)+len(w.checksum))
	out = append(out, 0x05, 0x04, w.flags, 0xff)
	out = binary.BigEndian.AppendUint16(out, uint16(len(w.checksum)))
	out = append(out, 0, 0)
	out = binary.BigEndian.AppendUint64(out, w.seq)
	out = append(out, w.data...)
	return append(out, w.checksum...)
}
