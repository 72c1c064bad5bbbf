package zoocfg

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsupported is wrapped by every *UnsupportedError.
var ErrUnsupported = errors.New("not supported by keeper yet")

// UnsupportedError reports a setting that asks for a protection of data or
// access keeper does not give yet: the few TLS settings tls.go and
// quorumtls.go do not implement, SASL, Kerberos or
// enforced authentication, audit logs, skipped ACL checks, a data directory
// that must already exist. keeper refuses to start on it rather than run with less
// protection than the configuration asks for.
type UnsupportedError struct {
	Source  string // "zoo.cfg", or the environment variable that holds the setting
	Line    int    // 1-based line in zoo.cfg; 0 outside a file
	Key     string // the key or system property, as written
	Feature string // what keeper lacks, e.g. "TLS between servers"
}

// Error formats e as SOURCE:LINE: KEY: keeper does not support FEATURE yet.
// It leaves the value out: it may be a password.
func (e *UnsupportedError) Error() string {
	where := e.Source
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.Source, e.Line)
	}
	return fmt.Sprintf("%s: %s: keeper does not support %s yet", where, e.Key, e.Feature)
}

// Unwrap returns ErrUnsupported.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// protection is a ZooKeeper setting that protects data or access and that
// keeper does not implement.
type protection struct {
	feature string // what keeper lacks, for UnsupportedError.Feature
	// refused reports whether value asks for the protection. The value that
	// asks for nothing (the feature off, or left empty) is accepted, since
	// keeper then does what the setting says. An error means the value is
	// invalid.
	refused func(value string) (bool, error)
}

// The features keeper lacks, as UnsupportedError names them.
const (
	tlsClients  = "TLS for client connections"
	tlsOther    = "this TLS setting"
	tlsQuorum   = "this TLS setting between servers"
	saslClients = "SASL authentication of clients"
	saslQuorum  = "SASL authentication between servers"
	kerberos    = "Kerberos"
	enforceAuth = "enforced client authentication"
	auditLogs   = "audit logs"
)

// protections are the settings that protect data or access, by their
// zoo.cfg spelling. Each also stands for its system property spelling,
// "zookeeper." + key (see protectionOf). protectedPrefixes covers the
// families; an entry here wins over a prefix.
//
// The TLS keys keeper implements for its client port (tlsSettings) and
// between servers (quorumTLSSettings) are parsed before these are looked
// at; the "ssl." and "ssl.quorum." families stay here so that a client's
// environment (CheckClientEnv, ParseClientSecurity: client.go reads the
// zookeeper.ssl.* keys keeper's clients implement first) still refuses the
// rest, and so that an ssl.* key tls.go or
// quorumtls.go does not know is refused rather than ignored.
var protections = map[string]protection{
	"client.secure":              {tlsClients, whenTrue},
	"ssl.crl":                    {"certificate revocation checking (CRL)", whenTrue},
	"ssl.ocsp":                   {"certificate revocation checking (OCSP)", whenTrue},
	"ssl.context.supplier.class": {"an SSLContext supplier class", whenSet},
	"ssl.authProvider":           {"TLS authentication providers other than x509", notX509},
	// TLS between servers is implemented (quorumtls.go) but for these,
	// and for the ssl.quorum.* keys quorumtls.go does not know (the
	// family below).
	"ssl.quorum.crl":                    {"certificate revocation checking (CRL)", whenTrue},
	"ssl.quorum.ocsp":                   {"certificate revocation checking (OCSP)", whenTrue},
	"ssl.quorum.context.supplier.class": {"an SSLContext supplier class", whenSet},
	"fips-mode":                         {"FIPS mode", whenTrue},

	"authProvider":                           {"authentication providers other than digest and ip", notBuiltinProvider},
	"DigestAuthenticationProvider.enabled":   {"turning digest authentication off", whenFalse},
	"DigestAuthenticationProvider.digestAlg": {"digest algorithms other than SHA1", notSHA1},
	"sasl.client":                            {saslClients, whenTrue},
	"ensembleAuthName":                       {"ensemble authentication", whenSet},
	// SASL between servers is implemented, DIGEST-MD5 and Kerberos
	// (quorumsasl.go); any other quorum.auth.* key (the family below)
	// stays refused.
	"kerberos.canonicalizeHostNames": {kerberos, whenTrue},
	"kinit":                          {kerberos, whenSet},
	"security.auth_to_local":         {kerberos, whenSet},

	"skipACL":          {"skipping ACL checks", skipACLRefused},
	"audit.enable":     {auditLogs, whenTrue},
	"audit.impl.class": {auditLogs, whenSet},

	"datadir.autocreate": {"refusing to create a missing data directory", whenFalse},
	"db.autocreate":      {"keeping a server with an empty database from voting", whenFalse},
}

// protectedPrefixes are the families of protective settings, first match
// wins.
var protectedPrefixes = []struct {
	prefix string
	protection
}{
	{"ssl.quorum.", protection{tlsQuorum, whenSet}},
	{"ssl.", protection{tlsOther, whenSet}},
	{"authProvider.", protection{"authentication providers other than digest and ip", notBuiltinProvider}},
	{"SASLAuthenticationProvider.", protection{saslClients, whenSet}},
	{"sasl.", protection{saslClients, whenSet}},
	{"quorum.auth.", protection{saslQuorum, whenSet}},
	{"kerberos.", protection{kerberos, whenSet}},
}

// protectionOf returns the protection key sets, if any. key is a zoo.cfg
// key or a system property name: ZooKeeper turns a zoo.cfg key K it does
// not read itself into the system property "zookeeper.K", and keeper
// accepts both spellings wherever it reads either.
func protectionOf(key string) (protection, bool) {
	name := strings.TrimPrefix(key, "zookeeper.")
	if p, ok := protections[name]; ok {
		return p, true
	}
	for _, f := range protectedPrefixes {
		if strings.HasPrefix(name, f.prefix) {
			return f.protection, true
		}
	}
	return protection{}, false
}

// check returns an *UnsupportedError if value asks for the protection, and
// a plain error if it is invalid.
func (p protection) check(source string, line int, key, value string) error {
	refused, err := p.refused(value)
	if err != nil {
		return err
	}
	if refused {
		return &UnsupportedError{Source: source, Line: line, Key: key, Feature: p.feature}
	}
	return nil
}

// whenSet refuses every value but the empty one, which ZooKeeper treats as
// unset.
func whenSet(v string) (bool, error) { return v != "", nil }

// whenTrue refuses true, for a protection that is off by default.
func whenTrue(v string) (bool, error) { return boolRefused(v, "true") }

// whenFalse refuses false, for a setting that is true by default and asks
// for a protection when turned off (datadir.autocreate, db.autocreate, and
// DigestAuthenticationProvider.enabled, which closes the digest scheme).
func whenFalse(v string) (bool, error) { return boolRefused(v, "false") }

// boolRefused parses v as true or false in any case (stricter than Java's
// Boolean.parseBoolean, which reads any other word as false) and refuses
// the value refuse. An empty value is unset.
func boolRefused(v, refuse string) (bool, error) {
	switch v = strings.ToLower(v); v {
	case "":
		return false, nil
	case "true", "false":
		return v == refuse, nil
	}
	return false, errors.New("want true or false")
}

// skipACLRefused refuses yes, the only value with which ZooKeeper skips ACL
// checks. keeper always checks them: refusing says so at start, where
// keeping them silently would turn into NoAuth errors at run time. Other
// values than yes and no are errors, as for forceSync.
func skipACLRefused(v string) (bool, error) {
	switch v {
	case "", "no":
		return false, nil
	case "yes":
		return true, nil
	}
	return false, errors.New("want yes or no")
}

// notX509 refuses every ssl.authProvider but x509, ZooKeeper's default,
// the scheme whose provider keeper has.
func notX509(v string) (bool, error) { return v != "" && v != "x509", nil }

// notSHA1 refuses every digest algorithm but SHA1, the only one keeper's
// digest provider computes.
func notSHA1(v string) (bool, error) {
	switch strings.ToUpper(v) {
	case "", "SHA1", "SHA-1":
		return false, nil
	}
	return true, nil
}

// notBuiltinProvider refuses every authentication provider class but
// ZooKeeper's digest and ip providers, which ZooKeeper always loads and
// keeper implements.
func notBuiltinProvider(v string) (bool, error) {
	switch v {
	case "", "org.apache.zookeeper.server.auth.DigestAuthenticationProvider",
		"org.apache.zookeeper.server.auth.IPAuthenticationProvider":
		return false, nil
	}
	return true, nil
}
