package zkcore

import (
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"keeper/coordination/kerberos"
	"keeper/coordination/kerberos/kerberostest"
	"keeper/coordination/zkproto"
)

var gssNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// withKerberos configures GSSAPI for zookeeper/localhost@EXAMPLE.COM, the
// sasl provider, the default realm and the given host rule.
func withKerberos(t *testing.T, removeHost bool) func(*Config) {
	return func(c *Config) {
		acc, err := kerberos.NewAcceptor(kerberos.Config{
			Keytab:    kerberostest.Keytab(t, "zookeeper/localhost", "EXAMPLE.COM", "service-secret"),
			Principal: "zookeeper/localhost@EXAMPLE.COM",
			Entropy:   rand.Reader,
		})
		if err != nil {
			t.Fatal(err)
		}
		c.Auth = AuthConfig{Kerberos: acc, Now: func() time.Time { return gssNow }, SASLProvider: true,
			KerberosRealm: "EXAMPLE.COM", RemoveHostFromPrincipal: removeHost}
	}
}

// TestSASLGSSAPI logs in with Kerberos tickets: the identity follows
// ZooKeeper's principal rules and opens a sasl ACL; a bad ticket and a
// replayed one get AuthFailed and the close of that connection alone.
func TestSASLGSSAPI(t *testing.T) {
	for _, tc := range []struct {
		name       string
		client     string
		removeHost bool
		password   string // the service key the ticket is encrypted with
		replay     bool
		wantID     string // "" when the login fails
	}{
		{name: "user", client: "alice", password: "service-secret", wantID: "alice@EXAMPLE.COM"},
		{name: "service with host", client: "kafka/broker1", password: "service-secret", wantID: "kafka/broker1@EXAMPLE.COM"},
		{name: "host removed", client: "kafka/broker1", removeHost: true, password: "service-secret", wantID: "kafka@EXAMPLE.COM"},
		{name: "stale service key", client: "alice", password: "old", wantID: ""},
		{name: "replayed token", client: "alice", password: "service-secret", replay: true, wantID: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withKerberos(t, tc.removeHost))
			h.open(1)
			h.open(2)
			login := kerberostest.NewLogin(t, tc.client, "zookeeper/localhost", "EXAMPLE.COM", tc.password, gssNow, false)
			if tc.replay {
				h.open(3)
				h.send(3, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: login.Token})
				if fs := h.take(3); len(fs) != 1 || fs[0].hdr.Err != 0 || h.closed[3] {
					t.Fatalf("first use: %+v", headers(fs))
				}
			}
			x := h.send(1, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: login.Token})
			if tc.wantID == "" {
				fs := h.expect(1, zkproto.ReplyHeader{Xid: x, Err: zkproto.CodeAuthFailed})
				if tok := saslReply(t, fs[0]); tok != nil || !h.closed[1] {
					t.Fatalf("failed login: token %x, closed %v; want the null token and a close", tok, h.closed[1])
				}
				// Everyone else is served.
				h.expect(2, ok(h.send(2, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})))
				return
			}
			// No mutual authentication: the reply is the wrapped offer.
			h.expect(1, zkproto.ReplyHeader{Xid: x})
			x = h.send(1, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: login.Wrap(t, []byte{1, 0, 0, 0})})
			fs := h.expect(1, zkproto.ReplyHeader{Xid: x})
			if tok := saslReply(t, fs[0]); tok != nil {
				t.Fatalf("final token %x, want the null token", tok)
			}
			want := []zkproto.ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}, {AuthScheme: "sasl", User: tc.wantID}}
			if got := whoAmI(h, 1); !slices.Equal(got, want) {
				t.Fatalf("whoAmI %+v, want %+v", got, want)
			}
			c := create("/s", "x", 0)
			c.ACL = []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: "sasl", ID: tc.wantID}}}
			h.expect(1, ok(h.send(1, zkproto.OpCreate, c)))
			x = h.send(2, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/s"})
			h.expect(2, zkproto.ReplyHeader{Xid: x, Err: zkproto.CodeNoAuth})
		})
	}
}
