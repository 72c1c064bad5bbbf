package clientconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/internal/metric"
	"keeper/internal/testhost"
)

// fourLetterOnly answers every four-letter word with "imok" and reports
// when its connection closes.
type fourLetterOnly struct{ closed chan struct{} }

func (h fourLetterOnly) FourLetter(*Conn, string, int64) []byte { return []byte("imok") }
func (fourLetterOnly) Connect(*Conn, *zkproto.ConnectRequest)   {}
func (fourLetterOnly) Request(*Conn, zkcore.Request)            {}
func (fourLetterOnly) Written(*Conn, int)                       {}
func (h fourLetterOnly) Closed(*Conn, error)                    { close(h.closed) }

// selfSigned returns a server configuration with a fresh certificate for
// 127.0.0.1.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "keeper"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// ruok sends a four-letter word over nc and reads until the server closes.
func ruok(nc net.Conn) {
	nc.Write([]byte("ruok"))
	io.Copy(io.Discard, nc)
	nc.Close()
}

// Each way a connection starts moves exactly its own count: a plaintext
// client on a plain port or beside TLS, a TLS client, a plaintext client
// on a TLS-only port (a failed handshake), a client that says nothing to
// a TLS port (a handshake under way until it goes) or to a plain one (cut
// off when no opening frame came in time).
func TestStatsCountConnectionStarts(t *testing.T) {
	tlsCfg := selfSigned(t)
	tests := []struct {
		name         string
		tls          bool
		plaintextToo bool
		client       func(t *testing.T, addr string, st *Stats)
		plaintext    int64
		failed       int64
		expired      int64
		// openingTimeout, if set, is the HandshakeTimeout: how long the
		// server waits for the opening frame.
		openingTimeout time.Duration
	}{
		{name: "plaintext port", client: func(t *testing.T, addr string, _ *Stats) { ruok(dial(t, addr)) }, plaintext: 1},
		{name: "plaintext beside TLS", tls: true, plaintextToo: true,
			client: func(t *testing.T, addr string, _ *Stats) { ruok(dial(t, addr)) }, plaintext: 1},
		{name: "TLS client", tls: true, client: func(t *testing.T, addr string, _ *Stats) {
			ruok(tls.Client(dial(t, addr), &tls.Config{InsecureSkipVerify: true}))
		}},
		{name: "plaintext on TLS port", tls: true, client: func(t *testing.T, addr string, _ *Stats) {
			nc := dial(t, addr)
			nc.Write([]byte("ruok")) // not a whole TLS record: the server reads on until the close
			nc.Close()
		}, failed: 1},
		{name: "silent client", tls: true, client: func(t *testing.T, addr string, st *Stats) {
			nc := dial(t, addr)
			waitFor(t, func() bool { return st.HandshakesInProgress.Load() == 1 }, "a handshake under way")
			nc.Close()
		}, failed: 1},
		{name: "silent plaintext client", openingTimeout: 200 * time.Millisecond, client: func(t *testing.T, addr string, _ *Stats) {
			nc := dial(t, addr)
			io.Copy(io.Discard, nc) // until the server gives up on it
			nc.Close()
		}, plaintext: 1, expired: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			st := &Stats{FailedHandshakes: new(metric.Counter), SessionlessExpired: new(metric.Counter)}
			cfg := DefaultConfig()
			if tc.openingTimeout > 0 {
				cfg.HandshakeTimeout = tc.openingTimeout
			}
			cfg.Stats = st
			if tc.tls {
				cfg.TLS, cfg.PlaintextToo = tlsCfg, tc.plaintextToo
			}
			h := fourLetterOnly{closed: make(chan struct{})}
			go func() {
				nc, err := ln.Accept()
				if err == nil {
					New(1, nc, cfg, h).Start()
				}
			}()
			tc.client(t, ln.Addr().String(), st)
			select {
			case <-h.closed:
			case <-time.After(testhost.Scale(10 * time.Second)):
				t.Fatal("the connection did not close")
			}
			if got := st.PlaintextLoopback.Load(); got != tc.plaintext {
				t.Errorf("plaintext loopback %d, want %d", got, tc.plaintext)
			}
			if got := st.FailedHandshakes.Load(); got != tc.failed {
				t.Errorf("failed handshakes %d, want %d", got, tc.failed)
			}
			if got := st.SessionlessExpired.Load(); got != tc.expired {
				t.Errorf("sessionless expired %d, want %d", got, tc.expired)
			}
			if st.PlaintextRemote.Load() != 0 || st.HandshakesInProgress.Load() != 0 {
				t.Errorf("remote %d, in progress %d after the close", st.PlaintextRemote.Load(), st.HandshakesInProgress.Load())
			}
		})
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, testhost.Scale(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(testhost.Scale(10 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
