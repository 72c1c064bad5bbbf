package chaos

import (
	"cmp"
	"slices"
	"strings"

	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// A watch family is what a registration waits for: "data" (getData, or
// exists on an existing node), "exist" (exists on a missing node) or
// "child" (getChildren).
var familyTypes = map[string][]zkproto.EventType{
	"data:":  {zkproto.EventNodeDataChanged, zkproto.EventNodeDeleted, zkproto.EventNodeCreated},
	"exist:": {zkproto.EventNodeCreated},
	"child:": {zkproto.EventNodeChildrenChanged, zkproto.EventNodeDeleted},
}

// watchItem is one thing in a session's stream, in arrival order: a
// registration, a reply, or an event.
type watchItem struct {
	conn int
	seq  int64
	op   *Op       // a reply (and a registration, when reg is set)
	reg  string    // the family+path a read registered
	sw   *Op       // a setWatches, placed at the start of its connection
	ev   *EventRec // an event
}

// pendingWatch is a registration waiting for its event: either the first
// change after from (has tells whether there is one), or, for a watch
// setWatches finds already triggered, an event of type now before the
// setWatches reply.
type pendingWatch struct {
	key    string // family+path
	from   zxid.ID
	change pathChange
	has    bool
	now    zkproto.EventType // 0 unless due at once
	before int64             // the setWatches reply's seq, with now
}

// WatchFigures count what the watch check saw.
type WatchFigures struct {
	Registered, Fired, Events int
}

// CheckWatches checks one-shot watches against the committed history,
// session by session, across reconnects (setWatches):
//
//   - every event answers a pending registration of its kind (no event
//     twice, none unasked);
//   - the event is of the type of the first change after the
//     registration's zxid, and such a change exists;
//   - the event arrives before any reply whose zxid shows that change
//     (a client sees the event before the data), so a watch whose change
//     a later reply reflects and that never fired was missed;
//   - on a new connection only the watches setWatches carried over are
//     pending, and setWatches fires at once (before its reply) those
//     whose node changed after the client's last zxid, as ZooKeeper does:
//     data watches on a deleted node or one modified since, exist watches
//     on a node that now exists, child watches on a deleted node or one
//     whose children changed since.
func CheckWatches(h *History, c *Committed, r *Report) WatchFigures {
	streams := map[int64][]*watchItem{}
	for _, o := range h.Ops() {
		if o.Unknown || o.Session == 0 || !orderedCode(o.Err) {
			continue
		}
		if o.Kind == zkproto.OpSetWatches {
			streams[o.Session] = append(streams[o.Session], &watchItem{conn: o.Conn, seq: 0, sw: o})
		}
		it := &watchItem{conn: o.Conn, seq: o.Seq, op: o}
		if o.Watch {
			it.reg = watchKey(o)
		}
		streams[o.Session] = append(streams[o.Session], it)
	}
	events := h.Events()
	for i := range events {
		e := &events[i]
		streams[e.Session] = append(streams[e.Session], &watchItem{conn: e.Conn, seq: e.Seq, ev: e})
	}
	var f WatchFigures
	f.Events = len(events)
	for _, items := range streams {
		slices.SortStableFunc(items, func(a, b *watchItem) int {
			return cmp.Or(cmp.Compare(a.conn, b.conn), cmp.Compare(a.seq, b.seq))
		})
		checkWatchStream(items, c, r, &f)
	}
	return f
}

// watchKey is the registration a read with a watch made, "" for none.
func watchKey(o *Op) string {
	switch {
	case o.Err == zkproto.CodeOK && o.Kind == zkproto.OpGetChildren2:
		return "child:" + o.Path
	case o.Err == zkproto.CodeOK && (o.Kind == zkproto.OpGetData || o.Kind == zkproto.OpExists):
		return "data:" + o.Path
	case o.Err == zkproto.CodeNoNode && o.Kind == zkproto.OpExists:
		return "exist:" + o.Path
	}
	return ""
}

func checkWatchStream(items []*watchItem, c *Committed, r *Report, f *WatchFigures) {
	var pending []*pendingWatch
	conn := 0
	for _, it := range items {
		if it.conn != conn {
			pending, conn = pending[:0], it.conn // watches die with their connection
		}
		switch {
		case it.ev != nil:
			pending = fireWatches(it.ev, pending, r, f)
		case it.sw != nil:
			for _, key := range it.sw.Watches {
				pending = append(pending, carriedWatch(key, it.sw, c))
				f.Registered++
			}
		default:
			pending = checkLate(it.op, pending, r)
			if it.reg != "" {
				fam, path, _ := strings.Cut(it.reg, ":")
				p := &pendingWatch{key: it.reg, from: zxid.ID(it.op.Zxid)}
				p.change, p.has = c.FirstChange(path, p.from, familyTypes[fam+":"]...)
				pending = append(pending, p)
				f.Registered++
			}
		}
	}
}

// carriedWatch is a watch setWatches registers: due at once if its node
// changed since the client's last zxid (ZooKeeper's rules), otherwise
// waiting for the first change after the server's state then.
func carriedWatch(key string, sw *Op, c *Committed) *pendingWatch {
	fam, path, _ := strings.Cut(key, ":")
	at := zxid.ID(sw.Zxid)
	st := c.StateAt(path, at)
	rel := sw.RelZxid
	p := &pendingWatch{key: key, from: at, before: sw.Seq}
	switch fam {
	case "data":
		switch {
		case !st.exists:
			p.now = zkproto.EventNodeDeleted
		case st.stat.Mzxid > rel:
			p.now = zkproto.EventNodeDataChanged
		}
	case "exist":
		if st.exists {
			p.now = zkproto.EventNodeCreated
		}
	case "child":
		switch {
		case !st.exists:
			p.now = zkproto.EventNodeDeleted
		case st.stat.Pzxid > rel:
			p.now = zkproto.EventNodeChildrenChanged
		}
	}
	if p.now == 0 {
		p.change, p.has = c.FirstChange(path, at, familyTypes[fam+":"]...)
	}
	return p
}

// fireWatches matches an event with the pending registrations it fires.
// setWatches sends one event per carried watch that is due at once (a
// deleted node's data and child watches get a NodeDeleted each), so such
// an event consumes one carried watch; any other event fires every
// pending registration of its path and kind, as the server keeps one
// watch per path, kind and connection.
func fireWatches(e *EventRec, pending []*pendingWatch, r *Report, f *WatchFigures) []*pendingWatch {
	fams := eventFamilies(e.Type)
	matches := func(p *pendingWatch) bool {
		fam, path, _ := strings.Cut(p.key, ":")
		return path == e.Path && slices.Contains(fams, fam+":")
	}
	if i := slices.IndexFunc(pending, func(p *pendingWatch) bool { return p.now == e.Type && matches(p) }); i >= 0 {
		f.Fired++
		return slices.Delete(pending, i, i+1)
	}
	matched := 0
	out := pending[:0]
	for _, p := range pending {
		if !matches(p) {
			out = append(out, p)
			continue
		}
		matched++
		f.Fired++
		switch {
		case p.now != 0:
			r.Violate("watches", "%s got %v %s from setWatches (conn %d); the node's state calls for %v",
				e.Client, e.Type, e.Path, e.Conn, p.now)
		case !p.has:
			r.Violate("watches", "%s got %v %s (conn %d) but nothing changed after the watch's zxid %v",
				e.Client, e.Type, e.Path, e.Conn, p.from)
		case p.change.typ != e.Type:
			r.Violate("watches", "%s got %v %s for a watch from zxid %v; the first change after it is %v at %v",
				e.Client, e.Type, e.Path, p.from, p.change.typ, p.change.zxid)
		}
	}
	if matched == 0 {
		r.Violate("watches", "%s got %v %s (session %#x, conn %d) with no watch pending for it: a duplicate or unasked event",
			e.Client, e.Type, e.Path, e.Session, e.Conn)
	}
	return out
}

// checkLate flags registrations whose event is overdue at reply o: a
// change the reply's zxid reflects, or a setWatches reply that should have
// been preceded by the event.
func checkLate(o *Op, pending []*pendingWatch, r *Report) []*pendingWatch {
	out := pending[:0]
	for _, p := range pending {
		switch {
		case p.now != 0 && o.Seq > p.before:
			r.Violate("watches", "%s's setWatches (conn %d) did not fire %v for %s before its reply",
				o.Client, o.Conn, p.now, p.key)
		case p.now == 0 && p.has && zxid.ID(o.Zxid) >= p.change.zxid:
			r.Violate("watches", "%s's watch %s (from zxid %v) did not fire before a reply at zxid %#x (%v %s on s%d, conn %d) that reflects its change %v at %v",
				o.Client, p.key, p.from, o.Zxid, o.Kind, o.Path, o.Server, o.Conn, p.change.typ, p.change.zxid)
		default:
			out = append(out, p)
			continue
		}
	}
	return out
}
