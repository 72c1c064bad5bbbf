package zkproto

import "keeper/coordination/jute"

// Permission bits of an ACL entry (docs/zookeeper-protocol.md §7.1).
const (
	PermRead   int32 = 1
	PermWrite  int32 = 2
	PermCreate int32 = 4
	PermDelete int32 = 8
	PermAdmin  int32 = 16
	PermAll    int32 = 31
)

// Create flags: Java's CreateMode values (docs/zookeeper-protocol.md §2.2).
const (
	FlagPersistent                  int32 = 0
	FlagEphemeral                   int32 = 1
	FlagPersistentSequential        int32 = 2
	FlagEphemeralSequential         int32 = 3
	FlagContainer                   int32 = 4
	FlagPersistentWithTTL           int32 = 5
	FlagPersistentSequentialWithTTL int32 = 6
)

// EventType is the type of a watch notification (docs/zookeeper-protocol.md §3.3).
type EventType int32

// Event types the server sends.
const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

// StateSyncConnected is the only keeper state the server puts in events.
const StateSyncConnected int32 = 3

// WatcherType selects watches in checkWatches and removeWatches (docs/zookeeper-protocol.md §3.5).
type WatcherType int32

// Watcher types.
const (
	WatcherChildren            WatcherType = 1
	WatcherData                WatcherType = 2
	WatcherAny                 WatcherType = 3
	WatcherPersistent          WatcherType = 4
	WatcherPersistentRecursive WatcherType = 5
)

// AddWatch modes.
const (
	AddWatchPersistent          int32 = 0
	AddWatchPersistentRecursive int32 = 1
)

// ID is an authentication identity, such as world:anyone or digest:u:hash.
type ID struct {
	Scheme string
	ID     string
}

// Encode implements jute.Record.
func (x *ID) Encode(e *jute.Encoder) { e.String(x.Scheme); e.String(x.ID) }

// Decode implements jute.Record.
func (x *ID) Decode(d *jute.Decoder) { x.Scheme = d.String(); x.ID = d.String() }

// ACL is one access-control entry: permissions granted to an identity.
type ACL struct {
	Perms int32
	ID    ID
}

// Encode implements jute.Record.
func (a *ACL) Encode(e *jute.Encoder) { e.Int(a.Perms); a.ID.Encode(e) }

// Decode implements jute.Record.
func (a *ACL) Decode(d *jute.Decoder) { a.Perms = d.Int(); a.ID.Decode(d) }

// Predefined ACL lists (docs/zookeeper-protocol.md §7.1).
var (
	OpenACLUnsafe = []ACL{{Perms: PermAll, ID: ID{Scheme: "world", ID: "anyone"}}}
	CreatorAllACL = []ACL{{Perms: PermAll, ID: ID{Scheme: "auth", ID: ""}}}
	ReadACLUnsafe = []ACL{{Perms: PermRead, ID: ID{Scheme: "world", ID: "anyone"}}}
)

// EncodeACLs appends a vector of ACLs; nil is written as a null vector.
func EncodeACLs(e *jute.Encoder, acls []ACL) {
	e.VectorLen(len(acls), acls == nil)
	for i := range acls {
		acls[i].Encode(e)
	}
}

// DecodeACLs reads a vector of ACLs; a null vector reads as nil.
func DecodeACLs(d *jute.Decoder) []ACL {
	n := d.VectorLen(12) // perms + two string lengths
	if n < 0 {
		return nil
	}
	out := make([]ACL, n)
	for i := range out {
		out[i].Decode(d)
	}
	if d.Err() != nil {
		return nil
	}
	return out
}

// Stat is a znode's metadata as clients see it (68 bytes on the wire).
// Note the field order: times sit between mzxid and version; pzxid is last.
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64 // ms since the Unix epoch
	Mtime          int64 // ms since the Unix epoch
	Version        int32
	Cversion       int32 // the visible value: 2*stored - numChildren
	Aversion       int32
	EphemeralOwner int64 // 0 for persistent, container and TTL nodes
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

// Encode implements jute.Record.
func (s *Stat) Encode(e *jute.Encoder) {
	e.Long(s.Czxid)
	e.Long(s.Mzxid)
	e.Long(s.Ctime)
	e.Long(s.Mtime)
	e.Int(s.Version)
	e.Int(s.Cversion)
	e.Int(s.Aversion)
	e.Long(s.EphemeralOwner)
	e.Int(s.DataLength)
	e.Int(s.NumChildren)
	e.Long(s.Pzxid)
}

// Decode implements jute.Record.
func (s *Stat) Decode(d *jute.Decoder) {
	s.Czxid = d.Long()
	s.Mzxid = d.Long()
	s.Ctime = d.Long()
	s.Mtime = d.Long()
	s.Version = d.Int()
	s.Cversion = d.Int()
	s.Aversion = d.Int()
	s.EphemeralOwner = d.Long()
	s.DataLength = d.Int()
	s.NumChildren = d.Int()
	s.Pzxid = d.Long()
}

// StatPersisted is the metadata stored in snapshots and quorum traffic
// (60 bytes). Cversion is the stored value: the count of child creations.
type StatPersisted struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64 // raw: container and TTL markers included
	Pzxid          int64
}

// Encode implements jute.Record.
func (s *StatPersisted) Encode(e *jute.Encoder) {
	e.Long(s.Czxid)
	e.Long(s.Mzxid)
	e.Long(s.Ctime)
	e.Long(s.Mtime)
	e.Int(s.Version)
	e.Int(s.Cversion)
	e.Int(s.Aversion)
	e.Long(s.EphemeralOwner)
	e.Long(s.Pzxid)
}

// Decode implements jute.Record.
func (s *StatPersisted) Decode(d *jute.Decoder) {
	s.Czxid = d.Long()
	s.Mzxid = d.Long()
	s.Ctime = d.Long()
	s.Mtime = d.Long()
	s.Version = d.Int()
	s.Cversion = d.Int()
	s.Aversion = d.Int()
	s.EphemeralOwner = d.Long()
	s.Pzxid = d.Long()
}
