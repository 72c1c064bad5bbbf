package acl

import (
	"slices"

	"keeper/coordination/zkproto"
)

// Fixup validates an ACL list from create or setACL and returns the list to
// store, which is also what goes into the txn (docs/zookeeper-protocol.md §7.3):
//
//   - exact duplicates are removed, keeping the first of each;
//   - an empty list (before or after that) is invalid;
//   - world entries must have the id "anyone";
//   - an auth entry (its id is ignored) becomes one entry with its perms
//     per authenticated identity in authIDs; only digest and x509 identities count
//     (ip is not "authenticated", and super has no provider, so ZooKeeper
//     skips it too); with none the list is invalid;
//   - digest ids must have exactly one ':' once trailing colons are
//     dropped (see validDigestACL);
//   - ip ids must parse as an address, optionally with /bits in range;
//   - x509 ids must parse as a distinguished name (ValidDN); whether the
//     x509 provider is on is Authenticator.Fixup's check;
//   - sasl entries are invalid here; Authenticator.Fixup accepts them
//     (and expands auth entries to sasl identities) with the sasl
//     provider loaded, when the id parses as a Kerberos name (service,
//     service/host@realm or service@realm);
//   - every other scheme, super included, is invalid.
//
// Any failure returns a *zkproto.Error with CodeInvalidACL and no path; the
// caller may add the path. Entries expanded from auth are not deduplicated
// against the rest of the list, as in ZooKeeper. The input is not modified.
func Fixup(acls []zkproto.ACL, authIDs []zkproto.ID) ([]zkproto.ACL, error) {
	return fixup(acls, authIDs, false)
}

// fixup is Fixup, with sasl entries valid and sasl identities expanding
// auth entries when the sasl provider is loaded (saslProvider).
func fixup(acls []zkproto.ACL, authIDs []zkproto.ID, saslProvider bool) ([]zkproto.ACL, error) {
	uniq := dedupe(acls)
	if len(uniq) == 0 {
		return nil, invalidACL()
	}
	out := make([]zkproto.ACL, 0, len(uniq))
	for _, a := range uniq {
		switch a.ID.Scheme {
		case SchemeAuth:
			n := len(out)
			out = expandAuth(out, a.Perms, authIDs, saslProvider)
			if len(out) == n {
				return nil, invalidACL()
			}
		case SchemeWorld:
			if a.ID.ID != Anyone {
				return nil, invalidACL()
			}
			out = append(out, a)
		case SchemeDigest:
			if !validDigestACL(a.ID.ID) {
				return nil, invalidACL()
			}
			out = append(out, a)
		case SchemeIP:
			if _, _, ok := parseIPACL(a.ID.ID); !ok {
				return nil, invalidACL()
			}
			out = append(out, a)
		case SchemeX509:
			if !ValidDN(a.ID.ID) {
				return nil, invalidACL()
			}
			out = append(out, a)
		case SchemeSASL:
			if !saslProvider || !validSASLACL(a.ID.ID) {
				return nil, invalidACL()
			}
			out = append(out, a)
		default:
			return nil, invalidACL()
		}
	}
	return out, nil
}

func invalidACL() error { return &zkproto.Error{Code: zkproto.CodeInvalidACL} }

// dedupe returns acls without exact repeats, in first-seen order: acls
// itself when it has none (the usual case; fixup only reads the result).
// Lists are short (a handful of entries), so the quadratic scan is
// cheapest.
func dedupe(acls []zkproto.ACL) []zkproto.ACL {
	repeats := false
	for i := 1; i < len(acls) && !repeats; i++ {
		repeats = slices.Contains(acls[:i], acls[i])
	}
	if !repeats {
		return acls
	}
	out := make([]zkproto.ACL, 0, len(acls))
	for _, a := range acls {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// expandAuth appends one entry with perms per authenticated identity. A
// connection's identities form a set in ZooKeeper; repeats in authIDs are
// skipped so a caller that appended twice gets the same result.
func expandAuth(out []zkproto.ACL, perms int32, authIDs []zkproto.ID, saslProvider bool) []zkproto.ACL {
	start := len(out)
	for _, id := range authIDs {
		if !authenticated(id.Scheme) && !(saslProvider && id.Scheme == SchemeSASL) {
			continue
		}
		e := zkproto.ACL{Perms: perms, ID: id}
		if !slices.Contains(out[start:], e) {
			out = append(out, e)
		}
	}
	return out
}

// authenticated reports whether identities of scheme count for auth
// expansion: ZooKeeper asks the scheme's provider, and of ours digest and
// x509 say yes (an x509 identity exists only while its provider is on).
func authenticated(scheme string) bool { return scheme == SchemeDigest || scheme == SchemeX509 }
