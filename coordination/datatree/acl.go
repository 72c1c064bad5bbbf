package datatree

import (
	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// openACLRef is the reference for a null ACL list, read as OPEN_ACL_UNSAFE.
// It is never stored in the cache; in practice only the built-in /,
// /zookeeper and /zookeeper/quota use it.
const openACLRef int64 = -1

// aclCache shares identical ACL lists between nodes, as ZooKeeper's
// ReferenceCountedACLCache does: each distinct list gets a reference
// 1, 2, 3, ... that nodes and snapshots store instead of the list. An entry
// is dropped when its last user goes; references are never reused.
type aclCache struct {
	byRef map[int64]*aclEntry
	byKey map[string]int64 // jute encoding of the list -> ref
	index int64            // highest reference allocated or loaded
	buf   []byte           // scratch for encoding lookup keys
}

type aclEntry struct {
	acls []zkproto.ACL
	key  string
	refs int64 // nodes using this entry
}

func newACLCache() aclCache {
	return aclCache{byRef: make(map[int64]*aclEntry), byKey: make(map[string]int64)}
}

// encodeKey encodes acls into the scratch buffer; the result is valid
// until the next call. Looking it up as c.byKey[string(key)] does not
// allocate, so only new entries pay for a key string.
func (c *aclCache) encodeKey(acls []zkproto.ACL) []byte {
	e := jute.Encoder{B: c.buf[:0]}
	zkproto.EncodeACLs(&e, acls)
	c.buf = e.B
	return e.B
}

// add returns the reference for acls and counts one more user of it. A nil
// list maps to openACLRef; an empty non-nil list is an ordinary entry.
func (c *aclCache) add(acls []zkproto.ACL) int64 {
	if acls == nil {
		return openACLRef
	}
	key := c.encodeKey(acls)
	ref, ok := c.byKey[string(key)]
	if !ok {
		c.index++
		ref = c.index
		k := string(key)
		c.byRef[ref] = &aclEntry{acls: append([]zkproto.ACL{}, acls...), key: k}
		c.byKey[k] = ref
	}
	c.byRef[ref].refs++
	return ref
}

// load inserts an entry read from a snapshot, with no users yet. It reports
// false for a duplicate or reserved reference.
func (c *aclCache) load(ref int64, acls []zkproto.ACL) bool {
	if ref == openACLRef || c.byRef[ref] != nil {
		return false
	}
	key := string(c.encodeKey(acls))
	c.byRef[ref] = &aclEntry{acls: acls, key: key}
	c.byKey[key] = ref // a list stored twice resolves to the later ref, as in Java
	c.index = max(c.index, ref)
	return true
}

// use counts one more user of ref; it reports false if ref is unknown.
func (c *aclCache) use(ref int64) bool {
	if ref == openACLRef {
		return true
	}
	e := c.byRef[ref]
	if e == nil {
		return false
	}
	e.refs++
	return true
}

// release counts one user fewer of ref, dropping the entry at zero.
func (c *aclCache) release(ref int64) {
	e := c.byRef[ref]
	if ref == openACLRef || e == nil {
		return
	}
	e.refs--
	if e.refs <= 0 {
		c.drop(ref, e)
	}
}

func (c *aclCache) drop(ref int64, e *aclEntry) {
	delete(c.byRef, ref)
	if c.byKey[e.key] == ref {
		delete(c.byKey, e.key)
	}
}

// purgeUnused drops entries no node uses, after a snapshot load.
func (c *aclCache) purgeUnused() {
	for ref, e := range c.byRef {
		if e.refs <= 0 {
			c.drop(ref, e)
		}
	}
}

// get returns the list for ref.
func (c *aclCache) get(ref int64) []zkproto.ACL {
	if ref == openACLRef {
		return zkproto.OpenACLUnsafe
	}
	if e := c.byRef[ref]; e != nil {
		return e.acls
	}
	return nil
}
