package quorumnet

import (
	"crypto/rand"
	"testing"
	"time"

	"keeper/coordination/kerberos"
	"keeper/coordination/kerberos/kerberostest"
	"keeper/coordination/sasl"
	"keeper/coordination/zab"
)

// The Kerberos of these tests: every member is zkquorum/127.0.0.1 in
// krbRealm, the host of every test transport.
const (
	krbRealm    = "EXAMPLE.COM"
	krbService  = "zkquorum/127.0.0.1"
	krbPassword = "quorum-secret"
)

// krbSASL is a member that authenticates as client (service/host) with
// tickets to the service whose key derives from ticketPassword, and
// accepts with the right key, requiring SASL or not.
func krbSASL(t *testing.T, client, ticketPassword string, required bool) *SASL {
	t.Helper()
	acc, err := kerberos.NewAcceptor(kerberos.Config{Keytab: kerberostest.Keytab(t, krbService, krbRealm, krbPassword),
		Principal: krbService + "@" + krbRealm, Entropy: rand.Reader})
	if err != nil {
		t.Fatal(err)
	}
	return &SASL{
		LearnerRequire: true,
		ServerRequire:  required,
		KerberosLearner: func(host string) (*sasl.GSSAPIClient, error) {
			in, first := kerberostest.Initiator(t, client, "zkquorum/"+host, krbRealm, ticketPassword, time.Now(), rand.Reader)
			return sasl.NewGSSAPIClient(in, first, client+"@"+krbRealm), nil
		},
		KerberosServer:  acc,
		AuthorizedHosts: map[string]bool{"127.0.0.1": true},
	}
}

func krbGood(t *testing.T) *SASL { return krbSASL(t, krbService, krbPassword, true) }

// TestKerberosLinks runs learners against a leader that requires Kerberos
// on the quorum port: the good one is in; a stale keytab, a principal
// whose host is not the configuration's or that has no host (the
// CVE-2023-44981 case), a DIGEST-MD5 learner and a learner that sends no
// authentication are each refused while a good member is served.
func TestKerberosLinks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leader  func(*testing.T) *SASL
		learner func(*testing.T) *SASL
		ok      bool
	}{
		{"good", krbGood, krbGood, true},
		{"optional leader", func(t *testing.T) *SASL { return krbSASL(t, krbService, krbPassword, false) }, krbGood, true},
		{"plaintext learner to optional", func(t *testing.T) *SASL { return krbSASL(t, krbService, krbPassword, false) },
			func(*testing.T) *SASL { return nil }, true},
		{"stale keytab", krbGood, func(t *testing.T) *SASL { return krbSASL(t, krbService, "old-secret", true) }, false},
		{"host not in the configuration", krbGood, func(t *testing.T) *SASL { return krbSASL(t, "zkquorum/evil.example.com", krbPassword, true) }, false},
		{"principal without a host", krbGood, func(t *testing.T) *SASL { return krbSASL(t, "zkquorum", krbPassword, true) }, false},
		{"user principal", krbGood, func(t *testing.T) *SASL { return krbSASL(t, "alice", krbPassword, true) }, false},
		{"digest learner", krbGood, func(*testing.T) *SASL { return saslRequired() }, false},
		{"plaintext learner", krbGood, func(*testing.T) *SASL { return nil }, false},
		{"kerberos learner to digest leader", func(*testing.T) *SASL { return saslRequired() }, krbGood, false},
		{"kerberos learner to plaintext leader", func(*testing.T) *SASL { return nil }, krbGood, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leader := tc.leader(t)
			good := krbGood(t)
			switch {
			case leader == nil:
				good = nil
			case leader.KerberosServer == nil:
				good = saslRequired()
			}
			checkLinkWith(t, leader, tc.learner(t), good, tc.ok)
		})
	}
}

// TestKerberosElection: the election port, both ways of a refusal.
func TestKerberosElection(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dialer func(*testing.T) *SASL
		ok     bool
	}{
		{"good", krbGood, true},
		{"stale keytab", func(t *testing.T) *SASL { return krbSASL(t, krbService, "old-secret", true) }, false},
		{"host not in the configuration", func(t *testing.T) *SASL { return krbSASL(t, "zkquorum/other", krbPassword, true) }, false},
		{"plaintext", func(*testing.T) *SASL { return nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trs := startTransports(t, 3, withSASL(krbGood(t), tc.dialer(t), krbGood(t)))
			acceptor, dialer, other := trs[0], trs[1], trs[2]
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

// TestKerberosUnknownPeer: a server with a good ticket and an authorized
// principal, but an id outside the configuration, is refused on both
// ports while the members are served.
func TestKerberosUnknownPeer(t *testing.T) {
	trs := startTransports(t, 2, withSASL(krbGood(t), krbGood(t)))
	leader, member := trs[0], trs[1]
	cfg := Config{ID: 9, ListenQuorum: "127.0.0.1:0", ListenElection: "127.0.0.1:0", Logger: testLogger(t), SASL: krbGood(t),
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

// TestAuthorizeKerberos is ZooKeeper's check, split as Java splits.
func TestAuthorizeKerberos(t *testing.T) {
	s := &SASL{AuthorizedHosts: map[string]bool{"host1": true, "127.0.0.1": true}}
	for _, tc := range []struct {
		authn, authz string
		ok           bool
	}{
		{"zkquorum/host1@R", "zkquorum/host1@R", true},
		{"zk/127.0.0.1@R", "zk/127.0.0.1@R", true},
		{"zkquorum/host1@R", "zkquorum/host2@R", false},
		{"zkquorum/host2@R", "zkquorum/host2@R", false},
		{"zkquorum/HOST1@R", "zkquorum/HOST1@R", false},
		{"zkquorum@R", "zkquorum@R", false},
		{"zkquorum/host1@", "zkquorum/host1@", false},
		{"a/host1/b@R", "a/host1/b@R", false},
		{"zkquorum/host1@R@", "zkquorum/host1@R@", true},
	} {
		_, err := s.authorizeKerberos(tc.authn, tc.authz)
		if (err == nil) != tc.ok {
			t.Errorf("authorize(%q, %q): %v, want ok=%v", tc.authn, tc.authz, err, tc.ok)
		}
	}
}
