package sim

import (
	"cmp"
	"slices"

	"keeper/coordination/zkproto"
)

// checkFIFO checks session order: on every connection the replies came in
// the order the requests were sent; on every session the zxids of replies
// never went backwards (a client never sees an older state than it saw,
// even after moving to another server); and the session's acknowledged
// writes were committed in the order they were sent.
func (c *Cluster) checkFIFO() {
	for _, r := range c.hist.conns {
		for i, x := range r.got {
			if i >= len(r.sent) || r.sent[i] != x {
				c.violate("fifo", "client %d, connection %d to server %d: reply %d is for xid %d, but request %d was xid %d (sent %v, got %v)",
					r.client, r.conn, r.server, i, x, i, at32(r.sent, i), tail(r.sent), tail(r.got))
				break
			}
		}
	}
	bySession := map[int64][]*op{}
	for _, o := range c.hist.ops {
		if o.done && o.session != 0 {
			bySession[o.session] = append(bySession[o.session], o)
		}
	}
	ids := make([]int64, 0, len(bySession))
	for id := range bySession {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c.checkSessionOrder(id, bySession[id])
	}
}

// checkSessionOrder checks one session's replies (in the order they were
// sent, which is the order they were received for a session's requests).
func (c *Cluster) checkSessionOrder(id int64, ops []*op) {
	slices.SortFunc(ops, func(a, b *op) int { return cmp.Compare(a.retSeq, b.retSeq) })
	var seen *op // the reply with the highest zxid so far
	var lastWrite *op
	for _, o := range ops {
		z := o.hdr.Zxid
		if seen != nil && z > 0 && z < seen.hdr.Zxid {
			c.violate("fifo", "session %#x: %v (xid %d) reply from server %d carries zxid %s after %v (xid %d) carried %s",
				hex(id), o.kind, o.xid, o.server, zx(z), seen.kind, seen.xid, zx(seen.hdr.Zxid))
		}
		if seen == nil || z > seen.hdr.Zxid {
			seen = o
		}
		if !o.isWrite() || o.hdr.Err == zkproto.CodeSessionExpired {
			continue
		}
		if lastWrite != nil && o.callSeq > lastWrite.callSeq && z <= lastWrite.hdr.Zxid {
			c.violate("fifo", "session %#x: %v (xid %d) committed at %s, before the earlier %v (xid %d) at %s",
				id, o.kind, o.xid, zx(z), lastWrite.kind, lastWrite.xid, zx(lastWrite.hdr.Zxid))
		}
		lastWrite = o
	}
}

func at32(xs []int32, i int) int32 {
	if i < len(xs) {
		return xs[i]
	}
	return 0
}

// tail shortens a list for a message.
func tail(xs []int32) []int32 {
	if len(xs) > 12 {
		return xs[len(xs)-12:]
	}
	return xs
}
