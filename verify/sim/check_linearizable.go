package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/verify/sim/model"
)

// linearizeTimeout bounds one porcupine check; histories are small, so
// hitting it means something is off and is reported.
const linearizeTimeout = 30 * time.Second

// checkLinearizable checks that the writes to the register znodes are
// linearizable (model.Register). A write whose outcome the client never
// learned is patched from the final history, as etcd's robustness tests
// patch theirs from the WAL: if its txn is not there it never happened and
// is dropped; if it is, its outcome is the txn's and its return time is
// unknown (infinite).
func (c *Cluster) checkLinearizable() {
	ops := c.registerOps()
	res := porcupine.CheckOperationsTimeout(model.Register(), ops, linearizeTimeout)
	switch res {
	case porcupine.Ok:
		return
	case porcupine.Unknown:
		c.violate("linearizability", "porcupine gave up after %v on %d writes", linearizeTimeout, len(ops))
		return
	}
	for _, path := range registerPaths {
		var mine []porcupine.Operation
		for _, o := range ops {
			if o.Input.(model.Input).Path == path {
				mine = append(mine, o)
			}
		}
		if !porcupine.CheckOperations(model.Register(), mine) {
			c.violate("linearizability", "the writes to %s are not linearizable:\n%s", path, describeOps(mine))
		}
	}
}

// checkWriteOrder checks that the zxid order of all acknowledged writes
// (every path, every session) respects real time: a write that started
// after another one returned was committed after it. With the replay in
// checkReads this makes the committed history a linearization of the
// writes; porcupine then checks the outcomes the clients saw.
func (c *Cluster) checkWriteOrder() {
	var writes []*op
	for _, o := range c.hist.ops {
		if o.done && o.isWrite() {
			writes = append(writes, o)
		}
	}
	byReturn := slices.Clone(writes)
	slices.SortFunc(byReturn, func(a, b *op) int { return cmp.Compare(a.retSeq, b.retSeq) })
	slices.SortFunc(writes, func(a, b *op) int { return cmp.Compare(a.callSeq, b.callSeq) })
	var latest *op // the write with the highest zxid among those returned so far
	i := 0
	for _, b := range writes {
		for ; i < len(byReturn) && byReturn[i].retSeq < b.callSeq; i++ {
			if latest == nil || byReturn[i].hdr.Zxid > latest.hdr.Zxid {
				latest = byReturn[i]
			}
		}
		if latest != nil && b.hdr.Zxid <= latest.hdr.Zxid {
			c.violate("linearizability", "client %d's %v %s (zxid %s) started after client %d's %v %s (zxid %s) returned, but was committed before it",
				b.client, b.kind, b.path, zx(b.hdr.Zxid), latest.client, latest.kind, latest.path, zx(latest.hdr.Zxid))
			return
		}
	}
}

// registerOps turns the register writes into porcupine operations.
func (c *Cluster) registerOps() []porcupine.Operation {
	f := c.oracle.final
	var out []porcupine.Operation
	for _, o := range c.hist.ops {
		kind, ok := registerKind(o)
		if !ok {
			continue
		}
		in := model.Input{Path: o.path, Kind: kind, Value: string(o.value), Version: o.version}
		op := porcupine.Operation{ClientId: o.client, Input: in, Call: int64(o.callSeq)}
		if o.done {
			op.Output = model.Output{Known: true, Code: o.hdr.Err, Version: o.stat.Version}
			op.Return = int64(o.retSeq)
		} else {
			t, ok := f.request(o.session, o.xid)
			if !ok {
				continue // never committed: it did not happen
			}
			op.Output = txnOutput(t)
			op.Return = math.MaxInt64
		}
		out = append(out, op)
	}
	return out
}

func registerKind(o *op) (model.Kind, bool) {
	if !isRegister(o.path) {
		return 0, false
	}
	switch o.kind {
	case zkproto.OpCreate:
		return model.Create, true
	case zkproto.OpSetData:
		return model.Set, true
	case zkproto.OpDelete:
		return model.Delete, true
	}
	return 0, false
}

// txnOutput is the output a committed txn stands for.
func txnOutput(t *txn.Txn) model.Output {
	out := model.Output{Known: true, Code: outcome(t)}
	if sd, ok := t.Record.(*txn.SetData); ok {
		out.Version = sd.Version
	}
	return out
}

// describeOps lists operations by call time for a message.
func describeOps(ops []porcupine.Operation) string {
	ops = slices.Clone(ops)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
	m := model.Register()
	var b strings.Builder
	for i, o := range ops {
		if i == 60 {
			fmt.Fprintf(&b, "    ... %d more\n", len(ops)-60)
			break
		}
		ret := "never"
		if o.Return != math.MaxInt64 {
			ret = fmt.Sprint(o.Return)
		}
		fmt.Fprintf(&b, "    client %d [%d, %s] %s\n", o.ClientId, o.Call, ret, m.DescribeOperation(o.Input, o.Output))
	}
	return b.String()
}
