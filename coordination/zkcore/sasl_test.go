package zkcore

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// saslEntropy makes every nonce the same, so a test can answer a
// challenge before it has seen it.
var saslEntropy = bytes.Repeat([]byte{5}, 30*64)

func saslNonce() string { return base64.StdEncoding.EncodeToString(saslEntropy[:30]) }

// withSASL configures kazoo's test users, the sasl provider and the given
// enforced schemes.
func withSASL(enforce ...string) func(*Config) {
	return func(c *Config) {
		c.Auth = AuthConfig{
			SASLUsers:      map[string]string{"super": "super_secret", "jaasuser": "jaas_password"},
			Entropy:        bytes.NewReader(saslEntropy),
			SASLProvider:   true,
			EnforceSchemes: enforce,
		}
	}
}

// digestResponse is a DIGEST-MD5 client's response (RFC 2831) to the
// challenge with nonce.
func digestResponse(user, password, nonce string) []byte {
	h := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	uri := "zookeeper/zk-sasl-md5"
	secret := md5.Sum([]byte(user + ":zk-sasl-md5:" + password))
	a1 := h(string(secret[:]) + ":" + nonce + ":cn")
	resp := h(a1 + ":" + nonce + ":00000001:cn:auth:" + h("AUTHENTICATE:"+uri))
	return []byte(fmt.Sprintf(`charset=utf-8,username="%s",realm="zk-sasl-md5",nonce="%s",nc=00000001,cnonce="cn",digest-uri="%s",maxbuf=65536,response=%s,qop=auth`,
		user, nonce, uri, resp))
}

// saslReply decodes a sasl reply's SetSASLResponse; a reply must always
// carry one, an error reply too.
func saslReply(t *testing.T, f frame) []byte {
	t.Helper()
	var r zkproto.SetSASLResponse
	d := jute.NewDecoder(f.body, 0)
	r.Decode(d)
	if d.Err() != nil || d.Remaining() != 0 {
		t.Fatalf("sasl reply body %x: %v", f.body, d.Err())
	}
	return r.Token
}

func whoAmI(h *harness, id ConnID) []zkproto.ClientInfo {
	h.t.Helper()
	x := h.send(id, zkproto.OpWhoAmI, nil)
	fs := h.expect(id, ok(x))
	var who zkproto.WhoAmIResponse
	h.decode(fs[0], &who)
	return who.ClientInfo
}

// TestSASLDigest runs a DIGEST-MD5 exchange: the challenge, the rspauth,
// zxid 0 on both, the sasl identity, and an ACL that names it.
func TestSASLDigest(t *testing.T) {
	h := newHarness(t, withSASL())
	h.open(1)
	h.open(2)
	x := h.send(1, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: []byte{}})
	fs := h.expect(1, zkproto.ReplyHeader{Xid: x})
	if want := `realm="zk-sasl-md5",nonce="` + saslNonce() + `",charset=utf-8,algorithm=md5-sess`; string(saslReply(t, fs[0])) != want || fs[0].hdr.Zxid != 0 {
		t.Fatalf("challenge %+v %q, want %q", fs[0].hdr, saslReply(t, fs[0]), want)
	}
	x = h.send(1, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: digestResponse("jaasuser", "jaas_password", saslNonce())})
	fs = h.expect(1, zkproto.ReplyHeader{Xid: x})
	if !strings.HasPrefix(string(saslReply(t, fs[0])), "rspauth=") || fs[0].hdr.Zxid != 0 {
		t.Fatalf("final reply %+v %q", fs[0].hdr, saslReply(t, fs[0]))
	}
	want := []zkproto.ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}, {AuthScheme: "sasl", User: "jaasuser"}}
	if got := whoAmI(h, 1); !slices.Equal(got, want) {
		t.Fatalf("whoAmI %+v, want %+v", got, want)
	}
	c := create("/s", "x", 0)
	c.ACL = []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: "sasl", ID: "jaasuser"}}}
	x = h.send(1, zkproto.OpCreate, c)
	h.expect(1, ok(x))
	x = h.send(2, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/s"})
	h.expect(2, zkproto.ReplyHeader{Xid: x, Err: zkproto.CodeNoAuth})
	x = h.send(1, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/s"})
	h.expect(1, ok(x))
}

// TestSASLOutcomes checks how a sasl request ends for each kind of token and
// configuration, as Apache ZooKeeper 3.8.0 answers (docs/sasl.md).
func TestSASLOutcomes(t *testing.T) {
	type want struct {
		reply  bool // a reply frame (zxid 0, with a SetSASLResponse)
		code   zkproto.Code
		closed bool
	}
	good := func(string) []byte { return digestResponse("jaasuser", "jaas_password", saslNonce()) }
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		token  func(nonce string) []byte // the second token, after the challenge
		want   want
	}{
		{"good", withSASL(), good, want{reply: true}},
		{"wrong password", withSASL(), func(n string) []byte { return digestResponse("jaasuser", "wrong", n) }, want{true, zkproto.CodeAuthFailed, true}},
		{"unknown user", withSASL(), func(n string) []byte { return digestResponse("bob", "jaas_password", n) }, want{true, zkproto.CodeAuthFailed, true}},
		{"garbled", withSASL(), func(string) []byte { return []byte("\x00\x01garbage") }, want{true, zkproto.CodeAuthFailed, true}},
		{"wrong password with SASL required", withSASL("sasl"), func(n string) []byte { return digestResponse("jaasuser", "wrong", n) },
			want{true, zkproto.CodeSessionClosedRequireSaslAuth, true}},
		{"wrong password with digest required", withSASL("digest"), func(n string) []byte { return digestResponse("jaasuser", "wrong", n) },
			want{true, zkproto.CodeAuthFailed, true}},
		{"allowSaslFailedClients", func(c *Config) { withSASL()(c); c.Auth.AllowSASLFailedClients = true },
			func(n string) []byte { return digestResponse("jaasuser", "wrong", n) }, want{reply: true}},
		{"allowSaslFailedClients but SASL required", func(c *Config) { withSASL("sasl")(c); c.Auth.AllowSASLFailedClients = true },
			func(n string) []byte { return digestResponse("jaasuser", "wrong", n) }, want{true, zkproto.CodeSessionClosedRequireSaslAuth, true}},
		{"maxbuf not a number", withSASL(), func(n string) []byte {
			return bytes.Replace(digestResponse("jaasuser", "jaas_password", n), []byte("maxbuf=65536"), []byte("maxbuf=x"), 1)
		}, want{closed: true}},
		{"null token", withSASL(), func(string) []byte { return nil }, want{closed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.mutate)
			h.open(1)
			h.open(2)
			// Connection 2 authenticates first, to pass any enforcement.
			h.send(2, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")})
			h.send(2, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: []byte{}})
			h.send(2, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: good("")})
			if fs := h.take(2); len(fs) != 3 || h.closed[2] {
				t.Fatalf("connection 2: frames %+v", headers(fs))
			}
			h.send(1, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: []byte{}})
			h.take(1)
			x := h.send(1, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: tc.token(saslNonce())})
			fs := h.take(1)
			if tc.want.reply {
				if len(fs) != 1 || fs[0].hdr != (zkproto.ReplyHeader{Xid: x, Zxid: 0, Err: tc.want.code}) {
					t.Fatalf("frames %+v, want one with %v", headers(fs), tc.want.code)
				}
				tok := saslReply(t, fs[0])
				if (tok == nil) != (tc.want.code != 0 || tc.name != "good") {
					t.Fatalf("token %q", tok)
				}
			} else if len(fs) != 0 {
				t.Fatalf("frames %+v, want none", headers(fs))
			}
			if h.closed[1] != tc.want.closed {
				t.Fatalf("closed = %v, want %v", h.closed[1], tc.want.closed)
			}
			// Everyone else is served.
			x = h.send(2, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
			h.expect(2, ok(x))
		})
	}
}

// TestSASLNotConfigured: without a JAAS Server section a token gets an
// empty reply and the connection stays open; a frame without a token, or
// one that does not decode, drops it.
func TestSASLNotConfigured(t *testing.T) {
	h := newHarness(t)
	h.open(1)
	x := h.send(1, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: []byte("hello")})
	fs := h.expect(1, zkproto.ReplyHeader{Xid: x})
	if tok := saslReply(t, fs[0]); tok != nil || h.closed[1] {
		t.Fatalf("token %q, closed %v", tok, h.closed[1])
	}
	for _, payload := range [][]byte{
		zkproto.EncodeRequest(zkproto.RequestHeader{Xid: 9, Op: zkproto.OpSASL}, nil),
		zkproto.EncodeRequest(zkproto.RequestHeader{Xid: 9, Op: zkproto.OpSASL}, &zkproto.GetSASLRequest{}),
	} {
		h := newHarness(t)
		h.open(1)
		r, err := DecodeRequest(payload, 0)
		if err != nil {
			t.Fatal(err)
		}
		h.s.Request(1, r, h.now)
		h.drive()
		if fs := h.take(1); len(fs) != 0 || !h.closed[1] {
			t.Fatalf("payload %x: frames %+v, closed %v; want none and closed", payload, headers(fs), h.closed[1])
		}
	}
}

// TestEnforcedAuth: an unauthenticated connection's requests, ping and
// unknown opcodes included, get SessionClosedRequireSaslAuth with zxid 0
// and no body, and the connection closes; auth and sasl pass, and once
// authenticated with an enforced scheme everything does.
func TestEnforcedAuth(t *testing.T) {
	for _, tc := range []struct {
		name    string
		enforce []string
		op      zkproto.Op
		body    jute.Record
	}{
		{"ping", []string{"sasl"}, zkproto.OpPing, nil},
		{"exists", []string{"sasl"}, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"}},
		{"create", []string{"sasl"}, zkproto.OpCreate, create("/x", "", 0)},
		{"closeSession", []string{"sasl"}, zkproto.OpCloseSession, nil},
		{"unknown opcode", []string{"sasl"}, 999, nil},
		{"digest enforced", []string{"digest"}, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/"}},
		{"several schemes", []string{"digest", "sasl"}, zkproto.OpWhoAmI, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withSASL(tc.enforce...))
			h.open(1)
			x := h.send(1, tc.op, tc.body)
			fs := h.expect(1, zkproto.ReplyHeader{Xid: x, Err: zkproto.CodeSessionClosedRequireSaslAuth})
			if fs[0].hdr.Zxid != 0 || len(fs[0].body) != 0 || !h.closed[1] {
				t.Fatalf("reply %+v body %x closed %v", fs[0].hdr, fs[0].body, h.closed[1])
			}
		})
	}

	h := newHarness(t, withSASL("sasl"))
	h.open(1)
	h.send(1, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")})
	h.send(1, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: []byte{}})
	h.send(1, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: digestResponse("super", "super_secret", saslNonce())})
	if fs := h.take(1); len(fs) != 3 || h.closed[1] {
		t.Fatalf("auth and sasl: frames %+v closed %v", headers(fs), h.closed[1])
	}
	x := h.send(1, zkproto.OpCreate, create("/x", "", 0))
	h.expect(1, ok(x))
	x = h.send(1, zkproto.OpPing, nil)
	h.expect(1, ok(x))
}

// TestEnforcedAuthWaitsForEarlierSASL: a request pipelined behind the sasl
// tokens that authenticate its connection is judged after they ran, even
// when the connection's output budget holds them all back.
func TestEnforcedAuthWaitsForEarlierSASL(t *testing.T) {
	h := newHarness(t, withSASL("sasl"), func(c *Config) { c.MaxConnOutputBytes = 1 })
	h.open(1)
	h.s.Request(1, Request{Header: zkproto.RequestHeader{Xid: 1, Op: zkproto.OpSASL}, Body: &zkproto.GetSASLRequest{Token: []byte{}}}, h.now)
	h.s.Request(1, Request{Header: zkproto.RequestHeader{Xid: 2, Op: zkproto.OpSASL},
		Body: &zkproto.GetSASLRequest{Token: digestResponse("jaasuser", "jaas_password", saslNonce())}}, h.now)
	h.s.Request(1, Request{Header: zkproto.RequestHeader{Xid: 3, Op: zkproto.OpExists}, Body: &zkproto.ExistsRequest{Path: "/"}}, h.now)
	h.drive()
	var got []zkproto.ReplyHeader
	for range 10 {
		h.s.Written(1, 1<<20, h.now)
		h.drive()
		for _, f := range h.take(1) {
			got = append(got, f.hdr)
		}
	}
	if len(got) != 3 || got[2].Xid != 3 || got[2].Err != zkproto.CodeOK || h.closed[1] {
		t.Fatalf("replies %+v closed %v; want the exists answered", got, h.closed[1])
	}
}

// TestAuthConfigValidate: each enforced scheme needs its provider.
func TestAuthConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  AuthConfig
		ok   bool
	}{
		{"sasl with the provider", AuthConfig{SASLProvider: true, EnforceSchemes: []string{"sasl"}}, true},
		{"sasl without the provider", AuthConfig{EnforceSchemes: []string{"sasl"}}, false},
		{"ip and digest", AuthConfig{EnforceSchemes: []string{"ip", "digest"}}, true},
		{"world", AuthConfig{EnforceSchemes: []string{"world"}}, false},
		{"empty scheme", AuthConfig{EnforceSchemes: []string{"digest", ""}}, false},
		{"x509 without TLS", AuthConfig{EnforceSchemes: []string{"x509"}}, false},
		{"users without entropy", AuthConfig{SASLUsers: map[string]string{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Auth = tc.cfg
			_, err := New(cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("New: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
