package zkcore

import (
	"keeper/coordination/datatree"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// record is what prep knows about one path: the committed node overlaid
// with the effects of prepared transactions not yet applied (ZooKeeper's
// ChangeRecord). A record with exists == false is a pending delete.
type record struct {
	exists      bool
	stat        zkproto.StatPersisted
	numChildren int32
	acl         []zkproto.ACL
	dataLen     int // the length of the node's data, for quota checks
}

// change is one pending record, stamped with the txn that produced it.
type change struct {
	zxid zxid.ID
	path string
	rec  record
}

// view answers "what will this path look like once every prepared txn is
// applied". Prepared changes are dropped as their txns are applied.
type view struct {
	tree    *datatree.Tree
	latest  map[string]*change // newest pending change per path
	pending []*change          // all pending changes in zxid order
	// spare holds changes whose txns were applied, for newChange to
	// reuse: every write makes one or two, and the heap they would add
	// between collections is a fifth of what a create allocates. Nothing
	// refers to a change once applied drops it (a prep's own list of
	// changes lives only while its write is prepared).
	spare []*change
}

// maxSpareChanges bounds the changes kept for reuse: the most a burst of
// writes leaves behind is not worth keeping.
const maxSpareChanges = 1024

// newChange returns a zeroed change, reused when one is spare.
func (v *view) newChange() *change {
	if n := len(v.spare); n > 0 {
		ch := v.spare[n-1]
		v.spare[n-1] = nil
		v.spare = v.spare[:n-1]
		return ch
	}
	return new(change)
}

func newView(tree *datatree.Tree) *view {
	return &view{tree: tree, latest: make(map[string]*change)}
}

// get returns the record for path; ok is false if the path does not exist
// once pending txns apply.
func (v *view) get(path string) (record, bool) {
	if ch, ok := v.latest[path]; ok {
		return ch.rec, ch.rec.exists
	}
	n := v.tree.Node(path)
	if n == nil {
		return record{}, false
	}
	return record{
		exists:      true,
		stat:        n.Persisted(),
		numChildren: int32(n.NumChildren()),
		acl:         v.tree.ACL(n),
		dataLen:     len(n.Data()),
	}, true
}

// add records the changes of one prepared txn.
func (v *view) add(chs []*change) {
	for _, ch := range chs {
		v.latest[ch.path] = ch
		v.pending = append(v.pending, ch)
	}
}

// applied drops every pending change of txns up to and including z, which
// the tree now reflects.
func (v *view) applied(z zxid.ID) {
	n := 0
	for _, ch := range v.pending {
		if ch.zxid > z {
			break
		}
		if v.latest[ch.path] == ch {
			delete(v.latest, ch.path)
		}
		if len(v.spare) < maxSpareChanges {
			*ch = change{}
			v.spare = append(v.spare, ch)
		}
		n++
	}
	if n > 0 {
		clear(v.pending[:n])
		v.pending = v.pending[n:]
		if len(v.pending) == 0 {
			v.pending = nil
		}
	}
}

// ephemeralsOf returns the paths the session will own once pending txns
// apply: the committed ephemerals, minus pending deletes, plus pending
// creates.
func (v *view) ephemeralsOf(sessionID int64) map[string]bool {
	out := make(map[string]bool)
	for _, p := range v.tree.Ephemerals(sessionID) {
		out[p] = true
	}
	for path, ch := range v.latest {
		switch {
		case !ch.rec.exists:
			delete(out, path)
		case ch.rec.stat.EphemeralOwner == sessionID:
			out[path] = true
		}
	}
	return out
}
