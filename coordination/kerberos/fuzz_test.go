package kerberos

import (
	"bytes"
	"testing"
)

// FuzzContextToken feeds arbitrary first tokens to an acceptor: it must
// refuse them without panicking, and a framing it decodes must encode
// to one that decodes the same.
func FuzzContextToken(f *testing.F) {
	tok, _, _ := goodInitiator().token(f)
	f.Add(tok)
	f.Add([]byte{0x60, 0x0b, 0x06, 0x09})
	f.Add([]byte{0x60, 0x84, 0xff, 0xff, 0xff, 0xff})
	a := newAcceptor(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if id, inner, err := decodeContextToken(b); err == nil {
			id2, inner2, err := decodeContextToken(encodeContextToken(id, inner))
			if err != nil || id2 != id || !bytes.Equal(inner2, inner) {
				t.Fatalf("%x: re-encoded token decodes as %x %x, %v", b, id2, inner2, err)
			}
		}
		_, _, _ = a.Accept(b, t0)
	})
}

// FuzzWrapToken decodes arbitrary wrap tokens: no panic, and an unrotated
// token encodes back to the same bytes.
func FuzzWrapToken(f *testing.F) {
	f.Add((&wrapToken{seq: 1, data: []byte{1, 0, 0, 0}, checksum: make([]byte, 12)}).encode())
	f.Add([]byte{5, 4, 0, 0xff, 0, 12, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := decodeWrapToken(b)
		if err != nil {
			return
		}
		if b[6] == 0 && b[7] == 0 && !bytes.Equal(w.encode(), b) {
			t.Fatalf("re-encoded %x as %x", b, w.encode())
		}
	})
}
