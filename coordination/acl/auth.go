package acl

import (
	"fmt"
	"net/netip"
	"slices"

	"keeper/coordination/zkproto"
)

// Authenticator runs the auth(100) providers. Its zero value has digest
// and ip auth and no super user. It holds configuration only and is safe
// for concurrent use.
type Authenticator struct {
	// SuperDigest is the digest identity ("super:<base64 sha1>", as
	// DigestID computes it) whose holder also gets the super identity and
	// so passes every ACL check. Empty means no super user. It is Java's
	// zookeeper.DigestAuthenticationProvider.superDigest.
	SuperDigest string
	// SASLProvider loads ZooKeeper's SASLAuthenticationProvider
	// (authProvider.N naming its class): sasl ACL entries are valid, match
	// (Check) and count for auth entries (Fixup). Without it a connection
	// still gets its sasl identity from a SASL exchange, but no ACL can
	// name it (docs/sasl.md).
	SASLProvider bool
	// SASLAnyUser is zookeeper.letAnySaslUserDoX: a sasl ACL entry with
	// this id matches every sasl identity. Empty means none.
	SASLAnyUser string
	// SASLSuperUsers are zookeeper.superUser and zookeeper.superUser.*:
	// the authorized ids whose SASL exchange also gives super.
	SASLSuperUsers []string
	// KerberosRealm is the Kerberos default realm, "" without one: only
	// principals of this realm are mapped to their short names
	// (SASLAuthorizedID). RemoveHostFromPrincipal and
	// RemoveRealmFromPrincipal are zookeeper.kerberos.removeHostFromPrincipal
	// and removeRealmFromPrincipal.
	KerberosRealm            string
	RemoveHostFromPrincipal  bool
	RemoveRealmFromPrincipal bool
	// X509 turns ZooKeeper's X509AuthenticationProvider on: x509 ACL
	// entries are valid and a connection with a verified client
	// certificate gets an x509 identity (X509IDs). ZooKeeper turns it on
	// with a TLS client port, or with authProvider.N naming its class.
	X509 bool
	// X509SuperUser is X509AuthenticationProvider.superUser: the subject
	// DN, as X509IDs formats it, whose holder is also super. Empty means
	// none.
	X509SuperUser string
}

// Validate reports whether the configuration is usable: SuperDigest must be
// empty or look like a digest identity ("user:hash").
func (a Authenticator) Validate() error {
	if a.SuperDigest != "" && !validDigestACL(a.SuperDigest) {
		return fmt.Errorf("acl: superDigest %q is not of the form user:hash", a.SuperDigest)
	}
	return nil
}

// Authenticate handles an auth packet on a connection from remoteAddr and
// returns the identities to add to the connection (with AddIDs):
//
//   - digest: digest:DigestID(auth), followed by super:"" when that
//     identity equals SuperDigest. Any bytes are accepted.
//   - ip: ip:<remote address> (IPID); the auth bytes are ignored, so
//     "addauth ip <anything>" adds nothing new.
//
// Any other scheme (world, auth, super, sasl, ...) has no auth provider and
// fails, as does ip with an invalid remoteAddr. Failure is a *zkproto.Error
// with CodeAuthFailed; the caller replies -115 and closes the connection.
func (a Authenticator) Authenticate(scheme string, auth []byte, remoteAddr netip.Addr) ([]zkproto.ID, error) {
	switch scheme {
	case SchemeDigest:
		d := DigestID(auth)
		ids := []zkproto.ID{{Scheme: SchemeDigest, ID: d}}
		if a.SuperDigest != "" && d == a.SuperDigest {
			ids = append(ids, zkproto.ID{Scheme: SchemeSuper, ID: ""})
		}
		return ids, nil
	case SchemeIP:
		if !remoteAddr.IsValid() {
			return nil, &zkproto.Error{Code: zkproto.CodeAuthFailed}
		}
		return []zkproto.ID{IPID(remoteAddr)}, nil
	}
	return nil, &zkproto.Error{Code: zkproto.CodeAuthFailed}
}

// AddIDs returns have with each of add appended unless already present. A
// connection's identities are a set in ZooKeeper; keeping them in the
// order first added gives whoAmI a stable answer.
func AddIDs(have []zkproto.ID, add ...zkproto.ID) []zkproto.ID {
	for _, id := range add {
		if !slices.Contains(have, id) {
			have = append(have, id)
		}
	}
	return have
}
