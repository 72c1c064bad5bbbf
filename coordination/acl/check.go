package acl

import "keeper/coordination/zkproto"

// Check reports whether a connection with identities ids may use perm on
// a znode whose ACL list is acls (docs/zookeeper-protocol.md §7.2). perm is a permission bit
// such as zkproto.PermRead; if it has several bits, any one of them
// granted by an entry suffices, as in ZooKeeper (getACL asks for READ|ADMIN).
//
// The rules, in order: an empty or nil list allows everything; a super
// identity allows everything; then an entry that grants perm allows if it
// is world:anyone, if it is a digest entry equal to one of the
// connection's digest identities, or if it is an ip entry whose
// address/bits covers one of the connection's ip identities, or if it is an
// x509 entry equal to one of its x509 identities. Entries of any
// other scheme never match. The caller turns false into NoAuth and handles
// skipACL.
func Check(acls []zkproto.ACL, perm int32, ids []zkproto.ID) bool {
	if len(acls) == 0 {
		return true
	}
	for _, id := range ids {
		if id.Scheme == SchemeSuper {
			return true
		}
	}
	for _, a := range acls {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID.Scheme == SchemeWorld && a.ID.ID == Anyone {
			return true
		}
		if matchAny(a.ID, ids) {
			return true
		}
	}
	return false
}

// matchAny reports whether one of ids satisfies the ACL id entry, using
// the provider of entry's scheme.
func matchAny(entry zkproto.ID, ids []zkproto.ID) bool {
	var match func(id, acl string) bool
	switch entry.Scheme {
	case SchemeDigest:
		match = func(id, acl string) bool { return id == acl }
	case SchemeIP:
		match = matchIP
	case SchemeX509:
		match = func(id, acl string) bool { return id == acl }
	default:
		return false // no provider: ZooKeeper skips the entry
	}
	for _, id := range ids {
		if id.Scheme == entry.Scheme && match(id.ID, entry.ID) {
			return true
		}
	}
	return false
}
