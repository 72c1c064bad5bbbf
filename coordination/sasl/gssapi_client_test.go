package sasl

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"keeper/coordination/kerberos/kerberostest"
)

// runGSSAPI runs client against a server mechanism until both are done
// or one fails, as the quorum exchange carries the tokens.
func runGSSAPI(t *testing.T, c *GSSAPIClient, s *GSSAPI) error {
	t.Helper()
	tok := c.InitialResponse()
	for range 5 {
		reply, err := s.Evaluate(tok)
		if err != nil {
			return err
		}
		if s.Complete() {
			if !c.Complete() {
				t.Fatal("the server completed before the client")
			}
			return nil
		}
		if tok, err = c.Evaluate(reply); err != nil {
			return err
		}
	}
	t.Fatal("the exchange did not end")
	return nil
}

func TestGSSAPIClientAgainstServer(t *testing.T) {
	tests := []struct {
		name, client, authz, wantID, wantErr string
	}{
		{name: "authorization id is the principal", client: "zkquorum/host2", authz: "zkquorum/host2@" + testRealm, wantID: "zkquorum/host2@" + testRealm},
		{name: "no authorization id", client: "alice", wantID: "alice@" + testRealm},
		{name: "another authorization id", client: "alice", authz: "bob@" + testRealm, wantErr: "not alice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := gssapiConfig(t)
			cfg.Authorize = func(authn, authz string) (string, error) {
				if authn != authz {
					return "", fmt.Errorf("%s is not %s", authz, authn)
				}
				return authz, nil
			}
			in, first := kerberostest.Initiator(t, tc.client, testService, testRealm, "service-secret", gssNow, rand.Reader)
			authz := tc.authz
			if authz == "" {
				authz = tc.client + "@" + testRealm
			}
			s := NewGSSAPI(cfg)
			err := runGSSAPI(t, NewGSSAPIClient(in, first, authz), s)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.AuthorizationID() != tc.wantID {
				t.Fatalf("id %q, want %q", s.AuthorizationID(), tc.wantID)
			}
		})
	}
}

// TestGSSAPIClientRefusals: a server token the client cannot take fails
// the exchange for good.
func TestGSSAPIClientRefusals(t *testing.T) {
	cfg := gssapiConfig(t)
	in, first := kerberostest.Initiator(t, "alice", testService, testRealm, "service-secret", gssNow, rand.Reader)
	s := NewGSSAPI(cfg)
	rep, err := s.Evaluate(first)
	if err != nil {
		t.Fatal(err)
	}
	c := NewGSSAPIClient(in, first, "alice@"+testRealm)
	if _, err := c.Evaluate([]byte("not an AP-REP")); err == nil {
		t.Fatal("garbage taken as the AP-REP")
	}
	if _, err := c.Evaluate(rep); err == nil {
		t.Fatal("a failed exchange went on")
	}
	if c.Complete() {
		t.Fatal("a failed exchange is complete")
	}

	// An offer without "no layer".
	in, first = kerberostest.Initiator(t, "alice", testService, testRealm, "service-secret", gssNow.Add(time.Second), rand.Reader)
	s = NewGSSAPI(cfg)
	if rep, err = s.Evaluate(first); err != nil {
		t.Fatal(err)
	}
	c = NewGSSAPIClient(in, first, "alice@"+testRealm)
	if _, err := c.Evaluate(rep); err != nil {
		t.Fatal(err)
	}
	// The server's own offer would come next; this one takes its place.
	bad, err := s.ctx.Wrap([]byte{2, 0, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Evaluate(bad); err == nil || !strings.Contains(err.Error(), "without 0x01") {
		t.Fatalf("an offer of integrity only: %v", err)
	}
}
