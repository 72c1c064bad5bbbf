package sim

import (
	"bytes"

	"keeper/coordination/zkproto"
)

// checkReads checks that reads are sequentially consistent: a getData or
// exists answered at zxid z (the server's last applied zxid, which the
// reply header carries) returns exactly the znode's state after the
// committed history's txns up to z — never a txn that was not committed,
// never a partial state. Together with the session checks in checkFIFO
// (a session's zxids never go backwards) this is ZooKeeper's read
// guarantee. Reads are not linearizable in ZooKeeper, so they stay out of
// the porcupine check.
func (c *Cluster) checkReads() {
	f := c.oracle.final
	for _, o := range c.hist.ops {
		if !o.done || (o.kind != zkproto.OpGetData && o.kind != zkproto.OpExists) {
			continue
		}
		z := zx(o.hdr.Zxid)
		if _, ok := f.index[z]; !ok && z != 0 {
			c.violate("reads", "client %d read %s on server %d at zxid %s, which is not in the committed history",
				o.client, o.path, o.server, z)
			continue
		}
		st := f.stateAt(o.path, z)
		var bad bool
		switch o.hdr.Err {
		case zkproto.CodeOK:
			bad = !st.exists || o.stat.Version != st.version || o.stat.EphemeralOwner != st.owner ||
				(o.kind == zkproto.OpGetData && !bytes.Equal(o.data, st.data))
		case zkproto.CodeNoNode:
			bad = st.exists
		default:
			bad = true
		}
		if bad {
			c.violate("reads", "client %d's %v %s on server %d at zxid %s returned %v %q v%d; the committed state there is exists=%v %q v%d (since %s)",
				o.client, o.kind, o.path, o.server, z, o.hdr.Err, o.data, o.stat.Version, st.exists, st.data, st.version, st.zxid)
		}
	}
}
