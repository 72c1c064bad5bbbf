package acl

import (
	"fmt"
	"slices"
	"strings"

	"keeper/coordination/zkproto"
)

// SchemeSASL is the scheme of the identity a completed SASL exchange gives
// a connection, sasl:<authorized id>, and of ZooKeeper's
// SASLAuthenticationProvider, which matches it against sasl ACL entries
// (docs/sasl.md).
const SchemeSASL = "sasl"

// kerberosName is a principal name split as ZooKeeper's KerberosName splits
// it: service[/host]@realm, or a plain name without '@'.
type kerberosName struct {
	service, host, realm string
	hasHost, hasRealm    bool
}

// parseKerberosName splits name. A name with an '@' must be
// service[/host]@realm with no further '/' or '@'; it reports false
// otherwise. A name without '@' is all service, '/' included.
func parseKerberosName(name string) (kerberosName, bool) {
	at := strings.IndexByte(name, '@')
	if at < 0 {
		return kerberosName{service: name}, true
	}
	principal, realm := name[:at], name[at+1:]
	if strings.ContainsAny(realm, "/@") {
		return kerberosName{}, false
	}
	kn := kerberosName{service: principal, realm: realm, hasRealm: true}
	if slash := strings.IndexByte(principal, '/'); slash >= 0 {
		kn.service, kn.host, kn.hasHost = principal[:slash], principal[slash+1:], true
		if strings.IndexByte(kn.host, '/') >= 0 {
			return kerberosName{}, false
		}
	}
	return kn, true
}

// validSASLACL reports whether id is valid in a sasl ACL entry: ZooKeeper's
// provider accepts what KerberosName can parse.
func validSASLACL(id string) bool {
	_, ok := parseKerberosName(id)
	return ok
}

// SASLAuthorizedID is the authorized id of a SASL exchange in which
// authnID authenticated and asked to act as authzID (authnID itself when
// the client asked for nothing), as ZooKeeper's SaslServerCallbackHandler
// computes it from authnID alone:
//
//   - a plain name (no '@') is itself: "bob" is "bob", whatever authzID;
//   - service[/host]@realm in the Kerberos default realm (KerberosRealm) is
//     service, then "/host" unless RemoveHostFromPrincipal, then "@realm"
//     unless RemoveRealmFromPrincipal;
//   - in another realm no rule maps it, and the id is authzID as the client
//     sent it.
//
// A name with '@' that is not service[/host]@realm is an error, where
// ZooKeeper's server fails with a runtime error and closes the connection.
func (a Authenticator) SASLAuthorizedID(authnID, authzID string) (string, error) {
	kn, ok := parseKerberosName(authnID)
	if !ok {
		return "", fmt.Errorf("malformed Kerberos name %q", authnID)
	}
	if kn.hasRealm && kn.realm != a.KerberosRealm {
		return authzID, nil
	}
	id := kn.service
	if kn.hasHost && !a.RemoveHostFromPrincipal {
		id += "/" + kn.host
	}
	if kn.hasRealm && !a.RemoveRealmFromPrincipal {
		id += "@" + kn.realm
	}
	return id, nil
}

// SASLIDs returns the identities a completed SASL exchange with authorized
// id gives a connection: sasl:<id>, then super:"" when id is one of
// SASLSuperUsers (ZooKeeper's zookeeper.superUser). ZooKeeper adds them
// whether or not the sasl provider is loaded.
func (a Authenticator) SASLIDs(id string) []zkproto.ID {
	ids := []zkproto.ID{{Scheme: SchemeSASL, ID: id}}
	if id != "" && slices.Contains(a.SASLSuperUsers, id) {
		ids = append(ids, zkproto.ID{Scheme: SchemeSuper, ID: ""})
	}
	return ids
}

// Check is the package's Check with the providers a configures: with the
// sasl provider loaded, a sasl entry that grants perm also allows a
// connection whose sasl identity equals the entry's id, or is "super", or
// any sasl identity when the entry's id is SASLAnyUser (ZooKeeper's
// zookeeper.letAnySaslUserDoX). Without the provider, sasl entries never
// match, as in ZooKeeper.
func (a Authenticator) Check(acls []zkproto.ACL, perm int32, ids []zkproto.ID) bool {
	if Check(acls, perm, ids) {
		return true
	}
	if !a.SASLProvider {
		return false
	}
	for _, e := range acls {
		if e.Perms&perm == 0 || e.ID.Scheme != SchemeSASL {
			continue
		}
		for _, id := range ids {
			if id.Scheme != SchemeSASL {
				continue
			}
			if id.ID == "super" || id.ID == e.ID.ID || (a.SASLAnyUser != "" && e.ID.ID == a.SASLAnyUser) {
				return true
			}
		}
	}
	return false
}
