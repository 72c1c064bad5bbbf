package quorumnet

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"keeper/coordination/sasl"
	"keeper/coordination/zab"
)

// quorumUsers is the QuorumServer section every SASL member of these tests
// accepts.
var quorumUsers = map[string]string{"test": "test"}

// The quorum.auth.* modes, as ZooKeeper's rolling upgrade walks them.
func saslOptional() *SASL { return &SASL{Users: quorumUsers} }
func saslLearner() *SASL {
	return &SASL{LearnerRequire: true, Username: "test", Password: "test", Users: quorumUsers}
}
func saslRequired() *SASL {
	s := saslLearner()
	s.ServerRequire = true
	return s
}
func saslWrongPassword() *SASL {
	s := saslLearner()
	s.Password = "wrong"
	return s
}

// shortTimeout is the handshake deadline of a member a test expects to
// wait it out: it decides only how soon a refused connection is closed.
const shortTimeout = 300 * time.Millisecond

// withSASL configures the transport with id i+1 with secs[i] (nil: no
// SASL).
func withSASL(secs ...*SASL) func(*Config) {
	return func(c *Config) { c.SASL = secs[c.ID-1] }
}

// TestSASLModes runs a learner in each mode against a leader in each mode
// on the quorum port: the link comes up, or the learner sees it go down
// and the leader hears nothing of it while another member is served.
func TestSASLModes(t *testing.T) {
	modes := []struct {
		name string
		sasl func() *SASL
	}{
		{"off", func() *SASL { return nil }},
		{"optional", saslOptional},
		{"learner", saslLearner},
		{"required", saslRequired},
	}
	// ok[learner][leader]
	ok := [][]bool{
		{true, true, true, false},
		{true, true, true, false},
		{false, true, true, true},
		{false, true, true, true},
	}
	for i, learner := range modes {
		for j, leader := range modes {
			t.Run(learner.name+" to "+leader.name, func(t *testing.T) {
				checkLink(t, leader.sasl(), learner.sasl(), ok[i][j])
			})
		}
	}
	for _, leader := range modes {
		t.Run("wrong password to "+leader.name, func(t *testing.T) {
			checkLink(t, leader.sasl(), saslWrongPassword(), false)
		})
	}
}

// checkLink opens a quorum link from a learner (id 2) to a leader (id 1)
// and checks it comes up, or is refused while a good member (id 3) is
// served.
func checkLink(t *testing.T, leaderSASL, learnerSASL *SASL, ok bool) {
	good := saslLearner()
	if leaderSASL == nil {
		good = nil
	}
	checkLinkWith(t, leaderSASL, learnerSASL, good, ok)
}

// checkLinkWith is checkLink with good as the SASL of the member that
// must be served.
func checkLinkWith(t *testing.T, leaderSASL, learnerSASL, good *SASL, ok bool) {
	t.Helper()
	trs := startTransports(t, 3, func(c *Config) {
		withSASL(leaderSASL, learnerSASL, good)(c)
		if c.ID == 1 && leaderSASL == nil {
			// A leader without SASL waits for the rest of what it takes
			// for a QuorumPacket until its handshake deadline.
			c.DialTimeout = shortTimeout
		}
	})
	leader, learner, other := trs[0], trs[1], trs[2]
	if ok {
		openLink(t, learner, leader)
		leader.Send([]zab.Message{{Type: zab.MsgLeaderInfo, From: 1, To: 2, Zxid: 0x200000000}})
		expect(t, learner, zab.Message{Type: zab.MsgLeaderInfo, From: 1})
		return
	}
	learner.Send([]zab.Message{followerInfo(2, 1)})
	expect(t, learner, zab.Message{Type: zab.MsgDisconnected, From: 1})
	// Everyone else is served, and is the first the leader hears from.
	openLink(t, other, leader)
}

// TestSASLElection checks the election port: a dialler that must
// authenticate and fails never gets a connection, and a leader that
// requires SASL closes a handshake that does not authenticate, while an
// authenticated one is kept.
func TestSASLElection(t *testing.T) {
	for _, tc := range []struct {
		name             string
		acceptor, dialer *SASL
		ok               bool
	}{
		{"both required", saslRequired(), saslRequired(), true},
		{"optional acceptor, no sasl dialer", saslOptional(), nil, true},
		{"learner dialer to optional", saslOptional(), saslLearner(), true},
		{"wrong password", saslRequired(), saslWrongPassword(), false},
		{"wrong password to optional", saslOptional(), saslWrongPassword(), false},
		{"sasl dialer to no sasl", nil, saslLearner(), false},
		{"no sasl dialer to required", saslRequired(), saslOptional(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := saslLearner()
			if tc.acceptor == nil {
				good = nil
			}
			trs := startTransports(t, 3, withSASL(tc.acceptor, tc.dialer, good))
			acceptor, dialer, other := trs[0], trs[1], trs[2]
			// The larger id's dial is the one kept.
			dialer.Send([]zab.Message{notification(2, 1)})
			if tc.ok {
				expect(t, acceptor, zab.Message{Type: zab.MsgNotification, From: 2})
				return
			}
			other.Send([]zab.Message{notification(3, 1)})
			expect(t, acceptor, zab.Message{Type: zab.MsgNotification, From: 3})
			dialer.Send([]zab.Message{notification(2, 1)})
			other.Send([]zab.Message{notification(3, 1)})
			expect(t, acceptor, zab.Message{Type: zab.MsgNotification, From: 3})
		})
	}
}

// TestSASLRequiredRaw talks to a member that requires SASL in the raw: a
// handshake or a FOLLOWERINFO with no authentication is closed unread, a
// wrong password gets AuthError then the close.
func TestSASLRequiredRaw(t *testing.T) {
	trs := startTransports(t, 1, func(c *Config) {
		c.SASL = saslRequired()
		// A handshake with nothing after it is closed at this deadline.
		c.DialTimeout = shortTimeout
	})
	tr := trs[0]
	tr.SetPeer(3, PeerAddrs{Quorum: "127.0.0.1:1", Election: "127.0.0.1:1"})
	expectClosed(t, rawConn(t, tr.ElectionAddr(), mustHandshake(t, 3)))
	expectClosed(t, rawConn(t, tr.QuorumAddr(), mustPacket(t, followerInfo(3, 1))))

	tr = startTransports(t, 1, withSASL(saslRequired()))[0]
	c := rawConn(t, tr.QuorumAddr(), EncodeAuthPacket(AuthInProgress, []byte{}))
	c.SetReadDeadline(time.Now().Add(waitTimeout))
	p, err := readAuthPacket(c, MaxAuthTokenBytes)
	if err != nil || p.Magic != AuthMagic || p.Status != AuthInProgress {
		t.Fatalf("challenge %+v, %v", p, err)
	}
	cl := sasl.NewDigestMD5Client(&sasl.DigestMD5ClientConfig{Protocol: sasl.QuorumProtocol, ServerName: sasl.QuorumServerName,
		Username: "test", Password: "wrong", Entropy: bytes.NewReader(make([]byte, 64))})
	resp, err := cl.Evaluate(p.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(EncodeAuthPacket(AuthInProgress, resp)); err != nil {
		t.Fatal(err)
	}
	if p, err = readAuthPacket(c, MaxAuthTokenBytes); err != nil || p.Status != AuthError {
		t.Fatalf("after a wrong password: %+v, %v", p, err)
	}
	expectClosed(t, c)
}

// TestSASLUnknownPeer is CVE-2023-44981's lesson: a server that
// authenticates with a valid user and password but whose id is not in the
// configuration is refused on both ports, while the members are served.
func TestSASLUnknownPeer(t *testing.T) {
	trs := startTransports(t, 2, withSASL(saslRequired(), saslRequired()))
	leader, member := trs[0], trs[1]
	cfg := Config{ID: 9, ListenQuorum: "127.0.0.1:0", ListenElection: "127.0.0.1:0", Logger: testLogger(t), SASL: saslRequired(),
		Peers: map[zab.PeerID]PeerAddrs{1: {Quorum: leader.QuorumAddr(), Election: leader.ElectionAddr()}}}
	stranger, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stranger.Close() })
	stranger.Send([]zab.Message{followerInfo(9, 1), notification(9, 1)})
	expect(t, stranger, zab.Message{Type: zab.MsgDisconnected, From: 1})
	member.Send([]zab.Message{notification(2, 1)})
	expect(t, leader, zab.Message{Type: zab.MsgNotification, From: 2})
	openLink(t, member, leader)
}

// TestSASLWithTLS runs the exchange inside TLS on both ports.
func TestSASLWithTLS(t *testing.T) {
	p := newTestPKI(t)
	secs := []*TLS{p.secure(t, false, false, loopback), p.secure(t, false, false, loopback)}
	trs := startTransports(t, 2, func(c *Config) {
		withTLS(secs...)(c)
		withSASL(saslRequired(), saslRequired())(c)
	})
	trs[1].Send([]zab.Message{notification(2, 1)})
	expect(t, trs[0], zab.Message{Type: zab.MsgNotification, From: 2})
	openLink(t, trs[1], trs[0])
}

func TestAuthPacketCodec(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int32
		token  []byte
		hex    string
	}{
		{"learner's opening", AuthInProgress, []byte{}, "5f2435013501edcc 00000000 00000000"},
		{"null token", AuthInProgress, nil, "5f2435013501edcc 00000000 ffffffff"},
		{"success", AuthSuccess, []byte("ok"), "5f2435013501edcc 00000001 00000002 6f6b"},
		{"error", AuthError, []byte{}, "5f2435013501edcc ffffffff 00000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := EncodeAuthPacket(tc.status, tc.token)
			if want := hexBytes(t, tc.hex); !bytes.Equal(b, want) {
				t.Fatalf("encoded %x, want %x", b, want)
			}
			p, err := DecodeAuthPacket(b)
			if err != nil || p.Magic != AuthMagic || p.Status != tc.status || !bytes.Equal(p.Token, tc.token) || (p.Token == nil) != (tc.token == nil) {
				t.Fatalf("decoded %+v, %v", p, err)
			}
		})
	}
	for _, tc := range []struct {
		name, hex string
		want      error
	}{
		{"short header", "5f2435013501edcc 00000000", io.ErrUnexpectedEOF},
		{"negative length", "5f2435013501edcc 00000000 fffffffe", ErrMalformed},
		{"too long", "5f2435013501edcc 00000000 00010001", ErrTooLarge},
		{"truncated token", "5f2435013501edcc 00000000 00000004 6f6b", io.ErrUnexpectedEOF},
		{"trailing bytes", "5f2435013501edcc 00000000 00000000 00", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeAuthPacket(hexBytes(t, tc.hex)); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// FuzzDecodeAuthPacket feeds arbitrary bytes to the QuorumAuthPacket
// decoder: it must not panic or over-allocate, and what it decodes must
// encode back to the same bytes.
func FuzzDecodeAuthPacket(f *testing.F) {
	f.Add(EncodeAuthPacket(AuthInProgress, []byte{}))
	f.Add(EncodeAuthPacket(AuthSuccess, []byte("rspauth=0123")))
	f.Add(EncodeAuthPacket(AuthError, nil))
	f.Add(hexBytes(f, "5f2435013501edcc 00000000 7fffffff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeAuthPacket(b)
		if err != nil {
			return
		}
		if len(p.Token) > MaxAuthTokenBytes {
			t.Fatalf("token of %d bytes", len(p.Token))
		}
		out := EncodeAuthPacket(p.Status, p.Token)
		copy(out, b[:8]) // the magic is read, not checked
		if !bytes.Equal(out, b) {
			t.Fatalf("round trip %x -> %x", b, out)
		}
	})
}

// TestSASLUnknownServerLearnedAfterAuth: with AcceptUnknown (reconfig) and
// SASL required, a server no configuration names is learned only once it
// authenticated: one with the wrong password is refused and takes no slot,
// one with the right password joins.
func TestSASLUnknownServerLearnedAfterAuth(t *testing.T) {
	a := startTransports(t, 1, func(c *Config) { c.AcceptUnknown, c.SASL = true, saslRequired() })[0]
	join := func(id zab.PeerID, s *SASL) *Transport {
		j, err := New(Config{ID: id, ListenQuorum: "127.0.0.1:0", ListenElection: "127.0.0.1:0", Logger: testLogger(t), SASL: s})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		j.SetPeer(1, PeerAddrs{Quorum: a.QuorumAddr(), Election: a.ElectionAddr()})
		return j
	}
	learned := func() int {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.learned
	}
	bad := join(7, saslWrongPassword())
	bad.Send([]zab.Message{followerInfo(7, 1)})
	expect(t, bad, zab.Message{Type: zab.MsgDisconnected, From: 1})
	if n := learned(); n != 0 {
		t.Fatalf("%d servers learned after a wrong password", n)
	}
	good := join(8, saslRequired())
	good.Send([]zab.Message{notification(8, 1)})
	expect(t, a, zab.Message{Type: zab.MsgNotification, From: 8})
	if n := learned(); n != 1 {
		t.Fatalf("%d servers learned", n)
	}
}
