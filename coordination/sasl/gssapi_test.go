package sasl

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"keeper/coordination/kerberos"
	"keeper/coordination/kerberos/kerberostest"
)

const (
	testRealm   = "EXAMPLE.COM"
	testService = "zookeeper/localhost"
)

var gssNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func gssapiConfig(t *testing.T) *GSSAPIConfig {
	t.Helper()
	acc, err := kerberos.NewAcceptor(kerberos.Config{
		Keytab:    kerberostest.Keytab(t, testService, testRealm, "service-secret"),
		Principal: testService + "@" + testRealm,
		Entropy:   rand.Reader,
	})
	if err != nil {
		t.Fatal(err)
	}
	// ZooKeeper's rule in the default realm, with the realm kept.
	authorize := func(authn, authz string) (string, error) { return authn, nil }
	cfg := &GSSAPIConfig{Acceptor: acc, Now: func() time.Time { return gssNow }, Authorize: authorize}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestGSSAPIExchange(t *testing.T) {
	tests := []struct {
		name string
		// answer is the client's security-layer answer (wrapped), or
		// nil to stop after the offer.
		answer []byte
		second []byte // the second token; the empty one when nil
		wantID string
		abort  bool
		fail   bool
	}{
		{name: "no layer", answer: []byte{1, 0, 0, 0}, wantID: "alice@" + testRealm},
		{name: "authorization id is passed on", answer: []byte("\x01\x00\x00\x00bob"), wantID: "alice@" + testRealm},
		{name: "no layer among others", answer: []byte{7, 0, 0, 0}, wantID: "alice@" + testRealm},
		{name: "privacy only", answer: []byte{4, 0, 0, 0}, fail: true},
		{name: "integrity only", answer: []byte{2, 0, 0, 0}, fail: true},
		{name: "short answer", answer: []byte{1, 0, 0}, abort: true},
		{name: "authorization id not UTF-8", answer: []byte("\x01\x00\x00\x00\xff"), fail: true},
		{name: "non-empty second token", second: []byte("x"), fail: true},
	}
	for _, tc := range tests {
		for _, mutual := range []bool{true, false} {
			if tc.second != nil && !mutual {
				continue // without an AP-REP there is no second token to get wrong
			}
			t.Run(fmt.Sprintf("%s/mutual=%v", tc.name, mutual), func(t *testing.T) {
				login := kerberostest.NewLogin(t, "alice", testService, testRealm, "service-secret", gssNow, mutual)
				m := NewGSSAPI(gssapiConfig(t))
				first, err := m.Evaluate(login.Token)
				if err != nil {
					t.Fatal(err)
				}
				offer := first
				if mutual {
					// An AP-REP (a context token), then the offer for the
					// empty token.
					if len(first) == 0 || first[0] != 0x60 {
						t.Fatalf("context step: %x, want an AP-REP", first)
					}
					second := tc.second
					if second == nil {
						second = []byte{}
					}
					offer, err = m.Evaluate(second)
				}
				if err == nil {
					// Java's server: the wrapped offer, no layer and 65536.
					if len(offer) < 20 || offer[0] != 0x05 || offer[1] != 0x04 || !bytes.Equal(offer[16:20], []byte{1, 1, 0, 0}) {
						t.Fatalf("offer %x", offer)
					}
					_, err = m.Evaluate(login.Wrap(t, tc.answer))
				}
				var se *Error
				switch {
				case tc.fail || tc.abort:
					if !errors.As(err, &se) || se.Abort != tc.abort {
						t.Fatalf("err %v, want a failure with Abort=%v", err, tc.abort)
					}
					if m.Complete() {
						t.Fatal("complete after a failure")
					}
				default:
					if err != nil {
						t.Fatal(err)
					}
					if !m.Complete() || m.AuthorizationID() != tc.wantID {
						t.Fatalf("complete %v, id %q; want %q", m.Complete(), m.AuthorizationID(), tc.wantID)
					}
				}
				if _, err := m.Evaluate([]byte{}); err == nil {
					t.Fatal("a token after the exchange ended was taken")
				}
			})
		}
	}
}

func TestGSSAPIBadTickets(t *testing.T) {
	for name, login := range map[string]*kerberostest.Login{
		"wrong service key":  kerberostest.NewLogin(t, "alice", testService, testRealm, "stale", gssNow, false),
		"wrong principal":    kerberostest.NewLogin(t, "alice", "zookeeper/other", testRealm, "service-secret", gssNow, false),
		"clock far off":      kerberostest.NewLogin(t, "alice", testService, testRealm, "service-secret", gssNow.Add(-time.Hour), false),
		"garbage as a token": {Token: []byte("garbage")},
	} {
		m := NewGSSAPI(gssapiConfig(t))
		_, err := m.Evaluate(login.Token)
		var se *Error
		if !errors.As(err, &se) || se.Abort {
			t.Errorf("%s: %v, want a failure", name, err)
		}
	}
}

// FuzzGSSAPI runs arbitrary security-layer answers, wrapped correctly,
// through an established exchange: no panic, and a completed exchange has
// an identity.
func FuzzGSSAPI(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0})
	f.Add([]byte("\x01\x00\x00\x00bob"))
	f.Add([]byte{4})
	f.Fuzz(func(t *testing.T, answer []byte) {
		login := kerberostest.NewLogin(t, "alice", testService, testRealm, "service-secret", gssNow, false)
		m := NewGSSAPI(gssapiConfig(t))
		if _, err := m.Evaluate(login.Token); err != nil {
			t.Fatal(err)
		}
		_, err := m.Evaluate(login.Wrap(t, answer))
		if err == nil && (!m.Complete() || m.AuthorizationID() == "") {
			t.Fatalf("answer %x: no error, complete %v, id %q", answer, m.Complete(), m.AuthorizationID())
		}
	})
}
