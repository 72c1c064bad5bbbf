// Package datatree is the znode tree: it applies committed txns
// deterministically, keeps every stat exactly as ZooKeeper does (docs/zookeeper-protocol.md §5),
// tracks ephemeral, container and TTL nodes, maintains the tree digest
// (docs/zookeeper-protocol.md §9.5) and reads and writes the tree part of a snapshot (docs/zookeeper-protocol.md §9.4),
// which is also the body of a Zab SNAP transfer.
//
// # Stats
//
// Each node stores a StatPersisted. Its cversion is the stored value, the
// number of child creations ever made; clients see 2*stored - numChildren.
// The ephemeralOwner is stored raw:
//
//	persistent  0
//	ephemeral   the owning session id
//	container   0x8000000000000000
//	TTL         0xFF00_0000_0000_0000 | ttl   (bits 40-55, the feature code, are 0)
//
// and shown to clients as 0 for containers and TTL nodes. The legacy 3.5.3
// TTL form (0x80 high byte with a TTL) is not recognised: like Java without
// zookeeper.emulate353TTLNodes, such an owner reads as an ordinary session.
//
// # Snapshot body
//
// WriteBody and ReadBody handle the part of a snapshot file between the
// session list and the first seal. All integers are big-endian jute values.
//
//	+------------------------------------------------------------------+
//	| aclMapSize int32                                                 |
//	| repeat aclMapSize:                                               |
//	|   aclRef int64        1, 2, 3, ... (never -1)                    |
//	|   acls vector<ACL>    count int32, then per ACL:                 |
//	|                         perms int32, scheme ustring, id ustring  |
//	+------------------------------------------------------------------+
//	| repeat per node, pre-order from the root:                        |
//	|   path ustring        "" for the root, then "/zookeeper", ...    |
//	|   data buffer         length -1 = null, 0 = empty                |
//	|   aclRef int64        -1 = OPEN_ACL_UNSAFE (null ACL list)       |
//	|   stat StatPersisted  60 bytes: czxid, mzxid, ctime, mtime int64;|
//	|                       version, cversion (stored), aversion int32;|
//	|                       ephemeralOwner (raw), pzxid int64          |
//	+------------------------------------------------------------------+
//	| "/" ustring           end marker: 00000001 2f                    |
//	+------------------------------------------------------------------+
//
// Java writes ACL entries and children in hash order; we write ACL
// references ascending and children in name order, so equal trees give
// equal bytes. Readers accept any order as long as parents come before
// their children.
//
// # ACL cache
//
// As in ZooKeeper's ReferenceCountedACLCache, identical ACL lists share one
// reference, counted by the nodes that use it and dropped when the last one
// goes; references are allocated 1, 2, 3, ... and never reused. A null list
// is the reserved reference -1 (OPEN_ACL_UNSAFE), used only by the built-in
// /, /zookeeper and /zookeeper/quota; a user node created with
// world:anyone:cdrwa gets an ordinary reference.
//
// # Node count and data size
//
// Java indexes the root under both "" and "/", and its node count and
// approximate data size count it twice; NodeCount and ApproximateDataSize
// report the same numbers (5 and 44 on a fresh tree). The tree itself keys
// the root once, under "/".
//
// # Quotas
//
// Quota nodes under /zookeeper/quota are ordinary znodes in snapshots and
// logs. The tree keeps their zookeeper_stats current as it applies txns
// and rebuilds what it tracks when it loads a snapshot, as ZooKeeper 3.8's
// DataTree does; quota.go describes how, and where the approximate data
// size then drifts from the sum it stands for, as Java's does.
package datatree
