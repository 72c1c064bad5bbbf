package datatree

import (
	"fmt"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/invariants"
)

// Result is the outcome of applying one txn (Java's ProcessTxnResult).
type Result struct {
	Op   zkproto.Op // the header's type (for multi sub-ops, the sub-txn's)
	Path string     // the path the record names; "" for session and error txns
	// Stat is the node's visible stat right after a create (of any kind),
	// setData, reconfig or setACL that succeeded; zero otherwise.
	Stat zkproto.Stat
	// Err is nil on success. A *zkproto.Error (possibly wrapped) says why the
	// txn could not apply, or, for an error txn, carries its code. During a
	// fuzzy-snapshot replay NodeExists and NoNode are expected and ignored.
	// For a multi it is the first sub-op error.
	Err   error
	Multi []Result // per sub-op results of a multi
}

// Change is one effect of a txn that watches must see, in order.
type Change struct {
	Type zkproto.EventType
	Path string
	// ACL is the ACL of the node the event is about (the parent, for
	// NodeChildrenChanged) at the moment of the change. Since Apache
	// ZooKeeper 3.8.4/3.9.2 a watcher without READ on it gets no event.
	ACL []zkproto.ACL
}

// Apply applies one committed txn and returns its result and the changes it
// made, in order: create P gives NodeCreated P then NodeChildrenChanged
// parent(P); delete P gives NodeDeleted P then NodeChildrenChanged
// parent(P); setData P gives NodeDataChanged P; setACL gives none.
//
// Stats follow docs/zookeeper-protocol.md §5.3 and take their zxid and times from the header.
// Txns carry post-validation values (the new version, the parent's new
// stored cversion), which Apply stores as given. Apply never panics on a
// txn it cannot apply: it reports why in Result.Err and leaves the tree
// consistent, which is what replaying a fuzzy snapshot's log needs
// (docs/zookeeper-protocol.md §9.4): parent cversion and pzxid are only ever raised.
//
// The tree keeps the record's Data slices: the caller must not modify them
// afterwards (records from txn.Unmarshal own their bytes). ACL lists are
// copied.
func (t *Tree) Apply(tx *txn.Txn) (Result, []Change) { return t.ApplyAppend(tx, nil) }

// ApplyAppend is Apply appending the changes to changes, so that a caller
// applying txn after txn can reuse one buffer for them.
func (t *Tree) ApplyAppend(tx *txn.Txn, changes []Change) (Result, []Change) {
	defer t.unlockChange(t.lockChange())
	res := t.apply(tx.Header, tx.Record, &changes)
	if tx.Header.Zxid > t.lastZxid {
		t.lastZxid = tx.Header.Zxid
	}
	if invariants.Enabled {
		t.checkInvariants(tx.Header.Zxid)
	}
	return res, changes
}

func (t *Tree) apply(h txn.Header, rec jute.Record, ch *[]Change) Result {
	r := Result{Op: h.Type}
	ok := true
	switch h.Type {
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL:
		ok = t.applyCreate(h, rec, ch, &r)
	case zkproto.OpDelete, zkproto.OpDeleteContainer:
		var d *txn.Delete
		if d, ok = rec.(*txn.Delete); ok {
			r.Path = d.Path
			r.Err = t.delete(d.Path, h.Zxid, ch)
		}
	case zkproto.OpSetData, zkproto.OpReconfig:
		var s *txn.SetData
		if s, ok = rec.(*txn.SetData); ok {
			r.Path = s.Path
			r.Stat, r.Err = t.setData(s.Path, s.Data, s.Version, h, ch)
		}
	case zkproto.OpSetACL:
		var s *txn.SetACL
		if s, ok = rec.(*txn.SetACL); ok {
			r.Path = s.Path
			r.Stat, r.Err = t.setACL(s.Path, s.ACL, s.Version)
		}
	case zkproto.OpCheck:
		var c *txn.CheckVersion
		if c, ok = rec.(*txn.CheckVersion); ok {
			r.Path = c.Path // a check that made it into the log passed; nothing changes
		}
	case zkproto.OpCreateSession:
		_, ok = rec.(*txn.CreateSession) // the session table lives elsewhere
	case zkproto.OpCloseSession:
		c, isClose := rec.(*txn.CloseSession)
		if ok = isClose || rec == nil; ok {
			t.closeSession(h.ClientID, c, h.Zxid, ch)
		}
	case zkproto.OpError:
		var e *txn.Error
		if e, ok = rec.(*txn.Error); ok && e.Err != 0 {
			r.Err = zkproto.Errorf(zkproto.Code(e.Err), "")
		}
	case zkproto.OpMulti:
		var m *txn.Multi
		if m, ok = rec.(*txn.Multi); ok {
			t.applyMulti(h, m, ch, &r)
		}
	default:
		r.Err = fmt.Errorf("datatree: zxid %v: no replay for txn type %v: %w", h.Zxid, h.Type, zkproto.ErrMarshallingError)
	}
	if !ok {
		r.Err = fmt.Errorf("datatree: zxid %v: txn type %v with record %T: %w", h.Zxid, h.Type, rec, zkproto.ErrMarshallingError)
	}
	return r
}

// applyCreate applies the four create types. It reports false if rec is
// not the record h.Type calls for.
func (t *Tree) applyCreate(h txn.Header, rec jute.Record, ch *[]Change, r *Result) bool {
	var (
		path           string
		data           []byte
		acl            []zkproto.ACL
		owner          int64
		parentCversion int32
	)
	switch c := rec.(type) {
	case *txn.Create:
		if h.Type != zkproto.OpCreate && h.Type != zkproto.OpCreate2 {
			return false
		}
		path, data, acl, parentCversion = c.Path, c.Data, c.ACL, c.ParentCversion
		if c.Ephemeral {
			owner = h.ClientID
		}
	case *txn.CreateContainer:
		if h.Type != zkproto.OpCreateContainer {
			return false
		}
		path, data, acl, parentCversion, owner = c.Path, c.Data, c.ACL, c.ParentCversion, ContainerOwner
	case *txn.CreateTTL:
		if h.Type != zkproto.OpCreateTTL {
			return false
		}
		path, data, acl, parentCversion = c.Path, c.Data, c.ACL, c.ParentCversion
		var valid bool
		if owner, valid = TTLOwner(c.TTL); !valid {
			r.Path, r.Err = path, zkproto.Errorf(zkproto.CodeBadArguments, path)
			return true
		}
	default:
		return false
	}
	r.Path = path
	r.Stat, r.Err = t.create(path, data, acl, owner, parentCversion, h, ch)
	return true
}

// applyMulti applies each sub-op in order with the multi's zxid and time.
// As in Java, if any sub-txn is an error txn the whole multi failed: every
// other sub-op is treated as an error txn too (code 0 before the first
// error sub-txn, RuntimeInconsistency after it), so nothing changes.
func (t *Tree) applyMulti(h txn.Header, m *txn.Multi, ch *[]Change, r *Result) {
	failed := false
	for _, op := range m.Ops {
		failed = failed || op.Type == zkproto.OpError
	}
	postFailed := false
	r.Multi = make([]Result, 0, len(m.Ops))
	for _, op := range m.Ops {
		sub := h
		sub.Type = op.Type
		rec := op.Record
		switch {
		case op.Type == zkproto.OpError:
			postFailed = true
		case failed:
			code := zkproto.CodeOK
			if postFailed {
				code = zkproto.CodeRuntimeInconsistency
			}
			sub.Type, rec = zkproto.OpError, &txn.Error{Err: int32(code)}
		}
		var res Result
		if isMultiSubType(sub.Type) {
			res = t.apply(sub, rec, ch)
		} else {
			res = Result{Op: sub.Type, Err: fmt.Errorf("datatree: zxid %v: %v inside multi: %w",
				h.Zxid, sub.Type, zkproto.ErrMarshallingError)}
		}
		r.Multi = append(r.Multi, res)
		if res.Err != nil && r.Err == nil {
			r.Err = res.Err
		}
	}
}

// isMultiSubType reports whether op may appear inside a multi (the types
// Java's DataTree replays there).
func isMultiSubType(op zkproto.Op) bool {
	switch op {
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL,
		zkproto.OpDelete, zkproto.OpDeleteContainer, zkproto.OpSetData, zkproto.OpCheck, zkproto.OpError:
		return true
	}
	return false
}

// checkInvariants recomputes what Apply maintains incrementally. It is
// O(nodes), so it runs only with -tags invariants.
func (t *Tree) checkInvariants(z zxid.ID) {
	d := t.ComputeDigest()
	invariants.Assertf(d == t.digest, "datatree: after zxid %v digest is %d, recomputed %d", z, t.digest, d)
	var size int64
	for path, n := range t.nodes {
		size += sizeOf(path, n.data)
	}
	invariants.Assertf(size+t.quotaDrift == t.dataSize, "datatree: after zxid %v data size is %d, recomputed %d + quota drift %d",
		z, t.dataSize, size, t.quotaDrift)
}
