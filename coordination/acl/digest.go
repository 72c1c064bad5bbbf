package acl

import (
	"crypto/sha1"
	"encoding/base64"
	"strings"

	"keeper/coordination/zkproto"
)

// Scheme names.
const (
	SchemeWorld  = "world"
	SchemeIP     = "ip"
	SchemeDigest = "digest"
	SchemeSuper  = "super"
	SchemeAuth   = "auth"

	// Anyone is the only valid id of the world scheme.
	Anyone = "anyone"
)

// DigestID returns the digest identity for the credentials a client sends
// in an auth packet: user + ":" + base64(SHA1(auth)), where user is the text
// before the first ':' (all of auth if there is none) and the hash covers
// all of auth. "user:pass" gives "user:smGaoVKd/cQkjm7b88GyorAUz20=".
//
// The Java server decodes auth to a string and re-encodes it as UTF-8
// before hashing. For valid UTF-8, which every real client sends, that
// changes nothing, so DigestID hashes the raw bytes; for invalid UTF-8 the
// two can differ.
func DigestID(auth []byte) string {
	sum := sha1.Sum(auth)
	user, _, _ := strings.Cut(string(auth), ":")
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// validDigestACL reports whether id is acceptable as a digest ACL id.
//
// ZooKeeper accepts the id if splitting it on ':' gives exactly two parts,
// and Java's split drops trailing empty parts. So the rule is "exactly one
// ':' once trailing colons are removed": "u:h" and "u:h:" are valid, "u",
// "u:" and "u:h:x" are not.
func validDigestACL(id string) bool {
	return strings.Count(strings.TrimRight(id, ":"), ":") == 1
}

// UserName returns the user name that whoAmI reports for an identity: the
// user part of a digest identity, the address of an ip identity, and ""
// for schemes without a provider (super, world and unknown ones), as
// ZooKeeper's AuthUtil does.
func UserName(id zkproto.ID) string {
	switch id.Scheme {
	case SchemeDigest:
		user, _, _ := strings.Cut(id.ID, ":")
		return user
	case SchemeIP, SchemeX509:
		return id.ID
	}
	return ""
}

// MaskDigests returns a copy of acls in which every digest id is masked
// the way getACL answers a connection that has READ but not ADMIN: each
// ':' and the rest of its line become ":x", so "user:hash" reads "user:x"
// (docs/zookeeper-protocol.md §2.4 getACL). Other entries are copied unchanged; nil stays nil.
func MaskDigests(acls []zkproto.ACL) []zkproto.ACL {
	if acls == nil {
		return nil
	}
	out := make([]zkproto.ACL, len(acls))
	for i, a := range acls {
		if a.ID.Scheme == SchemeDigest {
			a.ID.ID = maskDigest(a.ID.ID)
		}
		out[i] = a
	}
	return out
}

// maskDigest applies Java's id.replaceAll(":.*", ":x"). In a Java regex '.'
// does not match line terminators, so each ':' masks only up to the end
// of its line; ids with line breaks are absurd but legal, and the masked
// text must not leak what a Java server would hide.
func maskDigest(id string) string {
	if !strings.Contains(id, ":") {
		return id
	}
	var b strings.Builder
	for len(id) > 0 {
		i := strings.IndexByte(id, ':')
		if i < 0 {
			b.WriteString(id)
			break
		}
		b.WriteString(id[:i])
		b.WriteString(":x")
		id = id[i+1:]
		id = id[lineEnd(id):]
	}
	return b.String()
}

// lineEnd returns the index of the first Java line terminator in s
// (\n, \r, U+0085, U+2028, U+2029), or len(s).
func lineEnd(s string) int {
	for i, r := range s {
		switch r {
		case '\n', '\r', '\u0085', '\u2028', '\u2029':
			return i
		}
	}
	return len(s)
}
