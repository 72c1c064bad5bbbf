package kerberos

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// newInitiator opens a context for alice@realm to a ticket for sname
// whose key derives from password, at now.
func newInitiator(t testing.TB, sname, password string, now time.Time) (*Initiator, []byte) {
	t.Helper()
	cname := types.NewPrincipalName(1, "alice")
	tkt, key, err := messages.NewTicket(cname, realm, types.NewPrincipalName(1, sname), realm, types.NewKrbFlags(),
		keytabFor(t, sname, password), aes256, 1, now, now, now.Add(time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	in, tok, err := NewInitiator(InitiatorConfig{Client: cname, Realm: realm, Ticket: tkt, SessionKey: key, Now: now, Entropy: rand.Reader})
	if err != nil {
		t.Fatal(err)
	}
	return in, tok
}

// TestInitiatorAgainstAcceptor runs a whole context between keeper's two
// sides: the AP-REQ asks for mutual authentication, the AP-REP sets the
// acceptor's sequence numbers, and wrap tokens pass both ways in order.
func TestInitiatorAgainstAcceptor(t *testing.T) {
	a := newAcceptor(t)
	in, tok := newInitiator(t, service, "service-secret", t0)
	ctx, rep, err := a.Accept(tok, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if rep == nil {
		t.Fatal("the acceptor sent no AP-REP: the initiator did not ask for mutual authentication")
	}
	if ctx.Peer != "alice@"+realm {
		t.Fatalf("peer %q", ctx.Peer)
	}
	if _, err := in.Wrap([]byte("x")); err == nil {
		t.Fatal("wrapped before the context was established")
	}
	if err := in.Reply(rep); err != nil {
		t.Fatal(err)
	}
	if !in.Established() {
		t.Fatal("not established after the AP-REP")
	}
	if err := in.Reply(rep); err == nil {
		t.Fatal("a second AP-REP was taken")
	}
	for i := range 3 {
		msg := []byte{byte(i), 1, 2, 3}
		w, err := ctx.Wrap(msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := in.Unwrap(w)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("round %d: initiator unwrapped %x, %v", i, got, err)
		}
		if _, err := in.Unwrap(w); err == nil {
			t.Fatalf("round %d: the same acceptor token was taken twice", i)
		}
		w, err = in.Wrap(msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err = ctx.Unwrap(w)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("round %d: acceptor unwrapped %x, %v", i, got, err)
		}
		if _, err := in.Unwrap(w); err == nil {
			t.Fatalf("round %d: the initiator took its own token", i)
		}
	}
}

// TestInitiatorRefusals: replies that are not the acceptor's AP-REP for
// this context, and acceptor wrap tokens that were tampered with.
func TestInitiatorRefusals(t *testing.T) {
	a := newAcceptor(t)
	in, tok := newInitiator(t, service, "service-secret", t0)
	_, rep, err := a.Accept(tok, t0)
	if err != nil {
		t.Fatal(err)
	}
	// Another context's AP-REP has another session key.
	_, otherTok := newInitiator(t, service, "service-secret", t0.Add(time.Second))
	_, otherRep, err := a.Accept(otherTok, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		token      []byte
	}{
		{"the AP-REQ back", "not an AP-REP", tok},
		{"another context's AP-REP", "AP-REP", otherRep},
		{"garbage", "", []byte("garbage")},
		{"cut", "", rep[:len(rep)-3]},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := in.Reply(tc.token)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Reply: %v, want an error with %q", err, tc.want)
			}
			if in.Established() {
				t.Fatal("established by a bad reply")
			}
		})
	}
	in2, tok2 := newInitiator(t, service, "service-secret", t0.Add(2*time.Second))
	ctx, rep2, err := a.Accept(tok2, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := in2.Reply(rep2); err != nil {
		t.Fatal(err)
	}
	w, err := ctx.Wrap([]byte{1, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(w)
	flipped[len(flipped)-1] ^= 1
	if _, err := in2.Unwrap(flipped); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a flipped checksum: %v", err)
	}
	if _, err := in2.Unwrap(w); err != nil {
		t.Fatalf("the good token after a refused one: %v", err)
	}
}

// TestInitiatorUnsupportedKey: an RC4 session key is refused before
// anything is sent.
func TestInitiatorUnsupportedKey(t *testing.T) {
	_, _, err := NewInitiator(InitiatorConfig{Client: types.NewPrincipalName(1, "alice"), Realm: realm,
		SessionKey: types.EncryptionKey{KeyType: etypeRC4HMAC, KeyValue: make([]byte, 16)}, Now: t0, Entropy: rand.Reader})
	if err == nil {
		t.Fatal("an RC4 session key was taken")
	}
}
