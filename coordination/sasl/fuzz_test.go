package sasl

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"
)

// FuzzDigestMD5 feeds arbitrary client responses to a DIGEST-MD5 exchange.
// It must never panic; every error must be an *Error; the exchange must end
// after the response whatever it held; and it may succeed only with the
// response a client that knows the password computes.
func FuzzDigestMD5(f *testing.F) {
	entropy := bytes.Repeat([]byte{9}, rawNonceBytes)
	nonce := base64.StdEncoding.EncodeToString(entropy)
	for _, s := range []string{clientResponse("jaasuser", "jaas_password", nonce), clientResponse("jaasuser", "x", nonce),
		`a="\"",b=c,,d = "e"`, "x", "x=", `"`, "nonce-count=zz,maxbuf=1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, token []byte) {
		m := NewDigestMD5(testConfig(entropy, nil))
		if _, err := m.Evaluate(nil); err != nil {
			t.Fatal(err)
		}
		rsp, err := m.Evaluate(token)
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("error %v is not an *Error", err)
		}
		if m.Complete() != (err == nil) {
			t.Fatalf("Complete() = %v after %v", m.Complete(), err)
		}
		if err == nil {
			d, perr := parseDirectives(token)
			pw := users[javaString(d[dirUsername])]
			want := responseValue("AUTHENTICATE", javaString(d[dirDigestURI]), "auth", javaString(d[dirUsername]), ZooKeeperServerName, pw,
				[]byte(nonce), d[dirCnonce], d[dirAuthzid])
			if perr != nil || !bytes.Equal(d[dirResponse], want) || !bytes.HasPrefix(rsp, []byte("rspauth=")) {
				t.Fatalf("accepted %q without the right response", token)
			}
		}
		if _, err := m.Evaluate(nil); err == nil {
			t.Fatal("the exchange went on after the response")
		}
	})
}

// FuzzParseDirectives checks the directive parser: no panics, and what it
// accepts, written back with every value quoted, parses to the same values.
func FuzzParseDirectives(f *testing.F) {
	for _, s := range []string{`username="a\"b",realm=r`, " , ,x=1", `a="`, "qop=auth,qop=auth", "k v=1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, token []byte) {
		d, err := parseDirectives(token)
		if err != nil {
			return
		}
		var b bytes.Buffer
		for i, v := range d {
			if v == nil {
				continue
			}
			b.WriteString(directiveNames[i] + `="`)
			for _, c := range v {
				if c == '"' || c == '\\' {
					b.WriteByte('\\')
				}
				b.WriteByte(c)
			}
			b.WriteString(`",`)
		}
		again, err := parseDirectives(b.Bytes())
		if err != nil {
			t.Fatalf("re-encoded %q: %v", b.Bytes(), err)
		}
		for i := range d {
			if !bytes.Equal(again[i], d[i]) || (again[i] == nil) != (d[i] == nil) {
				t.Fatalf("directive %s: %q, want %q", directiveNames[i], again[i], d[i])
			}
		}
	})
}
