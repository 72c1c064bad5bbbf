package sasl

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestResponseValueRFC2831 is the example of RFC 2831 §4.
func TestResponseValueRFC2831(t *testing.T) {
	nonce, cnonce := []byte("OA6MG9tEQGm2hh"), []byte("OA6MHXh6VqTrRk")
	got := responseValue("AUTHENTICATE", "imap/elwood.innosoft.com", "auth", "chris", "elwood.innosoft.com", "secret", nonce, cnonce, nil)
	if string(got) != "d388dad90d4bbd760a152321f2143af7" {
		t.Fatalf("response = %s", got)
	}
	got = responseValue("", "imap/elwood.innosoft.com", "auth", "chris", "elwood.innosoft.com", "secret", nonce, cnonce, nil)
	if string(got) != "ea40f60335c427b5527b84dbabcdfffd" {
		t.Fatalf("rspauth = %s", got)
	}
}

// users is kazoo's test JAAS file.
var users = map[string]string{"super": "super_secret", "jaasuser": "jaas_password"}

func testConfig(entropy []byte, authorize func(string, string) (string, error)) *DigestMD5Config {
	if authorize == nil {
		authorize = func(authn, _ string) (string, error) { return authn, nil }
	}
	return &DigestMD5Config{
		Protocol: ZooKeeperProtocol, ServerName: ZooKeeperServerName,
		Password:  func(u string) (string, bool) { p, ok := users[u]; return p, ok },
		Authorize: authorize,
		Entropy:   bytes.NewReader(entropy),
	}
}

// TestZooKeeperExchanges replays exchanges with Apache ZooKeeper 3.8.0 (the
// nonces it chose, the responses its clients sent): keeper's challenge and
// rspauth must be the bytes ZooKeeper sent.
func TestZooKeeperExchanges(t *testing.T) {
	for _, tc := range []struct {
		nonce, cnonce, authzid, response, rspauth string
	}{
		{"U3qDq/t4mFQPldmOo+NJCDyDaZmbCiF2uFUAltvN", "abc", "", "968f74bfbb85c7ab29c1cd1937f34a30", "rspauth=0996058e1ef6e9feeca30d3550f9a9b6"},
		{"9NJcf5+IFIY7sCOwru1BIoOgRP3+D95/OZKGGQxj", "OA6MHXh6VqTrRk", "someone", "7f0b39a23f644314b0de8c7f6aa6d2c3", "rspauth=80a95f57a8bd71e4ecfbbea879f192b7"},
	} {
		raw, err := base64.StdEncoding.DecodeString(tc.nonce)
		if err != nil {
			t.Fatal(err)
		}
		var gotAuthz string
		m := NewDigestMD5(testConfig(raw, func(authn, authz string) (string, error) { gotAuthz = authz; return authn, nil }))
		ch, err := m.Evaluate([]byte{})
		if err != nil {
			t.Fatal(err)
		}
		if want := `realm="zk-sasl-md5",nonce="` + tc.nonce + `",charset=utf-8,algorithm=md5-sess`; string(ch) != want {
			t.Fatalf("challenge %q, want %q", ch, want)
		}
		tok := `charset=utf-8,username="jaasuser",realm="zk-sasl-md5",nonce="` + tc.nonce + `",nc=00000001,cnonce="` + tc.cnonce +
			`",digest-uri="zookeeper/zk-sasl-md5",maxbuf=65536,response=` + tc.response + `,qop=auth`
		wantAuthz := "jaasuser"
		if tc.authzid != "" {
			tok += `,authzid="` + tc.authzid + `"`
			wantAuthz = tc.authzid
		}
		rsp, err := m.Evaluate([]byte(tok))
		if err != nil {
			t.Fatal(err)
		}
		if string(rsp) != tc.rspauth || !m.Complete() || m.AuthorizationID() != "jaasuser" || gotAuthz != wantAuthz {
			t.Fatalf("got %q complete=%v id=%q authz=%q; want %q", rsp, m.Complete(), m.AuthorizationID(), gotAuthz, tc.rspauth)
		}
	}
}

// clientResponse is what a client sends for user and password after the
// challenge with nonce, before the test's edit.
func clientResponse(user, password, nonce string) string {
	return clientResponseURI(user, password, nonce, "zookeeper/zk-sasl-md5")
}

// clientResponseURI is clientResponse for another digest-uri, which the
// client hashes as it sends it.
func clientResponseURI(user, password, nonce, uri string) string {
	resp := responseValue("AUTHENTICATE", uri, "auth", user, "zk-sasl-md5", password, []byte(nonce), []byte("cn"), nil)
	return `charset=utf-8,username="` + user + `",realm="zk-sasl-md5",nonce="` + nonce +
		`",nc=00000001,cnonce="cn",digest-uri="` + uri + `",maxbuf=65536,response=` + string(resp) + `,qop=auth`
}

type outcome int

const (
	succeeds outcome = iota
	fails            // AuthFailed and close
	aborts           // close without a reply
)

func outcomeOf(err error) outcome {
	var e *Error
	switch {
	case err == nil:
		return succeeds
	case errors.As(err, &e) && e.Abort:
		return aborts
	case errors.As(err, &e):
		return fails
	}
	panic(fmt.Sprintf("error %v is not an *Error", err))
}

// TestResponseOutcomes edits a good response and checks the outcome
// Apache ZooKeeper 3.8.0 gives each edit (observed side by side; see
// verify/compat/sasl for the same against a live server).
func TestResponseOutcomes(t *testing.T) {
	entropy := bytes.Repeat([]byte{7}, rawNonceBytes)
	nonce := base64.StdEncoding.EncodeToString(entropy)
	good := clientResponse("jaasuser", "jaas_password", nonce)
	for _, tc := range []struct {
		name  string
		token string
		want  outcome
	}{
		{"good", good, succeeds},
		{"wrong password", clientResponse("jaasuser", "bad", nonce), fails},
		{"unknown user", clientResponse("bob", "jaas_password", nonce), fails},
		{"garbled", "\x00\x01garbage", fails},
		{"empty", "", fails},
		{"maxbuf not a number", strings.Replace(good, "maxbuf=65536", "maxbuf=abc", 1), aborts},
		{"maxbuf empty", strings.Replace(good, "maxbuf=65536", `maxbuf=""`, 1), aborts},
		{"maxbuf signed", strings.Replace(good, "maxbuf=65536", "maxbuf=-1", 1), succeeds},
		{"too long", strings.Repeat("a", MaxTokenBytes+1), fails},
		{"longest, no username", strings.Repeat("a", MaxTokenBytes), fails},
		{"upper-case hex", strings.ToUpper(good[:strings.Index(good, "response=")+9]) + good[strings.Index(good, "response=")+9:], fails},
		{"response in upper case", good[:strings.Index(good, "response=")+9] + strings.ToUpper(good[strings.Index(good, "response=")+9:strings.Index(good, ",qop")]) + ",qop=auth", fails},
		{"qop auth-int", strings.Replace(good, "qop=auth", "qop=auth-int", 1), fails},
		{"qop unknown", strings.Replace(good, "qop=auth", "qop=x", 1), fails},
		{"other uri", strings.Replace(good, `digest-uri="zookeeper/zk-sasl-md5"`, `digest-uri="zookeeper/other"`, 1), fails},
		{"no uri", strings.Replace(good, `digest-uri="zookeeper/zk-sasl-md5",`, ``, 1), fails},
		{"uri in another case", clientResponseURI("jaasuser", "jaas_password", nonce, "ZooKeeper/ZK-SASL-MD5"), succeeds},
		{"uri with a Kelvin sign", clientResponseURI("jaasuser", "jaas_password", nonce, "zoo\u212aeeper/zk-sasl-md5"), succeeds},
		{"no realm", strings.Replace(good, `realm="zk-sasl-md5",`, ``, 1), fails},
		{"charset latin1", strings.Replace(good, `charset=utf-8`, `charset=latin1`, 1), fails},
		{"charset upper case", strings.Replace(good, `charset=utf-8`, `charset=UTF-8`, 1), fails},
		{"no charset", strings.Replace(good, `charset=utf-8,`, ``, 1), succeeds},
		{"keys in any case", strings.Replace(good, `username=`, `UserName=`, 1), succeeds},
		{"username twice", good + `,username="x"`, fails},
		{"nonce-count 2", strings.Replace(good, "nc=00000001", "nonce-count=00000002", 1), fails},
		{"nonce-count 1", strings.Replace(good, "nc=00000001", "nonce-count=+1", 1), succeeds},
		{"nonce-count not hex", strings.Replace(good, "nc=00000001", "nonce-count=zz", 1), aborts},
		{"nc is ignored", strings.Replace(good, "nc=00000001", "nc=00000002", 1), succeeds},
		{"other nonce", strings.Replace(good, nonce, strings.Repeat("A", len(nonce)), 1), fails},
		{"no cnonce", strings.Replace(good, `cnonce="cn",`, ``, 1), fails},
		{"blanks around", " \t" + strings.ReplaceAll(good, ",", " ,\r\n ") + " ", succeeds},
		{"comma in key", "user,name=x," + good, fails},
		{"blank in key", "user name=x," + good, fails},
		{"unterminated quote", good + `,x="abc`, fails},
		{"text after quote", strings.Replace(good, `cnonce="cn"`, `cnonce="cn"x`, 1), fails},
		{"escaped quote in user", strings.Replace(clientResponse("jaasuser", "jaas_password", nonce), `username="jaasuser"`, `username="jaas\user"`, 1), succeeds},
		{"valueless at the end", good + ",x=", fails},
		{"bare key at the end", good + ",x", succeeds},
		{"bare username at the end", strings.Replace(good, `username="jaasuser",`, ``, 1) + ",username", fails},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewDigestMD5(testConfig(entropy, nil))
			if _, err := m.Evaluate(nil); err != nil {
				t.Fatal(err)
			}
			rsp, err := m.Evaluate([]byte(tc.token))
			if got := outcomeOf(err); got != tc.want {
				t.Fatalf("outcome %v (%v), want %v", got, err, tc.want)
			}
			if m.Complete() != (tc.want == succeeds) {
				t.Fatalf("Complete() = %v", m.Complete())
			}
			if tc.want == succeeds && !bytes.HasPrefix(rsp, []byte("rspauth=")) {
				t.Fatalf("reply %q", rsp)
			}
			// Whatever happened, the exchange is over.
			if _, err := m.Evaluate(nil); outcomeOf(err) != fails {
				t.Fatalf("a token after the response: %v, want a failure", err)
			}
		})
	}
}

// TestSteps checks the exchange's states: a first token with data is
// ignored, a first token too long fails without starting the exchange,
// and an Authorize error aborts.
func TestSteps(t *testing.T) {
	entropy := bytes.Repeat([]byte{1}, 2*rawNonceBytes)
	m := NewDigestMD5(testConfig(entropy, nil))
	if _, err := m.Evaluate(make([]byte, MaxTokenBytes+1)); outcomeOf(err) != fails {
		t.Fatalf("long first token: %v", err)
	}
	if ch, err := m.Evaluate([]byte("hello")); err != nil || !bytes.HasPrefix(ch, []byte(`realm="zk-sasl-md5",nonce="`)) {
		t.Fatalf("first token with data: %q, %v", ch, err)
	}

	m = NewDigestMD5(testConfig(entropy, func(string, string) (string, error) { return "", errors.New("malformed") }))
	ch, _ := m.Evaluate(nil)
	nonce := string(ch[len(`realm="zk-sasl-md5",nonce="`) : len(`realm="zk-sasl-md5",nonce="`)+40])
	if _, err := m.Evaluate([]byte(clientResponse("jaasuser", "jaas_password", nonce))); outcomeOf(err) != aborts {
		t.Fatalf("Authorize error: %v, want an abort", err)
	}

	m = NewDigestMD5(testConfig(nil, nil))
	if _, err := m.Evaluate(nil); outcomeOf(err) != aborts {
		t.Fatalf("no entropy: %v", err)
	}
}

// TestLatin1Password: with charset=utf-8 a user name or password whose
// characters all fit ISO 8859-1 is hashed in ISO 8859-1 (RFC 2831 §2.1.2.1).
func TestLatin1Password(t *testing.T) {
	a := responseValue("AUTHENTICATE", "u", "auth", "jörg", "r", "pä", []byte("n"), []byte("c"), nil)
	b := responseValue("AUTHENTICATE", "u", "auth", "j\xf6rg", "r", "p\xe4", []byte("n"), []byte("c"), nil)
	if !bytes.Equal(a, b) {
		t.Fatal("latin-1 characters not hashed as ISO 8859-1")
	}
	if got := latin1OrUTF8("€"); string(got) != "€" {
		t.Fatalf("latin1OrUTF8(€) = %q", got)
	}
}

func TestJavaParseInt(t *testing.T) {
	for _, tc := range []struct {
		s     string
		radix int
		want  int32
		ok    bool
	}{
		{"65536", 10, 65536, true}, {"+1", 16, 1, true}, {"-1", 10, -1, true},
		{"00000001", 16, 1, true}, {"7fffffff", 16, 1<<31 - 1, true}, {"-80000000", 16, -1 << 31, true},
		{"80000000", 16, 0, false}, {"", 10, 0, false}, {"-", 10, 0, false}, {"1a", 10, 0, false},
		{" 1", 10, 0, false}, {"99999999999", 10, 0, false},
	} {
		got, ok := javaParseInt(tc.s, tc.radix)
		if got != tc.want || ok != tc.ok {
			t.Errorf("javaParseInt(%q, %d) = %d, %v; want %d, %v", tc.s, tc.radix, got, ok, tc.want, tc.ok)
		}
	}
}
