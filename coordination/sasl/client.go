package sasl

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"io"
	"strings"
)

// ZooKeeper's choice of protocol and server name for DIGEST-MD5 between
// ensemble members: the realm is "zk-quorum-sasl-md5" and the digest-uri
// "zookeeper-quorum/zk-quorum-sasl-md5" (docs/sasl.md).
const (
	QuorumProtocol   = "zookeeper-quorum"
	QuorumServerName = "zk-quorum-sasl-md5"
)

// MaxChallengeBytes is the longest server challenge a DIGEST-MD5 client
// takes (RFC 2831 §2.1.1, as Java's client checks it).
const MaxChallengeBytes = 2048

// The directives of a server's challenge the client reads.
const (
	chRealm = iota
	chNonce
	chQop
	chCharset
	chAlgorithm
	chMaxbuf
	chCipher
	chStale
	numChallengeDirectives
)

var challengeNames = [numChallengeDirectives]string{
	"realm", "nonce", "qop", "charset", "algorithm", "maxbuf", "cipher", "stale",
}

// clientMaxbuf is the maxbuf the client announces: Java's default.
const clientMaxbuf = "65536"

// DigestMD5ClientConfig configures the client side of one DIGEST-MD5
// exchange.
type DigestMD5ClientConfig struct {
	// Protocol and ServerName make the digest-uri, Protocol/ServerName.
	Protocol, ServerName string
	// Username and Password are the credentials; the username is also the
	// authorization id asked for, as ZooKeeper's learner asks.
	Username, Password string
	// Entropy supplies the cnonce. It must be a cryptographic source
	// (crypto/rand.Reader) outside tests.
	Entropy io.Reader
}

// Validate reports a configuration the client cannot run with.
func (c *DigestMD5ClientConfig) Validate() error {
	switch {
	case c.Protocol == "" || c.ServerName == "":
		return errors.New("sasl: DIGEST-MD5 needs a protocol and a server name")
	case c.Username == "":
		return errors.New("sasl: DIGEST-MD5 needs a user name")
	case c.Entropy == nil:
		return errors.New("sasl: DIGEST-MD5 needs an entropy source")
	}
	return nil
}

// DigestMD5Client is the client side of one DIGEST-MD5 exchange (RFC 2831
// with qop "auth", as Java's client runs it for ZooKeeper's learners):
// there is no initial response; the server's challenge gets the client's
// response, and the server's "rspauth=..." completes the exchange once it
// proves the server knows the password too. Anything else fails.
type DigestMD5Client struct {
	cfg      *DigestMD5ClientConfig
	step     clientStep
	rspauth  []byte // the rspauth the server must send
	complete bool
}

// clientStep is where a client's exchange stands.
type clientStep uint8

const (
	clientChallenge clientStep = iota // next: answer the challenge
	clientRspauth                     // next: check the server's rspauth
	clientDone                        // finished, or failed
)

// NewDigestMD5Client starts an exchange. cfg must be valid.
func NewDigestMD5Client(cfg *DigestMD5ClientConfig) *DigestMD5Client {
	return &DigestMD5Client{cfg: cfg}
}

// Complete reports whether the server has proved itself.
func (c *DigestMD5Client) Complete() bool { return c.complete }

// Evaluate takes the server's next token and returns the client's reply:
// the response to the challenge, then nil once the rspauth checks out.
// Every error is an *Error; after one the exchange is over.
func (c *DigestMD5Client) Evaluate(token []byte) ([]byte, error) {
	switch c.step {
	case clientChallenge:
		c.step = clientDone
		if len(token) > MaxChallengeBytes {
			return nil, fail("invalid digest challenge length: %d bytes, at most %d", len(token), MaxChallengeBytes)
		}
		return c.respond(token)
	case clientRspauth:
		c.step = clientDone
		got, ok := bytes.CutPrefix(token, []byte("rspauth="))
		if !ok || subtle.ConstantTimeCompare(got, c.rspauth) != 1 {
			return nil, fail("server's rspauth value does not match")
		}
		c.complete = true
		return nil, nil
	}
	return nil, fail("client at illegal state")
}

// respond checks the challenge and computes the response.
func (c *DigestMD5Client) respond(challenge []byte) ([]byte, error) {
	var d [numChallengeDirectives][]byte
	if err := parseKeyValues(challenge, challengeNames[:], d[:]); err != nil {
		return nil, err
	}
	if d[chNonce] == nil {
		return nil, fail("challenge has no nonce")
	}
	if a := d[chAlgorithm]; a == nil || !strings.EqualFold(string(a), "md5-sess") {
		return nil, fail("challenge's algorithm must be md5-sess")
	}
	if cs := d[chCharset]; cs != nil && !strings.EqualFold(string(cs), "utf-8") {
		return nil, fail("incompatible charset value")
	}
	if q := d[chQop]; q != nil && !hasToken(string(q), "auth") {
		return nil, fail("server offers no qop auth")
	}
	if len(d[chNonce]) == 0 || bytes.ContainsAny(d[chNonce], "\"\\") {
		return nil, fail("invalid nonce")
	}
	realm := javaString(d[chRealm])
	raw := make([]byte, rawNonceBytes)
	if _, err := io.ReadFull(c.cfg.Entropy, raw); err != nil {
		return nil, fail("no entropy for a cnonce: %v", err)
	}
	cnonce := []byte(base64.StdEncoding.EncodeToString(raw))
	uri := c.cfg.Protocol + "/" + c.cfg.ServerName
	user, authzid := c.cfg.Username, []byte(c.cfg.Username)
	nonce := d[chNonce]
	response := responseValue("AUTHENTICATE", uri, "auth", user, realm, c.cfg.Password, nonce, cnonce, authzid)
	c.rspauth = responseValue("", uri, "auth", user, realm, c.cfg.Password, nonce, cnonce, authzid)
	var b bytes.Buffer
	b.WriteString(`charset=utf-8,username="`)
	writeQuoted(&b, user)
	if d[chRealm] != nil {
		b.WriteString(`",realm="`)
		writeQuoted(&b, realm)
	}
	b.WriteString(`",nonce="`)
	b.Write(nonce)
	b.WriteString(`",nc=` + nonceCount + `,cnonce="`)
	b.Write(cnonce)
	b.WriteString(`",digest-uri="`)
	writeQuoted(&b, uri)
	b.WriteString(`",maxbuf=` + clientMaxbuf + `,response=`)
	b.Write(response)
	b.WriteString(`,qop=auth,authzid="`)
	writeQuoted(&b, user)
	b.WriteString(`"`)
	c.step = clientRspauth
	return b.Bytes(), nil
}

// hasToken reports whether the comma-separated list holds tok.
func hasToken(list, tok string) bool {
	for _, t := range strings.Split(list, ",") {
		if strings.EqualFold(strings.TrimSpace(t), tok) {
			return true
		}
	}
	return false
}
