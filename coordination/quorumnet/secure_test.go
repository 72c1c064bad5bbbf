package quorumnet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"keeper/coordination/clienttls"
	"keeper/coordination/zab"
	"keeper/internal/testhost"
)

var testSerial atomic.Int64

// testCert issues a certificate for cn naming ips (self-signed when ca is
// nil) and returns it with its key.
func testCert(t *testing.T, cn string, ca *tls.Certificate, isCA bool, ips ...net.IP) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(testSerial.Add(1)), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: isCA, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: ips,
	}
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent, signer = ca.Leaf, ca.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// staticCerts is a Certificates that never reloads.
type staticCerts struct{ cfg *tls.Config }

func (s staticCerts) Current() *tls.Config { return s.cfg }

// testPKI is a CA and a rogue CA.
type testPKI struct{ ca, rogue tls.Certificate }

func newTestPKI(t *testing.T) *testPKI {
	return &testPKI{
		ca:    testCert(t, "quorum CA", nil, true),
		rogue: testCert(t, "rogue CA", nil, true),
	}
}

var loopback = net.IPv4(127, 0, 0, 1)

// secure returns a TLS for a member whose certificate the CA issued for
// ips (the rogue CA with rogue), trusting the CA, mutual as ZooKeeper's
// quorum default.
func (p *testPKI) secure(t *testing.T, rogue, acceptPlaintext bool, ips ...net.IP) *TLS {
	issuer := &p.ca
	if rogue {
		issuer = &p.rogue
	}
	cert := testCert(t, "member", issuer, false, ips...)
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.Leaf)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: roots,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}
	return &TLS{Certificates: staticCerts{cfg}, Dial: true, AcceptPlaintext: acceptPlaintext,
		HostnameVerification: true}
}

// withTLS configures the transport with id i+1 with secs[i] (nil:
// plaintext).
func withTLS(secs ...*TLS) func(*Config) {
	return func(c *Config) { c.TLS = secs[c.ID-1] }
}

func notification(from, to zab.PeerID) zab.Message {
	return zab.Message{Type: zab.MsgNotification, From: from, To: to, State: zab.Looking, Round: 1,
		Vote: zab.Vote{Leader: from, Zxid: 0x100000001, Epoch: 1}}
}

func TestTLSBothPorts(t *testing.T) {
	p := newTestPKI(t)
	trs := startTransports(t, 2, withTLS(p.secure(t, false, false, loopback), p.secure(t, false, false, loopback)))
	// Each dials the other's election port (the smaller id's dial is
	// answered by a dial back) and the learner the leader's quorum port.
	trs[0].Send([]zab.Message{notification(1, 2)})
	trs[1].Send([]zab.Message{notification(2, 1)})
	expect(t, trs[1], zab.Message{Type: zab.MsgNotification, From: 1})
	expect(t, trs[0], zab.Message{Type: zab.MsgNotification, From: 2})
	openLink(t, trs[1], trs[0])
	trs[0].Send([]zab.Message{{Type: zab.MsgLeaderInfo, From: 1, To: 2, Zxid: 0x200000000}})
	expect(t, trs[1], zab.Message{Type: zab.MsgLeaderInfo, From: 1})

	// The transport tracks a connection it accepted by its raw socket until
	// the TLS handshake ends (to close it on Close): a duplicate election
	// connection may still be mid-handshake here on a busy machine. Every
	// connection must end up TLS; a plaintext one never would.
	var plain []net.Conn
	for deadline := time.Now().Add(testhost.Scale(10 * time.Second)); ; time.Sleep(10 * time.Millisecond) {
		plain = plain[:0]
		trs[0].mu.Lock()
		for c := range trs[0].conns {
			if _, ok := c.(*tls.Conn); !ok {
				plain = append(plain, c)
			}
		}
		trs[0].mu.Unlock()
		if len(plain) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, c := range plain {
		t.Errorf("connection %v is not TLS", c.RemoteAddr())
	}
}

// TestTLSRefusals checks that a TLS-only member refuses a plaintext peer,
// a peer whose certificate its trust store does not vouch for, and (with
// hostname verification) one whose certificate does not name its
// address; the learner sees its link go down and the leader hears nothing
// from it.
func TestTLSRefusals(t *testing.T) {
	p := newTestPKI(t)
	tests := []struct {
		name    string
		learner *TLS
	}{
		{"plaintext", nil},
		{"untrusted certificate", p.secure(t, true, false, loopback)},
		{"certificate for another address", p.secure(t, false, false, net.IPv4(192, 0, 2, 1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trs := startTransports(t, 3, withTLS(p.secure(t, false, false, loopback), tt.learner, p.secure(t, false, false, loopback)))
			leader, bad, good := trs[0], trs[1], trs[2]
			bad.Send([]zab.Message{followerInfo(2, 1)})
			expect(t, bad, zab.Message{Type: zab.MsgDisconnected, From: 1})
			// The good member still gets through, and is the first the
			// leader hears from.
			openLink(t, good, leader)

			// The same on the election port, in the raw: a plaintext
			// handshake is closed unread.
			expectClosed(t, rawConn(t, leader.ElectionAddr(), mustHandshake(t, 3)))
		})
	}
}

// TestTLSHostnameVerificationOff lets a certificate that names another
// address in when ssl.quorum.hostnameVerification is false.
func TestTLSHostnameVerificationOff(t *testing.T) {
	p := newTestPKI(t)
	a, b := p.secure(t, false, false, loopback), p.secure(t, false, false, net.IPv4(192, 0, 2, 1))
	a.HostnameVerification, b.HostnameVerification = false, false
	trs := startTransports(t, 2, withTLS(a, b))
	openLink(t, trs[1], trs[0])
}

// TestPortUnification checks a member with portUnification: it takes TLS
// and plaintext peers on both ports, and dials in TLS only with sslQuorum.
func TestPortUnification(t *testing.T) {
	p := newTestPKI(t)
	unified := p.secure(t, false, true, loopback)
	unifiedPlainDial := p.secure(t, false, true, loopback)
	unifiedPlainDial.Dial = false
	trs := startTransports(t, 4, withTLS(unified, nil, p.secure(t, false, false, loopback), unifiedPlainDial))
	leader := trs[0]
	for _, learner := range trs[1:] {
		openLink(t, learner, leader)
		learner.Send([]zab.Message{notification(learner.cfg.ID, 1)})
		expect(t, leader, zab.Message{Type: zab.MsgNotification, From: learner.cfg.ID})
	}
	// A member that accepts both but dials in plaintext reaches a
	// plaintext one.
	openLink(t, trs[1], trs[3])
}

// TestTLSDetectionTimeout closes a connection that sends nothing within
// the detection timeout.
func TestTLSDetectionTimeout(t *testing.T) {
	p := newTestPKI(t)
	sec := p.secure(t, false, true, loopback)
	sec.DetectionTimeout = 50 * time.Millisecond
	trs := startTransports(t, 1, withTLS(sec))
	expectClosed(t, rawConn(t, trs[0].QuorumAddr(), nil))
}

// writePEM writes certificates (and a key, when key is not nil) to path
// through a rename, as an operator replaces a store.
func writePEM(t *testing.T, path string, key any, certs ...*x509.Certificate) {
	t.Helper()
	var b []byte
	if key != nil {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})...)
	}
	for _, c := range certs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestTLSReload checks sslQuorumReloadCertFiles: a member whose trust
// store file is replaced refuses, on its next handshake, a peer only the
// old file trusted, and takes it again once the file is put back.
func TestTLSReload(t *testing.T) {
	p := newTestPKI(t)
	dir := t.TempDir()
	leaderCert := testCert(t, "leader", &p.ca, false, loopback)
	keyPath, trustPath := filepath.Join(dir, "key.pem"), filepath.Join(dir, "trust.pem")
	writePEM(t, keyPath, leaderCert.PrivateKey, leaderCert.Leaf)
	writePEM(t, trustPath, nil, p.ca.Leaf)
	certs, err := clienttls.New(clienttls.Config{Prefix: "ssl.quorum.",
		KeyStore:   clienttls.Store{Location: keyPath},
		TrustStore: clienttls.Store{Location: trustPath},
		Reload:     true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	leaderTLS := &TLS{Certificates: certs, Dial: true, HostnameVerification: true}
	trs := startTransports(t, 2, withTLS(leaderTLS, p.secure(t, false, false, loopback)))
	leader, learner := trs[0], trs[1]
	openLink(t, learner, leader)

	writePEM(t, trustPath, nil, p.rogue.Leaf)
	learner.Send([]zab.Message{followerInfo(2, 1)}) // a new link replaces the old
	expect(t, learner, zab.Message{Type: zab.MsgDisconnected, From: 1})
	expect(t, leader, zab.Message{Type: zab.MsgDisconnected, From: 2}) // the old link

	writePEM(t, trustPath, nil, p.ca.Leaf)
	openLink(t, learner, leader)
}

// TestTLSWantUntrustedCertificate checks ssl.quorum.clientAuth=want with a
// learner whose certificate a CA the leader does not trust issued: the
// leader's CertificateRequest names its own CA only, so the learner
// presents no certificate and is let in, as a ZooKeeper member is; under
// need the same learner is refused.
func TestTLSWantUntrustedCertificate(t *testing.T) {
	p := newTestPKI(t)
	for _, tt := range []struct {
		auth   tls.ClientAuthType
		joined bool
	}{
		{tls.VerifyClientCertIfGiven, true},
		{tls.RequireAndVerifyClientCert, false},
	} {
		t.Run(tt.auth.String(), func(t *testing.T) {
			leaderTLS := p.secure(t, false, false, loopback)
			leaderTLS.Certificates.(staticCerts).cfg.ClientAuth = tt.auth
			trs := startTransports(t, 2, withTLS(leaderTLS, p.secure(t, true, false, loopback)))
			leader, learner := trs[0], trs[1]
			if tt.joined {
				openLink(t, learner, leader)
				return
			}
			learner.Send([]zab.Message{followerInfo(2, 1)})
			expect(t, learner, zab.Message{Type: zab.MsgDisconnected, From: 1})
		})
	}
}

// TestClientCertificate checks which certificate a dialling member
// answers a CertificateRequest with: its own when the request names no
// CA or the CA of a certificate in its chain, none otherwise.
func TestClientCertificate(t *testing.T) {
	p := newTestPKI(t)
	leaf := testCert(t, "member", &p.ca, false, loopback)
	inter := testCert(t, "intermediate", &p.ca, true)
	viaInter := testCert(t, "member", &inter, false, loopback)
	viaInter.Certificate = append(viaInter.Certificate, inter.Certificate[0])
	caName, rogueName := p.ca.Leaf.RawSubject, p.rogue.Leaf.RawSubject
	tests := []struct {
		name      string
		cert      tls.Certificate
		names     [][]byte
		presented bool
	}{
		{"no CA named", leaf, nil, true},
		{"its CA named", leaf, [][]byte{caName}, true},
		{"its CA among others", leaf, [][]byte{rogueName, caName}, true},
		{"another CA named", leaf, [][]byte{rogueName}, false},
		{"the root of its chain named", viaInter, [][]byte{caName}, true},
		{"the intermediate named", viaInter, [][]byte{inter.Leaf.RawSubject}, true},
		{"neither named", viaInter, [][]byte{rogueName}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cri := &tls.CertificateRequestInfo{AcceptableCAs: tt.names, Version: tls.VersionTLS12,
				SignatureSchemes: []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256, tls.PSSWithSHA256}}
			got := clientCertificate(cri, &tt.cert)
			if presented := len(got.Certificate) > 0; presented != tt.presented {
				t.Errorf("presented = %v, want %v", presented, tt.presented)
			}
		})
	}
}
