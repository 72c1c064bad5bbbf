package sim

import (
	"slices"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// checkDurability checks that nothing committed was lost: every txn any
// replica applied, every write a client saw acknowledged (with the zxid its
// reply carried, and the outcome it reported) and every session a client
// was given are in the final history, which every replica holds.
func (c *Cluster) checkDurability() {
	f := c.oracle.final
	zs := make([]zxid.ID, 0, len(c.oracle.applied))
	for z := range c.oracle.applied {
		zs = append(zs, z)
	}
	slices.Sort(zs)
	for _, z := range zs {
		if _, ok := f.index[z]; !ok {
			c.violate("durability", "txn %s (%s), applied as committed by server %d, is not in the final history",
				z, describeTxn(c.oracle.txns[z].data), c.oracle.applied[z])
		}
	}
	for _, o := range c.hist.ops {
		if o.done && o.isWrite() {
			c.checkAcked(o)
		}
	}
	for _, s := range c.hist.sessions {
		if _, ok := f.created[s.id]; !ok {
			c.violate("durability", "session %#x, given to client %d, was never created in the final history", s.id, s.client)
		}
	}
}

// checkAcked checks one acknowledged write against the final history.
func (c *Cluster) checkAcked(o *op) {
	t, ok := c.oracle.final.request(o.session, o.xid)
	switch {
	case !ok:
		c.violate("durability", "client %d's %v %s (session %#x xid %d) was answered %v at zxid %s, but is not in the final history",
			o.client, o.kind, o.path, o.session, o.xid, o.hdr.Err, zx(o.hdr.Zxid))
	case t.Header.Zxid != zx(o.hdr.Zxid):
		c.violate("durability", "client %d's %v %s (session %#x xid %d) was answered at zxid %s, but committed at %s",
			o.client, o.kind, o.path, o.session, o.xid, zx(o.hdr.Zxid), t.Header.Zxid)
	case outcome(t) != o.hdr.Err:
		c.violate("durability", "client %d's %v %s (session %#x xid %d) was answered %v, but its txn %s says %v",
			o.client, o.kind, o.path, o.session, o.xid, o.hdr.Err, t.Header.Zxid, outcome(t))
	}
}

// outcome is the result code a txn stands for.
func outcome(t *txn.Txn) zkproto.Code {
	if e, ok := t.Record.(*txn.Error); ok {
		return zkproto.Code(e.Err)
	}
	return zkproto.CodeOK
}
