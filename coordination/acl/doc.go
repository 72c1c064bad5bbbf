// Package acl decides who may do what to a znode: the ACL check, the fixup
// applied to ACL lists on create and setACL, and the authentication
// providers (world, ip, digest and the super identity) that give a
// connection its identities (docs/zookeeper-protocol.md §7).
//
// The package is pure: it holds no state, reads no clock and does no I/O.
// A connection's identities are a []zkproto.ID that the caller keeps; every
// connection starts with IPID(remote address) and grows through
// Authenticator.Authenticate and AddIDs.
//
// The providers mirror Apache ZooKeeper's DigestAuthenticationProvider and
// IPAuthenticationProvider, including their parsing quirks, because the ACL
// text is replicated and persisted: a list one server accepts must be
// accepted by every server, Java or Go.
//
// Identity and ACL id formats:
//
//	scheme  identity id (connection)        ACL id (znode)
//	world   -                               anyone
//	ip      1.2.3.4 or 0:0:0:0:0:0:0:1      1.2.3.4, 10.0.0.0/8, fe80::/10, ...
//	digest  user:base64(sha1(user:pass))    user:base64(sha1(user:pass))
//	super   "" (added by digest provider)   - (never valid in an ACL)
//	auth    -                               ignored; expanded by Fixup
package acl
