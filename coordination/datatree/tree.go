package datatree

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// Paths of the built-in nodes (docs/zookeeper-protocol.md §5.5).
const (
	RootPath      = "/"
	ZooKeeperPath = "/zookeeper"
	QuotaPath     = "/zookeeper/quota"
	ConfigPath    = "/zookeeper/config"
)

// Tree is the znode tree of one replica. It changes only through Apply (and
// ReadBody, which builds a new one), so replicas that apply the same
// committed txns hold identical trees with identical digests.
//
// A Tree is not safe for concurrent use: one goroutine, or the simulator,
// owns it. WriteBody reads the whole tree, so the owner must not Apply
// while a body is being written. The one exception is a snapshot's walk
// begun with StartFuzzyBodyConcurrent, which another goroutine may step
// while the owner applies txns (walk.go).
type Tree struct {
	nodes      map[string]*Node // by path; the root is stored under "/"
	acl        aclCache
	ephemerals map[int64]map[string]struct{} // session -> paths it owns
	containers map[string]struct{}
	ttls       map[string]struct{}
	digest     int64 // sum of every node's digest term, kept current by every change
	dataSize   int64 // ApproximateDataSize, kept current by every change
	// quotas are the paths with a zookeeper_limits node, by PathTrie key
	// (quota.go); quotaDrift is how far dataSize is from the sum it
	// stands for, because quota stats rewrites do not move it.
	quotas     map[string]struct{}
	quotaDrift int64
	lastZxid   zxid.ID
	dg         digester
	walk       walkGuard // a snapshot walk on another goroutine (walk.go)
}

// newEmpty returns a tree with no nodes at all, for ReadBody to fill.
func newEmpty() *Tree {
	return &Tree{
		nodes:      make(map[string]*Node),
		acl:        newACLCache(),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		quotas:     make(map[string]struct{}),
	}
}

// New returns the tree of a fresh server (docs/zookeeper-protocol.md §5.5): "/", "/zookeeper" and
// "/zookeeper/quota" with empty data and the null ACL (OPEN_ACL_UNSAFE), and
// "/zookeeper/config" with empty data, world:anyone:r and aversion -1. All
// other stat fields are zero.
func New() *Tree {
	t := newEmpty()
	root := t.insert(RootPath, "", nil, &Node{data: []byte{}, aclRef: openACLRef})
	zk := t.insert(ZooKeeperPath, "zookeeper", root, &Node{data: []byte{}, aclRef: openACLRef})
	t.insert(QuotaPath, "quota", zk, &Node{data: []byte{}, aclRef: openACLRef})
	config := &Node{data: []byte{}, aclRef: t.acl.add(zkproto.ReadACLUnsafe)}
	config.stat.Aversion = -1
	t.insert(ConfigPath, "config", zk, config)
	return t
}

// insert adds n at path as child name of parent (nil for the root) and
// accounts for it in the digest, the data size and the owner sets. The ACL
// reference must already be counted.
func (t *Tree) insert(path, name string, parent, n *Node) *Node {
	t.nodes[path] = n
	if parent != nil {
		parent.addChild(name, n)
		t.track(path, n.stat.EphemeralOwner)
	}
	n.digest = t.dg.sum(path, n)
	t.digest += int64(n.digest)
	t.dataSize += sizeOf(path, n.data)
	return n
}

// track records path in the set its owner encoding selects.
func (t *Tree) track(path string, owner int64) {
	switch kindOf(owner) {
	case kindContainer:
		t.containers[path] = struct{}{}
	case kindTTL:
		t.ttls[path] = struct{}{}
	case kindEphemeral:
		set := t.ephemerals[owner]
		if set == nil {
			set = make(map[string]struct{})
			t.ephemerals[owner] = set
		}
		set[path] = struct{}{}
	}
}

// untrack removes path from the set its owner encoding selects. A session
// whose last ephemeral goes is forgotten.
func (t *Tree) untrack(path string, owner int64) {
	switch kindOf(owner) {
	case kindContainer:
		delete(t.containers, path)
	case kindTTL:
		delete(t.ttls, path)
	case kindEphemeral:
		set := t.ephemerals[owner]
		delete(set, path)
		if len(set) == 0 {
			delete(t.ephemerals, owner)
		}
	}
}

// sizeOf is a node's share of ApproximateDataSize: the path length in
// UTF-16 code units (Java's String.length) plus the data length. The root
// is counted twice because Java indexes it under both "" and "/".
func sizeOf(path string, data []byte) int64 {
	if path == RootPath {
		return 1 + 2*int64(len(data))
	}
	return int64(utf16Len(path) + len(data))
}

func utf16Len(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			n = 0
			for _, r := range s {
				n++
				if r > 0xFFFF {
					n++ // a surrogate pair in Java
				}
			}
			return n
		}
	}
	return len(s)
}

// lookupKey maps "" (Java's other key for the root) to "/".
func lookupKey(path string) string {
	if path == "" {
		return RootPath
	}
	return path
}

// splitPath splits a node path into its parent's path and its own name. It
// reports false for the root and for paths that cannot name a child: not
// starting with '/', ending with '/', or containing "//".
func splitPath(path string) (parent, name string, ok bool) {
	if len(path) < 2 || path[0] != '/' || path[len(path)-1] == '/' || strings.Contains(path, "//") {
		return "", "", false
	}
	i := strings.LastIndexByte(path, '/')
	if i == 0 {
		return RootPath, path[1:], true
	}
	return path[:i], path[i+1:], true
}

// Node returns the node at path, or nil. "" also names the root.
func (t *Tree) Node(path string) *Node { return t.nodes[lookupKey(path)] }

// ACL returns n's ACL list, shared with every node that has the same list;
// it must not be modified. Nodes with the null list (the built-in nodes)
// read as zkproto.OpenACLUnsafe.
func (t *Tree) ACL(n *Node) []zkproto.ACL { return t.acl.get(n.aclRef) }

// ACLCacheSize returns the number of distinct ACL lists in use (Java's
// aclCacheSize, reported by mntr).
func (t *Tree) ACLCacheSize() int { return len(t.acl.byRef) }

// Ephemerals returns the paths of the ephemerals session owns, sorted.
func (t *Tree) Ephemerals(session int64) []string {
	return sortedKeys(t.ephemerals[session])
}

// EphemeralSessions returns the sessions that own at least one ephemeral,
// sorted.
func (t *Tree) EphemeralSessions() []int64 { return slices.Sorted(maps.Keys(t.ephemerals)) }

// EphemeralCount returns the number of ephemeral nodes.
func (t *Tree) EphemeralCount() int {
	n := 0
	for _, set := range t.ephemerals {
		n += len(set)
	}
	return n
}

// Containers returns the paths of all container nodes, sorted.
func (t *Tree) Containers() []string { return sortedKeys(t.containers) }

// TTLNodes returns the paths of all TTL nodes, sorted.
func (t *Tree) TTLNodes() []string { return sortedKeys(t.ttls) }

func sortedKeys(set map[string]struct{}) []string {
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}

// CountDescendants returns the number of nodes below path at any depth, as
// getAllChildrenNumber reports it: for "/" that includes the built-in
// /zookeeper nodes. A missing path has none.
func (t *Tree) CountDescendants(path string) int {
	if lookupKey(path) == RootPath {
		return len(t.nodes) - 1
	}
	n := t.nodes[path]
	if n == nil {
		return 0
	}
	count := 0
	stack := []*Node{n}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		count += len(top.children)
		for _, c := range top.children {
			if len(c.children) > 0 {
				stack = append(stack, c)
			}
		}
	}
	return count
}

// NodeCount returns the node count as ZooKeeper reports it (srvr, mntr):
// one more than the real number of nodes, because Java indexes the root
// under both "" and "/". A fresh tree reports 5.
func (t *Tree) NodeCount() int { return len(t.nodes) + 1 }

// ApproximateDataSize returns Java's approximateDataSize: the sum over its
// node index of len(path) (in UTF-16 units) + len(data), which counts the
// root twice (as "" and "/"). A fresh tree reports 44.
func (t *Tree) ApproximateDataSize() int64 { return t.dataSize }

// LastZxid returns the highest zxid applied (or set by SetLastZxid).
func (t *Tree) LastZxid() zxid.ID { return t.lastZxid }

// SetLastZxid records z as the highest zxid applied. Snapshot loaders call
// it with the snapshot's zxid, which the body itself does not carry.
func (t *Tree) SetLastZxid(z zxid.ID) {
	defer t.unlockChange(t.lockChange())
	t.lastZxid = z
}
