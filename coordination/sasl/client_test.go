package sasl

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
)

func quorumServer(users map[string]string) *DigestMD5 {
	return NewDigestMD5(&DigestMD5Config{
		Protocol: QuorumProtocol, ServerName: QuorumServerName,
		Password: func(u string) (string, bool) { p, ok := users[u]; return p, ok },
		Authorize: func(authn, authz string) (string, error) {
			if authn != authz {
				return "", errors.New("authorization id differs")
			}
			return authz, nil
		},
		Entropy: rand.Reader,
	})
}

func quorumClient(user, password string) *DigestMD5Client {
	cfg := &DigestMD5ClientConfig{Protocol: QuorumProtocol, ServerName: QuorumServerName,
		Username: user, Password: password, Entropy: rand.Reader}
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return NewDigestMD5Client(cfg)
}

// TestClientAgainstServer runs keeper's client against keeper's server as
// ZooKeeper's learner and quorum server run it: the server authenticates
// the right password only, and the client completes only on the server's
// proof.
func TestClientAgainstServer(t *testing.T) {
	users := map[string]string{"test": "test", "ünï": "pässwörd"}
	for _, tc := range []struct {
		name, user, password string
		ok                   bool
	}{
		{"right password", "test", "test", true},
		{"latin-1 user and password", "ünï", "pässwörd", true},
		{"wrong password", "test", "nope", false},
		{"unknown user", "eve", "test", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cl := quorumServer(users), quorumClient(tc.user, tc.password)
			challenge, err := srv.Evaluate([]byte{})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := cl.Evaluate(challenge)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`username="` + tc.user + `"`, `realm="zk-quorum-sasl-md5"`, `digest-uri="zookeeper-quorum/zk-quorum-sasl-md5"`, "qop=auth", "nc=00000001"} {
				if !strings.Contains(string(resp), want) {
					t.Errorf("response %s lacks %s", resp, want)
				}
			}
			rspauth, err := srv.Evaluate(resp)
			if (err == nil) != tc.ok {
				t.Fatalf("server: %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			if srv.AuthorizationID() != tc.user {
				t.Fatalf("authorized %q", srv.AuthorizationID())
			}
			last, err := cl.Evaluate(rspauth)
			if err != nil || last != nil || !cl.Complete() {
				t.Fatalf("client after rspauth: %q, %v, complete %v", last, err, cl.Complete())
			}
			if _, err := cl.Evaluate(rspauth); err == nil {
				t.Fatal("a token after completion was accepted")
			}
		})
	}
}

// TestClientRefuses walks what the client refuses from a server.
func TestClientRefuses(t *testing.T) {
	good := `realm="zk-quorum-sasl-md5",nonce="abc",charset=utf-8,algorithm=md5-sess`
	for _, tc := range []struct {
		name, challenge, rspauth string
	}{
		{"no nonce", `realm="r",charset=utf-8,algorithm=md5-sess`, ""},
		{"no algorithm", `realm="r",nonce="abc",charset=utf-8`, ""},
		{"md5 algorithm", `nonce="abc",algorithm=md5`, ""},
		{"other charset", `nonce="abc",charset=latin1,algorithm=md5-sess`, ""},
		{"no qop auth", `nonce="abc",qop="auth-conf",algorithm=md5-sess`, ""},
		{"nonce twice", `nonce="abc",nonce="abd",algorithm=md5-sess`, ""},
		{"unterminated", `nonce="abc`, ""},
		{"too long", `nonce="` + strings.Repeat("a", MaxChallengeBytes) + `",algorithm=md5-sess`, ""},
		{"wrong rspauth", good, "rspauth=00000000000000000000000000000000"},
		{"no rspauth", good, ""},
		{"another challenge instead of rspauth", good, good},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := quorumClient("test", "test")
			_, err := cl.Evaluate([]byte(tc.challenge))
			if tc.rspauth == "" && strings.HasPrefix(tc.name, "no rspauth") {
				if err != nil {
					t.Fatal(err)
				}
				_, err = cl.Evaluate(nil)
			} else if tc.rspauth != "" {
				if err != nil {
					t.Fatal(err)
				}
				_, err = cl.Evaluate([]byte(tc.rspauth))
			}
			var e *Error
			if !errors.As(err, &e) || cl.Complete() {
				t.Fatalf("err %v (complete %v), want an *Error", err, cl.Complete())
			}
		})
	}
}

// FuzzDigestMD5Client feeds arbitrary challenges and rspauths to the
// client: it must never panic, every error must be an *Error, and it may
// complete only on the rspauth a server that knows the password computes.
func FuzzDigestMD5Client(f *testing.F) {
	f.Add([]byte(`realm="zk-quorum-sasl-md5",nonce="abc",charset=utf-8,algorithm=md5-sess`), []byte("rspauth=x"))
	f.Add([]byte(`nonce="a\"b",algorithm=md5-sess,qop="auth,auth-int"`), []byte(""))
	f.Add([]byte(`x`), []byte(`rspauth=`))
	f.Fuzz(func(t *testing.T, challenge, rspauth []byte) {
		cl := NewDigestMD5Client(&DigestMD5ClientConfig{Protocol: QuorumProtocol, ServerName: QuorumServerName,
			Username: "test", Password: "test", Entropy: bytes.NewReader(bytes.Repeat([]byte{7}, 64))})
		var e *Error
		if _, err := cl.Evaluate(challenge); err != nil {
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		_, err := cl.Evaluate(rspauth)
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("error %v is not an *Error", err)
		}
		if cl.Complete() != (err == nil) {
			t.Fatalf("complete %v after %v", cl.Complete(), err)
		}
		if err == nil && !bytes.Equal(rspauth, append([]byte("rspauth="), cl.rspauth...)) {
			t.Fatalf("completed on %q", rspauth)
		}
	})
}
