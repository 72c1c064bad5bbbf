package datatree

import (
	"maps"
	"math"
	"slices"

	"keeper/coordination/zkproto"
)

// Stored ephemeralOwner encodings (docs/zookeeper-protocol.md §5.4).
const (
	// ContainerOwner is the stored ephemeralOwner of a container node.
	ContainerOwner int64 = math.MinInt64
	// MaxTTL is the largest TTL, in ms, that the TTL encoding can hold.
	MaxTTL int64 = 0xFF_FFFF_FFFF

	ttlHighByte    uint64 = 0xFF00_0000_0000_0000
	ttlFeatureMask uint64 = 0x00FF_FF00_0000_0000 // feature code 0x0000 = TTL
)

// TTLOwner returns the stored ephemeralOwner of a TTL node with the given
// TTL in ms, and false if ttl is outside 1..MaxTTL.
func TTLOwner(ttl int64) (int64, bool) {
	if ttl <= 0 || ttl > MaxTTL {
		return 0, false
	}
	return int64(ttlHighByte | uint64(ttl)), true
}

// kind is what a stored ephemeralOwner says about its node.
type kind uint8

const (
	kindPersistent kind = iota
	kindEphemeral
	kindContainer
	kindTTL
)

// kindOf classifies a stored ephemeralOwner as ZooKeeper does with extended
// types enabled. An owner with a 0xFF high byte and a non-zero feature code,
// and the legacy 3.5.3 TTL form (0x80 high byte), are read as ordinary
// ephemerals: Java does the same unless it runs with the non-default
// emulate353TTLNodes flag, and neither form is ever produced by a live
// server (session ids never have those high bytes while extended types are
// on).
func kindOf(owner int64) kind {
	switch {
	case owner == 0:
		return kindPersistent
	case owner == ContainerOwner:
		return kindContainer
	case uint64(owner)&(ttlHighByte|ttlFeatureMask) == ttlHighByte:
		return kindTTL
	}
	return kindEphemeral
}

// Node is one znode. Its accessors are read-only views: slices they return
// belong to the tree and must not be modified. A *Node stays valid until the
// node is deleted; it then no longer changes.
type Node struct {
	stat     zkproto.StatPersisted
	data     []byte
	aclRef   int64            // key into the tree's ACL cache; -1 = OPEN_ACL_UNSAFE
	children map[string]*Node // by child name; nil while the node has none
	digest   uint32           // this node's term of the tree digest (0 under /zookeeper/)
}

// Data returns the node's data; nil (null) and empty are distinct. The
// slice must not be modified.
func (n *Node) Data() []byte { return n.data }

// Persisted returns the stored stat, as snapshots carry it: cversion is the
// count of child creations and ephemeralOwner is raw.
func (n *Node) Persisted() zkproto.StatPersisted { return n.stat }

// Stat returns the stat clients see: cversion = 2*stored - numChildren,
// ephemeralOwner 0 for container and TTL nodes, plus dataLength and
// numChildren.
func (n *Node) Stat() zkproto.Stat {
	numChildren := int32(len(n.children))
	owner := n.stat.EphemeralOwner
	if k := kindOf(owner); k == kindContainer || k == kindTTL {
		owner = 0
	}
	return zkproto.Stat{
		Czxid:          n.stat.Czxid,
		Mzxid:          n.stat.Mzxid,
		Ctime:          n.stat.Ctime,
		Mtime:          n.stat.Mtime,
		Version:        n.stat.Version,
		Cversion:       n.stat.Cversion*2 - numChildren,
		Aversion:       n.stat.Aversion,
		EphemeralOwner: owner,
		DataLength:     int32(len(n.data)),
		NumChildren:    numChildren,
		Pzxid:          n.stat.Pzxid,
	}
}

// Children returns the names (not paths) of the node's children, sorted.
func (n *Node) Children() []string {
	if len(n.children) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(n.children))
}

// NumChildren returns the number of children.
func (n *Node) NumChildren() int { return len(n.children) }

// IsEphemeral reports whether the node belongs to a session.
func (n *Node) IsEphemeral() bool { return kindOf(n.stat.EphemeralOwner) == kindEphemeral }

// IsContainer reports whether the node is a container.
func (n *Node) IsContainer() bool { return kindOf(n.stat.EphemeralOwner) == kindContainer }

// IsTTL reports whether the node is a TTL node.
func (n *Node) IsTTL() bool { return kindOf(n.stat.EphemeralOwner) == kindTTL }

// TTL returns a TTL node's time to live in ms, and 0 for other nodes.
func (n *Node) TTL() int64 {
	if !n.IsTTL() {
		return 0
	}
	return n.stat.EphemeralOwner & MaxTTL
}

// Owner returns the session that owns an ephemeral node, and 0 for other
// nodes.
func (n *Node) Owner() int64 {
	if !n.IsEphemeral() {
		return 0
	}
	return n.stat.EphemeralOwner
}

// addChild links child under name, allocating the child map on first use.
func (n *Node) addChild(name string, child *Node) {
	if n.children == nil {
		n.children = make(map[string]*Node, 1)
	}
	n.children[name] = child
}
