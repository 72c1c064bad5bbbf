package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// CheckReads checks ZooKeeper's read guarantee: a getData, exists or
// getChildren2 answered at zxid z (the server's last applied zxid, which
// the reply header carries) returns exactly the committed state of the
// path after z — data and every Stat field — and z itself is committed:
// no read of a txn that was never committed, none of a partial state.
// Reads are not linearizable in ZooKeeper; monotonicity is
// CheckSessionOrder's.
func CheckReads(h *History, c *Committed, r *Report) int {
	n := 0
	for _, o := range h.Ops() {
		if o.Unknown || (o.Err != zkproto.CodeOK && o.Err != zkproto.CodeNoNode) {
			continue
		}
		switch o.Kind {
		case zkproto.OpGetData, zkproto.OpExists, zkproto.OpGetChildren2:
		default:
			continue
		}
		n++
		z := zxid.ID(o.Zxid)
		if !c.Has(z) {
			r.Violate("reads", "%s read %s on s%d at zxid %v, which is not committed", o.Client, o.Path, o.Server, z)
			continue
		}
		st := c.StateAt(o.Path, z)
		if msg := readMismatch(o, st); msg != "" {
			r.Violate("reads", "%s's %v %s on s%d at zxid %v %s", o.Client, o.Kind, o.Path, o.Server, z, msg)
		}
	}
	return n
}

// readMismatch says how a read's result differs from the committed state.
func readMismatch(o *Op, st pathState) string {
	switch {
	case o.Err == zkproto.CodeNoNode && st.exists:
		return fmt.Sprintf("returned NoNode; the node exists there (since %v)", st.zxid)
	case o.Err == zkproto.CodeNoNode:
		return ""
	case !st.exists:
		return fmt.Sprintf("returned the node; it does not exist there (since %v)", st.zxid)
	case o.Stat != st.stat:
		return fmt.Sprintf("returned stat %+v; committed %+v", o.Stat, st.stat)
	case o.Kind == zkproto.OpGetData && o.Value != st.data:
		return fmt.Sprintf("returned %q; committed %q", o.Value, st.data)
	case o.Kind == zkproto.OpGetChildren2 && int32(len(o.Children)) != st.stat.NumChildren:
		return fmt.Sprintf("returned %d children; committed %d", len(o.Children), st.stat.NumChildren)
	}
	return ""
}

// orderedCodes are the replies whose header zxid is the server's state.
func orderedCode(c zkproto.Code) bool {
	switch c {
	case zkproto.CodeOK, zkproto.CodeNoNode, zkproto.CodeNodeExists, zkproto.CodeBadVersion, zkproto.CodeNotEmpty:
		return true
	}
	return false
}

// CheckSessionOrder checks that the zxids a session sees never go back,
// across all its connections (monotonic reads, read-your-writes): a
// server behind the session must refuse it (CLIENT_ZXID_AHEAD).
func CheckSessionOrder(h *History, r *Report) {
	bySession := map[int64][]*Op{}
	for _, o := range h.Ops() {
		if o.Unknown || o.Session == 0 || !orderedCode(o.Err) || o.Kind == zkproto.OpCloseSession {
			continue
		}
		bySession[o.Session] = append(bySession[o.Session], o)
	}
	for _, ops := range bySession {
		slices.SortFunc(ops, func(a, b *Op) int {
			return cmp.Or(cmp.Compare(a.Conn, b.Conn), cmp.Compare(a.Seq, b.Seq))
		})
		for i := 1; i < len(ops); i++ {
			a, b := ops[i-1], ops[i]
			if b.Zxid < a.Zxid {
				r.Violate("session-order", "session %#x of %s saw zxid %#x (%v %s on s%d, conn %d) after %#x (%v %s on s%d, conn %d)",
					b.Session, b.Client, b.Zxid, b.Kind, b.Path, b.Server, b.Conn, a.Zxid, a.Kind, a.Path, a.Server, a.Conn)
				break
			}
		}
	}
}

// SessionFigures are the session checks' figures.
type SessionFigures struct {
	Expired   int
	ExpiryP50 time.Duration // expiry time after the last sign of life, minus the timeout
	ExpiryP99 time.Duration
}

// CheckSessions checks sessions against the committed history: no reply
// to a session after its close was applied (a resurrected session); no
// session closed by expiry sooner than its timeout less slack after the
// client last heard from it (a premature expiry, which takes ephemerals of
// a live session). slack must cover a follower cut off from the leader
// that answers pings until it notices (syncLimit). A third of the timeout
// is added to it: an idle client pings every third of its timeout, so the
// last touch that reached the leader before such a cut can be that much
// older than the cut itself (a 2 s session heard from a cut-off follower
// 1.1 s into the cut, its last touch at the leader 0.6 s before it, was
// rightly expired 0.3 s after that ping). At least half the timeout is
// used. It reports how long after the timeout expiries came.
func CheckSessions(h *History, c *Committed, r *Report, slack time.Duration) SessionFigures {
	for _, o := range h.Ops() {
		if o.Unknown || o.Err != zkproto.CodeOK || o.Kind == zkproto.OpCloseSession || o.Session == 0 {
			continue
		}
		if t, ok := c.SessionClosed(o.Session); ok && zxid.ID(o.Zxid) >= t.Header.Zxid {
			r.Violate("sessions", "session %#x of %s was answered (%v %s on s%d at zxid %#x) after its close at %v",
				o.Session, o.Client, o.Kind, o.Path, o.Server, o.Zxid, t.Header.Zxid)
		}
	}
	var lat []time.Duration
	var f SessionFigures
	startMs := h.Start().UnixMilli()
	closes := clientCloses(h)
	for _, s := range h.Sessions() {
		t, ok := c.SessionClosed(s.ID)
		if !ok || s.ClosedByClient || (t.Header.Cxid != 0 && closes[reqKey{s.ID, t.Header.Cxid}]) {
			continue
		}
		heardMs := startMs + s.LastHeard/int64(time.Millisecond)
		after := time.Duration(t.Header.Time-heardMs)*time.Millisecond - s.Timeout
		lat = append(lat, after)
		if after >= -max(slack+s.Timeout/3, s.Timeout/2) {
			continue
		}
		r.Violate("sessions", "session %#x of %s (timeout %v) expired at %v, %v after the client last heard from it",
			s.ID, s.Client, s.Timeout, t.Header.Zxid, after+s.Timeout)
	}
	slices.Sort(lat)
	f.Expired = len(lat)
	if len(lat) > 0 {
		f.ExpiryP50 = lat[len(lat)/2]
		f.ExpiryP99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return f
}

// clientCloses are the closeSession requests clients sent, by session
// and xid.
func clientCloses(h *History) map[reqKey]bool {
	out := map[reqKey]bool{}
	for _, o := range h.Ops() {
		if o.Kind == zkproto.OpCloseSession {
			out[reqKey{o.Session, o.Xid}] = true
		}
	}
	return out
}

// CheckSyncReads counts sync-then-read pairs of a session whose read is
// older than a write some client finished before the sync was invoked.
// ZooKeeper does not promise this when a deposed leader that does not know
// it yet answers the sync (sync is not a quorum operation, ZOOKEEPER-1675),
// so it is a figure, and a violation only in scenarios that never leave
// such a leader running (Scenario.StrictSyncReads).
func CheckSyncReads(h *History) (pairs, stale int) {
	ops := h.Ops()
	type done struct {
		ret  int64
		zxid int64
	}
	var writes []done
	for _, o := range ops {
		if o.IsWrite() && !o.Unknown && o.Err == zkproto.CodeOK {
			writes = append(writes, done{o.Return, o.Zxid})
		}
	}
	slices.SortFunc(writes, func(a, b done) int { return cmp.Compare(a.ret, b.ret) })
	best := make([]int64, len(writes)) // highest zxid among writes[:i+1]
	for i, w := range writes {
		best[i] = w.zxid
		if i > 0 {
			best[i] = max(best[i], best[i-1])
		}
	}
	last := map[int64]*Op{} // the previous op of each session
	for _, o := range ops {
		prev := last[o.Session]
		last[o.Session] = o
		if prev == nil || prev.Kind != zkproto.OpSync || prev.Unknown || o.Unknown || o.Kind != zkproto.OpGetData {
			continue
		}
		pairs++
		i, _ := slices.BinarySearchFunc(writes, prev.Call, func(w done, t int64) int { return cmp.Compare(w.ret, t) })
		if i > 0 && o.Zxid < best[i-1] {
			stale++
		}
	}
	return pairs, stale
}
