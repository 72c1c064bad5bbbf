package kerberos

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

const (
	realm   = "EXAMPLE.COM"
	service = "zookeeper/localhost"
	aes256  = 18
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// keytabFor returns a keytab holding principal's key from password.
func keytabFor(t testing.TB, principal, password string) *keytab.Keytab {
	t.Helper()
	kt := keytab.New()
	if err := kt.AddEntry(principal, realm, password, t0, 1, aes256); err != nil {
		t.Fatal(err)
	}
	return kt
}

func newAcceptor(t testing.TB) *Acceptor {
	t.Helper()
	b, err := keytabFor(t, service, "service-secret").Marshal()
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAcceptor(Config{Keytab: b, Principal: service + "@" + realm, Entropy: rand.Reader})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// initiator is what a client's GSS-API library would send.
type initiator struct {
	sname    string        // the ticket's service principal
	password string        // the service password the ticket is encrypted with
	authTime time.Time     // the ticket's start
	life     time.Duration // the ticket's lifetime
	ctime    time.Time     // the authenticator's time
	gssFlags uint32
}

func goodInitiator() initiator {
	return initiator{sname: service, password: "service-secret", authTime: t0, life: time.Hour, ctime: t0, gssFlags: gssMutualFlag}
}

// token builds the initial context token and returns the initiator's
// subkey and sequence number.
func (in initiator) token(t testing.TB) ([]byte, types.EncryptionKey, uint64) {
	t.Helper()
	cname := types.NewPrincipalName(1, "alice")
	sname := types.NewPrincipalName(3, in.sname)
	tkt, sessionKey, err := messages.NewTicket(cname, realm, sname, realm, types.NewKrbFlags(), keytabFor(t, in.sname, in.password),
		aes256, 1, in.authTime, in.authTime, in.authTime.Add(in.life), in.authTime.Add(in.life))
	if err != nil {
		t.Fatal(err)
	}
	auth, err := types.NewAuthenticator(realm, cname)
	if err != nil {
		t.Fatal(err)
	}
	auth.CTime, auth.Cusec = in.ctime.Truncate(time.Second), in.ctime.Nanosecond()/1000
	if err := auth.GenerateSeqNumberAndSubKey(aes256, 32); err != nil {
		t.Fatal(err)
	}
	sum := make([]byte, 24)
	binary.LittleEndian.PutUint32(sum, 16)
	binary.LittleEndian.PutUint32(sum[20:], in.gssFlags)
	auth.Cksum = types.Checksum{CksumType: gssChecksumTyp, Checksum: sum}
	req, err := messages.NewAPReq(tkt, sessionKey, auth)
	if err != nil {
		t.Fatal(err)
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return encodeContextToken(tokAPReq, b), auth.SubKey, uint64(auth.SeqNumber)
}

// initiatorWrap is the client's wrap token of msg.
func initiatorWrap(t testing.TB, key types.EncryptionKey, seq uint64, msg []byte) []byte {
	t.Helper()
	sum, err := checksum(key, keyusage.GSSAPI_INITIATOR_SEAL, checksumInput(0, seq, msg))
	if err != nil {
		t.Fatal(err)
	}
	return (&wrapToken{seq: seq, data: msg, checksum: sum}).encode()
}

func TestAcceptRefusals(t *testing.T) {
	good := goodInitiator()
	tests := []struct {
		name   string
		change func(*initiator)
		want   string
	}{
		{"wrong service principal", func(in *initiator) { in.sname = "zookeeper/otherhost" }, "ticket is for zookeeper/otherhost"},
		{"wrong service key", func(in *initiator) { in.password = "stale" }, "ticket:"},
		{"expired ticket", func(in *initiator) { in.authTime = t0.Add(-2 * time.Hour); in.ctime = t0 }, "ticket expired"},
		{"ticket from the future", func(in *initiator) { in.authTime = t0.Add(time.Hour) }, "not yet valid"},
		{"clock skew", func(in *initiator) { in.ctime = t0.Add(-10 * time.Minute) }, "clock skew"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := good
			tc.change(&in)
			tok, _, _ := in.token(t)
			_, _, err := newAcceptor(t).Accept(tok, t0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Accept: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestAcceptGarbled(t *testing.T) {
	tok, _, _ := goodInitiator().token(t)
	flipped := bytes.Clone(tok)
	flipped[len(flipped)-10] ^= 0xff
	otherOID := bytes.Clone(tok)
	otherOID[len(otherOID)-len(tok)+4+8] ^= 1 // last byte of the OID
	for name, b := range map[string][]byte{
		"empty": {}, "cut": tok[:len(tok)/2], "flipped": flipped, "other mechanism": otherOID,
		"AP-REP token id": encodeContextToken(tokAPRep, tok[17:]), "not DER": []byte("hello"),
	} {
		if _, _, err := newAcceptor(t).Accept(b, t0); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestReplayRefused(t *testing.T) {
	a := newAcceptor(t)
	tok, _, _ := goodInitiator().token(t)
	if _, _, err := a.Accept(tok, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Accept(tok, t0.Add(time.Second)); !errors.Is(err, ErrReplay) {
		t.Fatalf("replay: %v, want ErrReplay", err)
	}
	// Another authenticator of the same client is fine.
	in := goodInitiator()
	in.ctime = t0.Add(time.Millisecond)
	tok2, _, _ := in.token(t)
	if _, _, err := a.Accept(tok2, t0); err != nil {
		t.Fatalf("second login: %v", err)
	}
}

func TestReplayCacheBound(t *testing.T) {
	r := &replayCache{max: 2, seen: map[replayKey]time.Time{}}
	for i := range 2 {
		if err := r.add(replayKey{"a", int64(i)}, t0.Add(time.Minute), t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.add(replayKey{"a", 9}, t0.Add(time.Minute), t0); err == nil {
		t.Fatal("a full cache of live entries took a third")
	}
	// Once the entries are out of the skew they make room.
	if err := r.add(replayKey{"a", 9}, t0.Add(3*time.Minute), t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if len(r.seen) != 1 {
		t.Fatalf("%d entries, want 1", len(r.seen))
	}
}

func TestMutualAndWrap(t *testing.T) {
	for _, mutual := range []bool{true, false} {
		in := goodInitiator()
		if !mutual {
			in.gssFlags = 0
		}
		tok, subkey, seq := in.token(t)
		a := newAcceptor(t)
		ctx, out, err := a.Accept(tok, t0)
		if err != nil {
			t.Fatal(err)
		}
		if ctx.Peer != "alice@"+realm {
			t.Fatalf("peer %q", ctx.Peer)
		}
		wantSeq := seq
		if mutual {
			wantSeq = checkAPRep(t, a, tok, out)
		} else if out != nil {
			t.Fatalf("no mutual authentication asked, got %x", out)
		}
		// The acceptor's wrap token verifies with the initiator's subkey.
		w, err := ctx.Wrap([]byte{1, 0, 0, 0})
		if err != nil {
			t.Fatal(err)
		}
		wt, err := decodeWrapToken(w)
		if err != nil {
			t.Fatal(err)
		}
		sum, _ := checksum(subkey, keyusage.GSSAPI_ACCEPTOR_SEAL, checksumInput(wt.flags, wt.seq, wt.data))
		if wt.seq != wantSeq || wt.flags != flagSentByAcceptor || !bytes.Equal(sum, wt.checksum) {
			t.Fatalf("acceptor wrap token: seq %d (want %d) flags %x checksum ok %v", wt.seq, wantSeq, wt.flags, bytes.Equal(sum, wt.checksum))
		}
		// The initiator's answer unwraps; a second copy of it does not.
		msg := []byte{1, 0, 0, 0, 'a'}
		answer := initiatorWrap(t, subkey, seq, msg)
		got, err := ctx.Unwrap(answer)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("Unwrap: %x, %v", got, err)
		}
		if _, err := ctx.Unwrap(answer); err == nil {
			t.Fatal("the same wrap token unwrapped twice")
		}
	}
}

// checkAPRep decrypts the AP-REP as the initiator would and returns the
// acceptor's sequence number.
func checkAPRep(t *testing.T, a *Acceptor, apreq, out []byte) uint64 {
	t.Helper()
	id, inner, err := decodeContextToken(out)
	if err != nil || id != tokAPRep {
		t.Fatalf("AP-REP framing: %x %v", id, err)
	}
	var rep messages.APRep
	if err := rep.Unmarshal(inner); err != nil {
		t.Fatal(err)
	}
	_, reqInner, _ := decodeContextToken(apreq)
	var req messages.APReq
	if err := req.Unmarshal(reqInner); err != nil {
		t.Fatal(err)
	}
	if err := req.Ticket.DecryptEncPart(a.kt, nil); err != nil {
		t.Fatal(err)
	}
	if err := req.DecryptAuthenticator(req.Ticket.DecryptedEncPart.Key); err != nil {
		t.Fatal(err)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, req.Ticket.DecryptedEncPart.Key, keyusage.AP_REP_ENCPART)
	if err != nil {
		t.Fatal(err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		t.Fatal(err)
	}
	if !part.CTime.Equal(req.Authenticator.CTime) || part.Cusec != req.Authenticator.Cusec {
		t.Fatalf("AP-REP time %v.%d, authenticator %v.%d", part.CTime, part.Cusec, req.Authenticator.CTime, req.Authenticator.Cusec)
	}
	return uint64(part.SequenceNumber)
}

func TestUnwrapRefusals(t *testing.T) {
	tok, subkey, seq := goodInitiator().token(t)
	good := initiatorWrap(t, subkey, seq, []byte{1, 0, 0, 0})
	sealed := bytes.Clone(good)
	sealed[2] |= flagSealed
	badSum := bytes.Clone(good)
	badSum[len(badSum)-1] ^= 1
	fromAcceptor := bytes.Clone(good)
	fromAcceptor[2] |= flagSentByAcceptor
	for name, b := range map[string][]byte{
		"sealed": sealed, "checksum": badSum, "from acceptor": fromAcceptor,
		"wrong sequence": initiatorWrap(t, subkey, seq+1, []byte{1, 0, 0, 0}),
		"short":          good[:10], "empty": {},
	} {
		ctx, _, err := newAcceptor(t).Accept(tok, t0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ctx.Unwrap(b); err == nil {
			t.Errorf("%s: unwrapped", name)
		}
	}
}

func TestWrapTokenRotation(t *testing.T) {
	w := &wrapToken{seq: 7, data: []byte("abc"), checksum: []byte("0123456789ab")}
	b := w.encode()
	// Rotate the body right by 5 and say so in RRC.
	body := b[wrapHeaderBytes:]
	r := 5
	rot := append(bytes.Clone(body[len(body)-r:]), body[:len(body)-r]...)
	b = append(bytes.Clone(b[:wrapHeaderBytes]), rot...)
	binary.BigEndian.PutUint16(b[6:8], uint16(r))
	got, err := decodeWrapToken(b)
	if err != nil || string(got.data) != "abc" || string(got.checksum) != "0123456789ab" {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestNewAcceptorRefusals(t *testing.T) {
	kt, _ := keytabFor(t, service, "pw").Marshal()
	for name, cfg := range map[string]Config{
		"no host":         {Keytab: kt, Principal: "zookeeper@" + realm, Entropy: rand.Reader},
		"no realm":        {Keytab: kt, Principal: service, Entropy: rand.Reader},
		"other principal": {Keytab: kt, Principal: "zookeeper/other@" + realm, Entropy: rand.Reader},
		"other realm":     {Keytab: kt, Principal: service + "@OTHER", Entropy: rand.Reader},
		"garbled keytab":  {Keytab: []byte("nope"), Principal: service + "@" + realm, Entropy: rand.Reader},
		"no entropy":      {Keytab: kt, Principal: service + "@" + realm},
		"two slashes":     {Keytab: kt, Principal: "zookeeper/a/b@" + realm, Entropy: rand.Reader},
	} {
		if _, err := NewAcceptor(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
