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

// FuzzInitiatorReply feeds arbitrary replies to an initiator waiting for
// its AP-REP, then arbitrary wrap tokens to one whose context is
// established: refused without panicking, never established by garbage.
func FuzzInitiatorReply(f *testing.F) {
	a := newAcceptor(f)
	in, tok := newInitiator(f, service, "service-secret", t0)
	ctx, rep, err := a.Accept(tok, t0)
	if err != nil {
		f.Fatal(err)
	}
	if err := in.Reply(rep); err != nil {
		f.Fatal(err)
	}
	w, err := ctx.Wrap([]byte{1, 0, 0, 0})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rep)
	f.Add(w)
	f.Add([]byte{0x60, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x02, 0x00})
	// fresh changes only when a reply is taken, which fails the target.
	fresh, _ := newInitiator(f, service, "service-secret", t0)
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := fresh.Reply(b); err == nil {
			// Only the acceptor holds the session key of fresh's ticket,
			// and it was never shown fresh's AP-REQ.
			t.Fatalf("%x established a context no acceptor answered", b)
		}
		_, _ = in.Unwrap(b)
	})
}
