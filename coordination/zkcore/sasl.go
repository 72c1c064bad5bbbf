package zkcore

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"keeper/coordination/acl"
	"keeper/coordination/jute"
	"keeper/coordination/kerberos"
	"keeper/coordination/sasl"
	"keeper/coordination/zkproto"
)

// AuthConfig configures SASL (sasl(102)), the sasl ACL scheme and enforced
// authentication (docs/sasl.md).
type AuthConfig struct {
	// SASLUsers are the DIGEST-MD5 users and their passwords, from the JAAS
	// file's Server section. nil means SASL is not configured (no such
	// section): sasl(102) is then answered with no token, as ZooKeeper
	// answers it.
	SASLUsers map[string]string
	// Entropy supplies the DIGEST-MD5 nonces (crypto/rand.Reader outside
	// tests). Required with SASLUsers.
	Entropy io.Reader
	// Kerberos, when set, makes SASL GSSAPI instead of DIGEST-MD5: the
	// JAAS Server section logs in with Krb5LoginModule, and this acceptor
	// checks tickets for its principal. Not with SASLUsers.
	Kerberos *kerberos.Acceptor
	// Now reads the clock for Kerberos' ticket checks. Required with
	// Kerberos.
	Now func() time.Time
	// SASLProvider, SASLAnyUser, SASLSuperUsers, KerberosRealm,
	// RemoveHostFromPrincipal and RemoveRealmFromPrincipal are
	// acl.Authenticator's fields of the same names.
	SASLProvider             bool
	SASLAnyUser              string
	SASLSuperUsers           []string
	KerberosRealm            string
	RemoveHostFromPrincipal  bool
	RemoveRealmFromPrincipal bool
	// AllowSASLFailedClients keeps the connection of a client whose SASL
	// exchange failed, unless SASL is required (allowSaslFailedClients).
	AllowSASLFailedClients bool
	// EnforceSchemes, when not empty, turns enforced authentication on
	// (enforce.auth.enabled with enforce.auth.schemes, or
	// sessionRequireClientSASLAuth, which means ["sasl"]): a connection
	// with no identity of one of these schemes gets
	// SessionClosedRequireSaslAuth for any request but auth and sasl, and
	// is closed. Each scheme must have a provider: ip, digest, sasl with
	// SASLProvider, x509 with the x509 provider.
	EnforceSchemes []string
}

// validate checks the providers of the enforced schemes, as ZooKeeper
// does at start.
func (a *AuthConfig) validate(auth acl.Authenticator) error {
	for _, scheme := range a.EnforceSchemes {
		switch {
		case scheme == acl.SchemeIP, scheme == acl.SchemeDigest,
			scheme == acl.SchemeSASL && auth.SASLProvider,
			scheme == acl.SchemeX509 && auth.X509:
		default:
			return fmt.Errorf("zkcore: enforced authentication scheme %q is not available", scheme)
		}
	}
	if a.SASLUsers != nil && a.Entropy == nil {
		return errors.New("zkcore: SASL needs an entropy source")
	}
	if a.Kerberos != nil && (a.SASLUsers != nil || a.Now == nil) {
		return errors.New("zkcore: GSSAPI needs a clock, and excludes DIGEST-MD5 users")
	}
	return nil
}

// apply copies the sasl settings into the authenticator.
func (a *AuthConfig) apply(auth *acl.Authenticator) {
	auth.SASLProvider = a.SASLProvider
	auth.SASLAnyUser = a.SASLAnyUser
	auth.SASLSuperUsers = a.SASLSuperUsers
	auth.KerberosRealm = a.KerberosRealm
	auth.RemoveHostFromPrincipal = a.RemoveHostFromPrincipal
	auth.RemoveRealmFromPrincipal = a.RemoveRealmFromPrincipal
}

// digestConfig is the DIGEST-MD5 configuration all connections share, or
// nil without SASL.
func (s *Server) digestConfig(a *AuthConfig) *sasl.DigestMD5Config {
	if a.SASLUsers == nil {
		return nil
	}
	users := a.SASLUsers
	return &sasl.DigestMD5Config{
		Protocol:   sasl.ZooKeeperProtocol,
		ServerName: sasl.ZooKeeperServerName,
		Password:   func(u string) (string, bool) { p, ok := users[u]; return p, ok },
		Authorize:  s.auth.SASLAuthorizedID,
		Entropy:    a.Entropy,
	}
}

// gssapiConfig is the GSSAPI configuration all connections share, or nil
// without Kerberos.
func (s *Server) gssapiConfig(a *AuthConfig) *sasl.GSSAPIConfig {
	if a.Kerberos == nil {
		return nil
	}
	return &sasl.GSSAPIConfig{Acceptor: a.Kerberos, Now: a.Now, Authorize: s.auth.SASLAuthorizedID}
}

// saslRequired reports whether SASL is among the enforced schemes; a failed
// exchange is then answered SessionClosedRequireSaslAuth.
func (s *Server) saslRequired() bool {
	return slices.Contains(s.authCfg.EnforceSchemes, acl.SchemeSASL)
}

// mustAuthenticate reports whether a request with op on c has to be
// refused under enforced authentication: enforcement is on, op is neither
// auth nor sasl, and c has no identity of an enforced scheme.
func (s *Server) mustAuthenticate(c *conn, op zkproto.Op) bool {
	if len(s.authCfg.EnforceSchemes) == 0 || op == zkproto.OpAuth || op == zkproto.OpSASL {
		return false
	}
	for _, id := range c.ids {
		if slices.Contains(s.authCfg.EnforceSchemes, id.Scheme) {
			return false
		}
	}
	return true
}

// refuseUnauthenticated answers e SessionClosedRequireSaslAuth (zxid 0, no
// body) and closes c, as ZooKeeper does under enforced authentication. The
// session lives on until it expires.
func (s *Server) refuseUnauthenticated(c *conn, e *entry) {
	s.log.Warn("client not authenticated with an enforced scheme; closing its connection",
		"conn", c.id, "session", fmt.Sprintf("0x%x", c.session), "op", e.op, "schemes", s.authCfg.EnforceSchemes)
	e.kind = kindEager
	s.finish(e, 0, zkproto.CodeSessionClosedRequireSaslAuth, nil)
	e.close = true
	c.closing = true
}

// closeWithoutReply ends c after the replies before e, with none for e:
// what ZooKeeper does when a request makes its server fail at run time
// (a sasl(102) without a token, or one its DIGEST-MD5 server cannot
// parse a number of).
func (s *Server) closeWithoutReply(c *conn, e *entry) {
	e.kind = kindEager
	e.reply, e.done, e.executed = nil, true, true
	e.close = true
	c.closing = true
}

// runSASL evaluates one client token of c's SASL exchange
// (docs/zookeeper-protocol.md §7.6). Replies carry zxid 0 and a
// SetSASLResponse, an error reply too (with no token).
func (s *Server) runSASL(c *conn, e *entry) {
	p := e.body.(*zkproto.GetSASLRequest)
	if p.Token == nil {
		s.closeWithoutReply(c, e)
		return
	}
	if s.digest == nil && s.gssapi == nil {
		// No JAAS Server section: ZooKeeper's connection has no SASL
		// server and answers every token with none.
		s.finishSASL(e, zkproto.CodeOK, nil)
		return
	}
	if c.sasl == nil {
		if s.gssapi != nil {
			c.sasl = sasl.NewGSSAPI(s.gssapi)
		} else {
			c.sasl = sasl.NewDigestMD5(s.digest)
		}
	}
	token, err := c.sasl.Evaluate(p.Token)
	if err != nil {
		var se *sasl.Error
		if errors.As(err, &se) && se.Abort {
			s.log.Warn("sasl exchange aborted; closing the connection", "conn", c.id, "err", err)
			s.closeWithoutReply(c, e)
			return
		}
		s.log.Warn("client failed to sasl authenticate", "conn", c.id, "remote", c.remote, "err", err)
		if s.authCfg.AllowSASLFailedClients && !s.saslRequired() {
			s.finishSASL(e, zkproto.CodeOK, nil)
			return
		}
		code := zkproto.CodeAuthFailed
		if s.saslRequired() {
			code = zkproto.CodeSessionClosedRequireSaslAuth
		}
		s.finishSASL(e, code, nil)
		e.close = true
		c.closing = true
		return
	}
	if c.sasl.Complete() {
		id := c.sasl.AuthorizationID()
		s.log.Info("adding sasl authorization", "conn", c.id, "session", fmt.Sprintf("0x%x", c.session), "id", id)
		c.ids = acl.AddIDs(c.ids, s.auth.SASLIDs(id)...)
	}
	s.finishSASL(e, zkproto.CodeOK, token)
}

// finishSASL completes e with a sasl reply: header (zxid 0, code) and
// SetSASLResponse{token} whatever the code; a nil token is the null buffer.
func (s *Server) finishSASL(e *entry, code zkproto.Code, token []byte) {
	enc := jute.Encoder{B: make([]byte, 4, 4+16+4+len(token))}
	enc.Int(e.xid)
	enc.Long(0)
	enc.Int(int32(code))
	enc.Buffer(token)
	putLength(enc.B)
	e.reply, e.done, e.executed = enc.B, true, true
}

// saslUser is the user whoAmI reports for a sasl identity: its id with the
// sasl provider loaded, "" without (ZooKeeper finds no provider to ask).
func (s *Server) saslUser(id zkproto.ID) string {
	if s.auth.SASLProvider {
		return id.ID
	}
	return ""
}
