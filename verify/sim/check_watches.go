package sim

import (
	"cmp"
	"slices"

	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// checkWatches checks ZooKeeper's watch guarantees on every connection,
// against the final history. A getData (of an existing node) or exists with
// watch set, answered at zxid z, arms a one-shot watch on its path; the
// first committed change to the path after z fires it. The client must
// receive that event — of the right type — before any reply that reflects
// the change (a reply at a zxid at or past it), and must receive no event
// for a path it has no armed watch on (an event fires once).
func (c *Cluster) checkWatches() {
	byConn := map[zkcore.ConnID][]watchItem{}
	for _, o := range c.hist.ops {
		if o.done {
			byConn[o.conn] = append(byConn[o.conn], watchItem{seq: o.retSeq, reply: o})
		}
	}
	for i := range c.hist.events {
		ev := &c.hist.events[i]
		byConn[ev.conn] = append(byConn[ev.conn], watchItem{seq: ev.seq, event: ev})
	}
	ids := make([]zkcore.ConnID, 0, len(byConn))
	for id := range byConn {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		items := byConn[id]
		slices.SortFunc(items, func(a, b watchItem) int { return cmp.Compare(a.seq, b.seq) })
		c.checkConnWatches(id, items)
	}
}

// watchItem is a reply or an event, in the order a connection received them.
type watchItem struct {
	seq   uint64
	reply *op
	event *watchEvent
}

// checkConnWatches replays one connection: armed watches by path, with the
// zxid each was armed at.
func (c *Cluster) checkConnWatches(id zkcore.ConnID, items []watchItem) {
	f := c.oracle.final
	armed := map[string]zxid.ID{}
	for _, it := range items {
		if ev := it.event; ev != nil {
			z, ok := armed[ev.path]
			if !ok {
				c.violate("watches", "connection %d got %v for %s with no watch armed on it", id, ev.typ, ev.path)
				continue
			}
			delete(armed, ev.path)
			if want, ok := f.trigger(ev.path, z); !ok || want != ev.typ {
				c.violate("watches", "connection %d got %v for %s (watch armed at %s); the first change after it is %v",
					id, ev.typ, ev.path, z, want)
			}
			continue
		}
		o := it.reply
		z := zx(o.hdr.Zxid)
		for _, p := range sortedKeys(armed) {
			if w, ok := f.changeAfter(p, armed[p]); ok && z >= w {
				c.violate("watches", "connection %d: %v reply at %s came before the event of the change to %s at %s (watch armed at %s)",
					id, o.kind, z, p, w, armed[p])
				delete(armed, p)
			}
		}
		if arms(o) {
			if _, ok := armed[o.path]; !ok {
				armed[o.path] = z
			}
		}
	}
}

// arms reports whether a reply left a data watch on the server.
func arms(o *op) bool {
	if !o.watch {
		return false
	}
	switch o.kind {
	case zkproto.OpGetData:
		return o.hdr.Err == zkproto.CodeOK
	case zkproto.OpExists:
		return o.hdr.Err == zkproto.CodeOK || o.hdr.Err == zkproto.CodeNoNode
	}
	return false
}

// changeAfter returns the zxid of the first committed change to path after z.
func (f *finalHistory) changeAfter(path string, z zxid.ID) (zxid.ID, bool) {
	hist := f.paths[path]
	i, _ := slices.BinarySearchFunc(hist, z+1, func(s pathState, t zxid.ID) int { return cmp.Compare(s.zxid, t) })
	if i == len(hist) {
		return 0, false
	}
	return hist[i].zxid, true
}

// trigger returns the event the first committed change to path after z
// fires.
func (f *finalHistory) trigger(path string, z zxid.ID) (zkproto.EventType, bool) {
	w, ok := f.changeAfter(path, z)
	if !ok {
		return 0, false
	}
	before, after := f.stateAt(path, w-1), f.stateAt(path, w)
	switch {
	case !before.exists && after.exists:
		return zkproto.EventNodeCreated, true
	case before.exists && !after.exists:
		return zkproto.EventNodeDeleted, true
	}
	return zkproto.EventNodeDataChanged, true
}

func sortedKeys(m map[string]zxid.ID) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
