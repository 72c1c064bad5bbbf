package sasl

import (
	"bytes"
	"crypto/md5"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// Limits and constants of the Java DIGEST-MD5 server.
const (
	// MaxTokenBytes is the longest client response the server reads; a
	// longer one fails the exchange.
	MaxTokenBytes = 4096
	// rawNonceBytes is the nonce's randomness; it is sent base64-encoded
	// (40 characters).
	rawNonceBytes = 30
	// nonceCount is the only nonce count the server accepts, and the one it
	// hashes with whatever the client's "nc" says.
	nonceCount = "00000001"
)

// ZooKeeper's choice of protocol and server name for DIGEST-MD5: the
// challenge's realm is the server name, and the client's digest-uri must be
// "zookeeper/zk-sasl-md5" (any case).
const (
	ZooKeeperProtocol   = "zookeeper"
	ZooKeeperServerName = "zk-sasl-md5"
)

// DigestMD5Config configures the server side of DIGEST-MD5. It is shared by
// all exchanges and must not change while they run.
type DigestMD5Config struct {
	// Protocol and ServerName make the digest-uri the client must send,
	// Protocol/ServerName; ServerName is also the only realm.
	Protocol, ServerName string
	// Password returns the password of user, or false if there is no such
	// user. The user name is as the client sent it, decoded as UTF-8.
	Password func(user string) (string, bool)
	// Authorize maps the authenticated user and the authorization id the
	// client asked for (the user itself when it asked for none) to the
	// authorization id the exchange ends with. An error aborts the
	// exchange (ZooKeeper's server closes the connection without a reply).
	Authorize func(authnID, authzID string) (string, error)
	// Entropy supplies the nonces. It must be a cryptographic source
	// (crypto/rand.Reader) outside tests.
	Entropy io.Reader
}

// Validate reports a configuration the server cannot run with.
func (c *DigestMD5Config) Validate() error {
	switch {
	case c.Protocol == "" || c.ServerName == "":
		return errors.New("sasl: DIGEST-MD5 needs a protocol and a server name")
	case c.Password == nil || c.Authorize == nil:
		return errors.New("sasl: DIGEST-MD5 needs Password and Authorize")
	case c.Entropy == nil:
		return errors.New("sasl: DIGEST-MD5 needs an entropy source")
	}
	return nil
}

// digestStep is where a DIGEST-MD5 exchange stands.
type digestStep uint8

const (
	stepChallenge digestStep = iota // next: send the challenge
	stepResponse                    // next: check the client's response
	stepDone                        // finished, or failed: every further token fails
)

// DigestMD5 is the server side of one DIGEST-MD5 exchange (RFC 2831 as
// Java's server implements it, qop "auth" only): the first token (whatever
// it holds) gets the challenge, the second must be the client's response
// and gets "rspauth=..." back, which completes the exchange. Any further
// token fails.
type DigestMD5 struct {
	cfg      *DigestMD5Config
	step     digestStep
	nonce    []byte
	complete bool
	authzID  string
}

// NewDigestMD5 starts an exchange. cfg must be valid.
func NewDigestMD5(cfg *DigestMD5Config) *DigestMD5 { return &DigestMD5{cfg: cfg} }

// Complete reports whether the client has authenticated.
func (m *DigestMD5) Complete() bool { return m.complete }

// AuthorizationID is the id the exchange authorized; "" until Complete.
func (m *DigestMD5) AuthorizationID() string { return m.authzID }

// Mechanism reports "DIGEST-MD5".
func (m *DigestMD5) Mechanism() string { return "DIGEST-MD5" }

// Evaluate takes the client's next token and returns the server's. The
// error is an *Error: a failure, or an abort.
func (m *DigestMD5) Evaluate(token []byte) ([]byte, error) {
	if len(token) > MaxTokenBytes {
		return nil, fail("invalid digest response length: %d bytes, at most %d", len(token), MaxTokenBytes)
	}
	switch m.step {
	case stepChallenge:
		// A first token with data is ignored, as Java does.
		return m.challenge()
	case stepResponse:
		m.step = stepDone
		rspauth, err := m.checkResponse(token)
		if err != nil {
			return nil, err
		}
		m.complete = true
		return rspauth, nil
	}
	return nil, fail("server at illegal state")
}

// challenge makes the first challenge: realm, a fresh nonce, UTF-8 and
// md5-sess. It names no qop, which means "auth".
func (m *DigestMD5) challenge() ([]byte, error) {
	raw := make([]byte, rawNonceBytes)
	if _, err := io.ReadFull(m.cfg.Entropy, raw); err != nil {
		return nil, abort("no entropy for a nonce: %v", err)
	}
	m.nonce = []byte(base64.StdEncoding.EncodeToString(raw))
	var b bytes.Buffer
	b.WriteString(`realm="`)
	writeQuoted(&b, m.cfg.ServerName)
	b.WriteString(`",nonce="`)
	b.Write(m.nonce)
	b.WriteString(`",charset=utf-8,algorithm=md5-sess`)
	m.step = stepResponse
	return b.Bytes(), nil
}

// writeQuoted writes s escaping what needs it inside a quoted string.
func writeQuoted(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' || c == '\\' || c == 127 || (c <= 31 && c != '\r' && c != '\t' && c != '\n') {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
}

// checkResponse validates the client's response in the Java server's order
// (the order decides between a failure and an abort when a response has
// several faults) and returns "rspauth=<hex>".
func (m *DigestMD5) checkResponse(token []byte) ([]byte, error) {
	d, err := parseDirectives(token)
	if err != nil {
		return nil, err
	}
	if v := d[dirCharset]; v != nil && string(v) != "utf-8" {
		return nil, fail("incompatible charset value")
	}
	if v := d[dirMaxbuf]; v != nil {
		if _, ok := javaParseInt(javaString(v), 10); !ok {
			return nil, abort("maxbuf is not a number")
		}
	}
	if d[dirUsername] == nil {
		return nil, fail("missing username")
	}
	username := javaString(d[dirUsername])
	realm := javaString(d[dirRealm])
	if realm != m.cfg.ServerName {
		return nil, fail("nonexistent realm")
	}
	if d[dirNonce] == nil {
		return nil, fail("missing nonce")
	}
	if !bytes.Equal(d[dirNonce], m.nonce) {
		return nil, fail("mismatched nonce")
	}
	cnonce := d[dirCnonce]
	if cnonce == nil {
		return nil, fail("missing cnonce")
	}
	if v := d[dirNonceCount]; v != nil {
		n, ok := javaParseInt(javaString(v), 16)
		if !ok {
			return nil, abort("nonce-count is not a number")
		}
		if n != 1 {
			return nil, fail("nonce count does not match")
		}
	}
	qop := "auth"
	if d[dirQop] != nil {
		qop = javaString(d[dirQop])
	}
	if qop != "auth" {
		return nil, fail("qop %q is not supported", qop)
	}
	uri := javaString(d[dirDigestURI])
	if d[dirDigestURI] == nil || !strings.EqualFold(uri, m.cfg.Protocol+"/"+m.cfg.ServerName) {
		return nil, fail("mismatched URI")
	}
	if d[dirResponse] == nil {
		return nil, fail("missing response")
	}
	authzidBytes := d[dirAuthzid]
	authzid := username
	if authzidBytes != nil {
		authzid = javaString(authzidBytes)
	}
	password, ok := m.cfg.Password(username)
	if !ok {
		return nil, fail("cannot acquire password for the user")
	}
	want := responseValue("AUTHENTICATE", uri, qop, username, realm, password, m.nonce, cnonce, authzidBytes)
	if subtle.ConstantTimeCompare(d[dirResponse], want) != 1 {
		return nil, fail("mismatched response")
	}
	id, err := m.cfg.Authorize(username, authzid)
	if err != nil {
		return nil, abort("authorizing %q: %v", username, err)
	}
	m.authzID = id
	rspauth := responseValue("", uri, qop, username, realm, password, m.nonce, cnonce, authzidBytes)
	return append([]byte("rspauth="), rspauth...), nil
}

// responseValue computes the response-value of RFC 2831 §2.1.2.1 with
// md5-sess, the nonce count 1 and qop "auth" (A2 has no security layer
// suffix): lower-case hex of
//
//	H(HEX(H(A1)):nonce:00000001:cnonce:qop:HEX(H(method:uri)))
//	A1 = H(user:realm:password):nonce:cnonce[:authzid]
//
// method is "AUTHENTICATE" for the client's response and "" for the
// server's rspauth.
func responseValue(method, uri, qop, user, realm, password string, nonce, cnonce, authzid []byte) []byte {
	ha2 := md5.Sum([]byte(method + ":" + uri))
	var a1 bytes.Buffer
	a1.Write(latin1OrUTF8(user))
	a1.WriteByte(':')
	a1.Write(latin1OrUTF8(realm))
	a1.WriteByte(':')
	a1.Write(latin1OrUTF8(password))
	secret := md5.Sum(a1.Bytes())
	a1.Reset()
	a1.Write(secret[:])
	a1.WriteByte(':')
	a1.Write(nonce)
	a1.WriteByte(':')
	a1.Write(cnonce)
	if authzid != nil {
		a1.WriteByte(':')
		a1.Write(authzid)
	}
	ha1 := md5.Sum(a1.Bytes())
	var kd bytes.Buffer
	kd.WriteString(hex.EncodeToString(ha1[:]))
	kd.WriteByte(':')
	kd.Write(nonce)
	kd.WriteString(":" + nonceCount + ":")
	kd.Write(cnonce)
	kd.WriteString(":" + qop + ":")
	kd.WriteString(hex.EncodeToString(ha2[:]))
	sum := md5.Sum(kd.Bytes())
	return []byte(hex.EncodeToString(sum[:]))
}

// latin1OrUTF8 encodes s as RFC 2831 asks for the user, realm and password
// with charset=utf-8: in ISO 8859-1 when every character fits, in UTF-8
// otherwise.
func latin1OrUTF8(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return []byte(s)
		}
		out = append(out, byte(r))
	}
	return out
}

// javaString decodes b as Java's new String(b, UTF_8) does, as far as
// valid UTF-8 goes; an invalid byte becomes U+FFFD.
func javaString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
