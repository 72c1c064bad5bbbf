package chaos

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/verify/sim/model"
)

// linearizeTimeout bounds the porcupine check of one run.
const linearizeTimeout = 60 * time.Second

// resolved is a write's outcome as the committed history tells it.
type resolved struct {
	op        *Op
	committed bool
	zxid      zxid.ID
	code      zkproto.Code
	version   int32 // a successful setData's new version
}

// resolveWrites finds every write's txn by session and xid. A write whose
// reply never came is resolved by its txn: if the txn is committed it
// happened, with the txn's outcome; if not, it never did (the servers
// converged, so nothing more will be committed). A reply that disagrees
// with its txn, and an acknowledged write with no txn, are violations.
func resolveWrites(h *History, c *Committed, r *Report) []resolved {
	var out []resolved
	for _, o := range h.Ops() {
		if !o.IsWrite() || o.Kind == zkproto.OpCloseSession {
			continue
		}
		t, ok := c.Request(o.Session, o.Xid)
		res := resolved{op: o, committed: ok}
		if ok {
			res.zxid, res.code, res.version = txnOutcome(t)
		}
		switch {
		case o.Unknown:
		case !ok && o.Err == zkproto.CodeOK:
			r.Lost("%s's %v %s (session %#x xid %d, acknowledged at zxid %#x) is not in the committed history",
				o.Client, o.Kind, o.Path, o.Session, o.Xid, o.Zxid)
		case !ok:
			// A failed write the server answered without a txn.
		case res.code != o.Err:
			r.Violate("replies", "%s's %v %s was answered %v but committed as %s", o.Client, o.Kind, o.Path, o.Err, DescribeTxn(t))
		case o.Err == zkproto.CodeOK && zxid.ID(o.Zxid) != res.zxid:
			r.Violate("replies", "%s's %v %s was answered at zxid %#x but committed at %v", o.Client, o.Kind, o.Path, o.Zxid, res.zxid)
		case o.Kind == zkproto.OpSetData && o.Err == zkproto.CodeOK && (o.Stat.Version != res.version || zxid.ID(o.Stat.Mzxid) != res.zxid):
			r.Violate("replies", "%s's setData %s returned version %d mzxid %#x; the txn says version %d at %v",
				o.Client, o.Path, o.Stat.Version, o.Stat.Mzxid, res.version, res.zxid)
		}
		out = append(out, res)
	}
	return out
}

// txnOutcome is what a write's txn says about it.
func txnOutcome(t *txn.Txn) (zxid.ID, zkproto.Code, int32) {
	switch rec := t.Record.(type) {
	case *txn.Error:
		return t.Header.Zxid, zkproto.Code(rec.Err), 0
	case *txn.SetData:
		return t.Header.Zxid, zkproto.CodeOK, rec.Version
	}
	return t.Header.Zxid, zkproto.CodeOK, 0
}

// CheckLinearizable checks that the writes to paths under prefix (the CAS
// registers) are linearizable, with porcupine and keeper/sim/model's
// register model, the history patched from the committed log: unknown
// writes that committed keep their txn's outcome and an unknown return
// time, the others are dropped.
func CheckLinearizable(writes []resolved, prefix string, r *Report) int {
	var ops []porcupine.Operation
	for _, w := range writes {
		o := w.op
		if !strings.HasPrefix(o.Path, prefix) {
			continue
		}
		in := model.Input{Path: o.Path, Value: o.Data, Version: o.Version}
		switch o.Kind {
		case zkproto.OpCreate, zkproto.OpCreate2:
			in.Kind = model.Create
		case zkproto.OpSetData:
			in.Kind = model.Set
		case zkproto.OpDelete:
			in.Kind = model.Delete
		default:
			continue
		}
		out := model.Output{Known: true, Code: o.Err, Version: o.Stat.Version}
		ret := o.Return
		if o.Unknown {
			if !w.committed {
				continue
			}
			out = model.Output{Known: true, Code: w.code, Version: w.version}
			ret = math.MaxInt64
		}
		ops = append(ops, porcupine.Operation{ClientId: clientIndex(o.Client), Input: in, Call: o.Call, Output: out, Return: ret})
	}
	res := porcupine.CheckOperationsTimeout(model.Register(), ops, linearizeTimeout)
	switch res {
	case porcupine.Illegal:
		r.Violate("linearizability", "the %d register writes under %s are not linearizable (porcupine: illegal)", len(ops), prefix)
	case porcupine.Unknown:
		r.Violate("linearizability", "porcupine gave up after %v on %d register writes", linearizeTimeout, len(ops))
	}
	return len(ops)
}

// clientIndex turns "c12" into 12, for porcupine's client ids.
func clientIndex(name string) int {
	n := 0
	for _, ch := range name {
		if ch >= '0' && ch <= '9' {
			n = n*10 + int(ch-'0')
		}
	}
	return n
}

// CheckWriteOrder checks that committed writes respect real time: a write
// invoked after another returned has a higher zxid.
func CheckWriteOrder(writes []resolved, r *Report) {
	var done []resolved
	for _, w := range writes {
		if w.committed {
			done = append(done, w)
		}
	}
	byReturn := slices.Clone(done)
	byReturn = slices.DeleteFunc(byReturn, func(w resolved) bool { return w.op.Unknown })
	slices.SortFunc(byReturn, func(a, b resolved) int { return cmp.Compare(a.op.Return, b.op.Return) })
	slices.SortFunc(done, func(a, b resolved) int { return cmp.Compare(a.op.Call, b.op.Call) })
	var latest *resolved
	i := 0
	for _, b := range done {
		for ; i < len(byReturn) && byReturn[i].op.Return < b.op.Call; i++ {
			if latest == nil || byReturn[i].zxid > latest.zxid {
				latest = &byReturn[i]
			}
		}
		if latest != nil && b.zxid <= latest.zxid {
			r.Violate("write-order", "%s's %v %s (zxid %v) started after %s's %v %s (zxid %v) returned, but was committed first",
				b.op.Client, b.op.Kind, b.op.Path, b.zxid, latest.op.Client, latest.op.Kind, latest.op.Path, latest.zxid)
			return
		}
	}
}

// CheckAckedCreates checks that every acknowledged create under prefix
// (the set workload, which never deletes) is in the final tree.
func CheckAckedCreates(h *History, c *Committed, prefix string, r *Report) int {
	n := 0
	for _, o := range h.Ops() {
		if (o.Kind != zkproto.OpCreate && o.Kind != zkproto.OpCreate2) || o.Unknown || o.Err != zkproto.CodeOK ||
			!strings.HasPrefix(o.Path, prefix) {
			continue
		}
		n++
		if c.Final.Node(o.CreatedPath) == nil {
			r.Lost("acknowledged create %s by %s (zxid %#x) is missing from the final tree", o.CreatedPath, o.Client, o.Zxid)
		}
	}
	return n
}
