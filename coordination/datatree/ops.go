package datatree

import (
	"slices"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// create adds a node (Java's createNode plus processTxn's NodeExists fixup).
//
// If the node already exists, which happens only while replaying the log
// after a fuzzy snapshot, its ACL is replaced by the txn's (Java does this
// so that a node whose ACL entry the snapshot missed gets one), the parent's
// stored cversion and pzxid are raised from the txn if that is larger, and
// NodeExists is returned. Java raises the parent only for create(1); we do
// it for every create type, since raising is always safe and otherwise a
// replayed create2 would leave the parent behind.
func (t *Tree) create(path string, data []byte, acl []zkproto.ACL, owner int64,
	parentCversion int32, h txn.Header, ch *[]Change) (zkproto.Stat, error) {
	parentPath, name, ok := splitPath(path)
	if !ok {
		return zkproto.Stat{}, zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	parent := t.nodes[parentPath]
	if parent == nil {
		return zkproto.Stat{}, zkproto.Errorf(zkproto.CodeNoNode, path)
	}
	ref := t.acl.add(acl)
	if n := t.nodes[path]; n != nil {
		old := n.aclRef
		n.aclRef = ref
		t.acl.release(old)
		t.raiseParent(parentPath, parent, parentCversion, h.Zxid)
		return zkproto.Stat{}, zkproto.Errorf(zkproto.CodeNodeExists, path)
	}
	t.raiseParent(parentPath, parent, parentCversion, h.Zxid)
	z := int64(h.Zxid)
	n := &Node{data: data, aclRef: ref, stat: zkproto.StatPersisted{
		Czxid: z, Mzxid: z, Pzxid: z, Ctime: h.Time, Mtime: h.Time, EphemeralOwner: owner,
	}}
	t.insert(path, name, parent, n)
	t.quotaCreated(parentPath, name, path, len(data))
	*ch = append(*ch, Change{zkproto.EventNodeCreated, path, t.acl.get(ref)},
		Change{zkproto.EventNodeChildrenChanged, parentPath, t.acl.get(parent.aclRef)})
	return n.Stat(), nil
}

// raiseParent sets the parent's stored cversion to cversion (-1 meaning
// current+1) and its pzxid to z, but only if that raises the cversion:
// replaying a create whose node was later deleted must not lower them.
func (t *Tree) raiseParent(path string, parent *Node, cversion int32, z zxid.ID) {
	if cversion == -1 {
		cversion = parent.stat.Cversion + 1
	}
	if cversion > parent.stat.Cversion {
		parent.stat.Cversion = cversion
		parent.stat.Pzxid = int64(z)
		t.rehash(path, parent)
	}
}

// delete removes a node (Java's deleteNode). The parent's pzxid is raised
// to z if larger, even when the node is already gone, as Java does; the
// parent's stored cversion is unchanged. The root cannot be deleted
// (BadArguments).
//
// A committed delete names a node that had no children when it was
// validated, so finding children here means the log is being replayed over
// a fuzzy snapshot that caught a later incarnation of the node, and every
// child in it is re-created by a later txn of the replay. Those children
// are deleted first (deepest first), so the replay converges. Java instead
// unlinks only the node and orphans its children.
func (t *Tree) delete(path string, z zxid.ID, ch *[]Change) error {
	parentPath, name, ok := splitPath(path)
	if !ok {
		return zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	parent := t.nodes[parentPath]
	if parent == nil {
		return zkproto.Errorf(zkproto.CodeNoNode, path)
	}
	if int64(z) > parent.stat.Pzxid {
		parent.stat.Pzxid = int64(z)
		t.rehash(parentPath, parent)
	}
	n := t.nodes[path]
	if n == nil {
		return zkproto.Errorf(zkproto.CodeNoNode, path)
	}
	if len(n.children) > 0 {
		t.deleteDescendants(path, n, ch)
	}
	t.unlink(path, parentPath, name, parent, n, ch)
	return nil
}

// deleteDescendants removes everything below n, children before parents,
// without recursion.
func (t *Tree) deleteDescendants(path string, n *Node, ch *[]Change) {
	var order []string // pre-order; reversed it puts every child before its parent
	stack := []string{path}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, name := range t.nodes[p].Children() {
			c := p + "/" + name
			order = append(order, c)
			stack = append(stack, c)
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		parentPath, name, _ := splitPath(order[i])
		t.unlink(order[i], parentPath, name, t.nodes[parentPath], t.nodes[order[i]], ch)
	}
}

// unlink removes the childless node n from the tree and from every index.
func (t *Tree) unlink(path, parentPath, name string, parent, n *Node, ch *[]Change) {
	*ch = append(*ch, Change{zkproto.EventNodeDeleted, path, t.acl.get(n.aclRef)},
		Change{zkproto.EventNodeChildrenChanged, parentPath, t.acl.get(parent.aclRef)})
	delete(parent.children, name)
	if len(parent.children) == 0 {
		parent.children = nil // give the map back; most nodes are leaves
	}
	delete(t.nodes, path)
	t.digest -= int64(n.digest)
	t.dataSize -= sizeOf(path, n.data)
	t.acl.release(n.aclRef)
	t.untrack(path, n.stat.EphemeralOwner)
	t.quotaDeleted(parentPath, name, path, len(n.data))
}

// setData replaces a node's data; version is the new version from the txn.
func (t *Tree) setData(path string, data []byte, version int32, h txn.Header, ch *[]Change) (zkproto.Stat, error) {
	path = lookupKey(path)
	n := t.nodes[path]
	if n == nil {
		return zkproto.Stat{}, zkproto.Errorf(zkproto.CodeNoNode, path)
	}
	t.dataSize += sizeOf(path, data) - sizeOf(path, n.data)
	diff := len(data) - len(n.data)
	n.data = data
	n.stat.Mtime = h.Time
	n.stat.Mzxid = int64(h.Zxid)
	n.stat.Version = version
	t.rehash(path, n)
	t.quotaDataChanged(path, diff)
	*ch = append(*ch, Change{zkproto.EventNodeDataChanged, path, t.acl.get(n.aclRef)})
	return n.Stat(), nil
}

// SetEnsembleConfig stores an ensemble's configuration in
// /zookeeper/config as Apache ZooKeeper does when a member starts or a
// learner has synced (docs/zookeeper-protocol.md §5.6): the data, mzxid set
// to the configuration's version, version -1 and mtime nowMs; the other
// fields stay as they are. It is not a txn: nothing is logged and no watch
// fires (a member serves no client while it loads or syncs). The node is
// below /zookeeper/, so the digest does not change.
func (t *Tree) SetEnsembleConfig(data []byte, version int64, nowMs int64) {
	defer t.unlockChange(t.lockChange())
	n := t.nodes[ConfigPath]
	if n == nil {
		// A snapshot of a ZooKeeper before 3.5 has none; ZooKeeper adds
		// it, as New does.
		zk := t.nodes[ZooKeeperPath]
		if zk == nil {
			return
		}
		n = &Node{data: []byte{}, aclRef: t.acl.add(zkproto.ReadACLUnsafe)}
		n.stat.Aversion = -1
		t.insert(ConfigPath, "config", zk, n)
	}
	t.dataSize += sizeOf(ConfigPath, data) - sizeOf(ConfigPath, n.data)
	diff := len(data) - len(n.data)
	n.data = slices.Clone(data)
	n.stat.Mtime = nowMs
	n.stat.Mzxid = version
	n.stat.Version = -1
	t.rehash(ConfigPath, n)
	t.quotaDataChanged(ConfigPath, diff)
}

// setACL replaces a node's ACL; version is the new aversion from the txn.
// As in Java the old list is released before the new one is added, so
// re-setting a node's only-used list gives it a fresh reference.
func (t *Tree) setACL(path string, acl []zkproto.ACL, version int32) (zkproto.Stat, error) {
	path = lookupKey(path)
	n := t.nodes[path]
	if n == nil {
		return zkproto.Stat{}, zkproto.Errorf(zkproto.CodeNoNode, path)
	}
	t.acl.release(n.aclRef)
	n.aclRef = t.acl.add(acl)
	n.stat.Aversion = version
	t.rehash(path, n)
	return n.Stat(), nil
}

// closeSession deletes the paths the txn lists, in order, then every
// ephemeral the session still owns, in path order, all with zxid z (Java's
// killSession). A record from a pre-3.6 log (c nil or NoBody) lists nothing,
// so every owned ephemeral goes. Missing nodes are skipped, as in Java.
func (t *Tree) closeSession(session int64, c *txn.CloseSession, z zxid.ID, ch *[]Change) {
	if c != nil {
		for _, p := range c.Paths {
			_ = t.delete(p, z, ch)
		}
	}
	for _, p := range t.Ephemerals(session) {
		_ = t.delete(p, z, ch)
	}
}
