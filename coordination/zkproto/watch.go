package zkproto

import "keeper/coordination/jute"

// This file holds the records that register, restore, check and deliver
// watches (docs/zookeeper-protocol.md §2.2, §3).

// WatcherEvent is the body of a notification: a reply frame with xid
// XidNotification (-1) and err 0 (docs/zookeeper-protocol.md §3.3).
//
//	type int | state int | path ustring
type WatcherEvent struct {
	Type  EventType
	State int32  // always StateSyncConnected from a server
	Path  string // the server-side absolute path; the client strips any chroot
}

// Encode implements jute.Record.
func (r *WatcherEvent) Encode(e *jute.Encoder) {
	e.Int(int32(r.Type))
	e.Int(r.State)
	e.String(r.Path)
}

// Decode implements jute.Record.
func (r *WatcherEvent) Decode(d *jute.Decoder) {
	r.Type = EventType(d.Int())
	r.State = d.Int()
	r.Path = d.String()
}

// SetWatches is the body of setWatches(101), which re-registers a client's
// standard watches after a reconnect (docs/zookeeper-protocol.md §3.4). Its reply has no body.
//
//	relativeZxid long | dataWatches vector<ustring> |
//	existWatches vector<ustring> | childWatches vector<ustring>
type SetWatches struct {
	RelativeZxid int64 // the client's last seen zxid
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// Encode implements jute.Record.
func (r *SetWatches) Encode(e *jute.Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
}

// Decode implements jute.Record.
func (r *SetWatches) Decode(d *jute.Decoder) {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
}

// SetWatches2 is the body of setWatches2(105): SetWatches plus persistent
// and persistent-recursive watches. Its reply has no body.
//
//	relativeZxid long | dataWatches vector<ustring> |
//	existWatches vector<ustring> | childWatches vector<ustring> |
//	persistentWatches vector<ustring> | persistentRecursiveWatches vector<ustring>
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// Encode implements jute.Record.
func (r *SetWatches2) Encode(e *jute.Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
	e.Strings(r.PersistentWatches)
	e.Strings(r.PersistentRecursiveWatches)
}

// Decode implements jute.Record.
func (r *SetWatches2) Decode(d *jute.Decoder) {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	r.PersistentWatches = d.Strings()
	r.PersistentRecursiveWatches = d.Strings()
}

// CheckWatchesRequest is the body of checkWatches(17). Its reply has no
// body; NoWatcher means no matching watch exists (docs/zookeeper-protocol.md §3.5).
//
//	path ustring | type int
type CheckWatchesRequest struct {
	Path string
	Type WatcherType
}

// Encode implements jute.Record.
func (r *CheckWatchesRequest) Encode(e *jute.Encoder) { e.String(r.Path); e.Int(int32(r.Type)) }

// Decode implements jute.Record.
func (r *CheckWatchesRequest) Decode(d *jute.Decoder) {
	r.Path = d.String()
	r.Type = WatcherType(d.Int())
}

// RemoveWatchesRequest is the body of removeWatches(18). Its reply has no
// body; NoWatcher means nothing was removed (docs/zookeeper-protocol.md §3.5).
//
//	path ustring | type int
type RemoveWatchesRequest struct {
	Path string
	Type WatcherType
}

// Encode implements jute.Record.
func (r *RemoveWatchesRequest) Encode(e *jute.Encoder) { e.String(r.Path); e.Int(int32(r.Type)) }

// Decode implements jute.Record.
func (r *RemoveWatchesRequest) Decode(d *jute.Decoder) {
	r.Path = d.String()
	r.Type = WatcherType(d.Int())
}

// AddWatchRequest is the body of addWatch(106). A successful reply must
// carry the body ErrorResponse{CodeOK} (docs/zookeeper-protocol.md §3.5).
//
//	path ustring | mode int
type AddWatchRequest struct {
	Path string
	Mode int32 // AddWatchPersistent or AddWatchPersistentRecursive
}

// Encode implements jute.Record.
func (r *AddWatchRequest) Encode(e *jute.Encoder) { e.String(r.Path); e.Int(r.Mode) }

// Decode implements jute.Record.
func (r *AddWatchRequest) Decode(d *jute.Decoder) { r.Path = d.String(); r.Mode = d.Int() }
