package admin

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"keeper/coordination/session"
	"keeper/coordination/watch"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
)

// javaDateLayout is java.util.Date.toString's format, which dump uses for
// expiry times.
const javaDateLayout = "Mon Jan 02 15:04:05 MST 2006"

// sessionPaths is one session's ephemeral nodes.
type sessionPaths struct {
	session int64
	paths   []string
}

// dumpData is what dump shows, copied from the core.
type dumpData struct {
	buckets    []session.Bucket
	ephemerals []sessionPaths
	conns      []zkcore.ConnInfo
	nowMonoMs  int64 // the core's monotonic clock at the copy
}

func (a *Admin) gatherDump() (d dumpData, ok bool) {
	ok = a.core.Inspect(func(core *zkcore.Server) {
		tree := core.Tree()
		d.buckets = core.Sessions().Buckets()
		for _, sid := range tree.EphemeralSessions() {
			d.ephemerals = append(d.ephemerals, sessionPaths{session: sid, paths: tree.Ephemerals(sid)})
		}
		d.conns = core.Conns()
	})
	d.nowMonoMs = a.uptime()
	return d, ok
}

// dump renders the 3.8 dump (docs/zookeeper-protocol.md §8.2): the session expiry buckets, the
// ephemerals of each session, and the connections grouped the same way.
//
// ZooKeeper's "Connections dump" lists its connection-expiry queue, which
// keeper does not have; keeper groups connections by their session's
// expiry bucket instead, and puts connections without a session in a
// bucket that expires now.
func (a *Admin) dump() ([]byte, bool) {
	d, ok := a.gatherDump()
	if !ok {
		return nil, false
	}
	var b bytes.Buffer
	b.WriteString("SessionTracker dump:\n")
	sessions := 0
	for _, bk := range d.buckets {
		sessions += len(bk.IDs)
	}
	fmt.Fprintf(&b, "Session Sets (%d)/(%d):\n", len(d.buckets), sessions)
	for _, bk := range d.buckets {
		fmt.Fprintf(&b, "%d expire at %s:\n", len(bk.IDs), a.javaDate(bk.ExpiresAtMs))
		for _, id := range bk.IDs {
			fmt.Fprintf(&b, "\t0x%x\n", uint64(id))
		}
	}
	b.WriteString("ephemeral nodes dump:\n")
	fmt.Fprintf(&b, "Sessions with Ephemerals (%d):\n", len(d.ephemerals))
	for _, e := range d.ephemerals {
		fmt.Fprintf(&b, "0x%x:\n", uint64(e.session))
		for _, p := range e.paths {
			fmt.Fprintf(&b, "\t%s\n", p)
		}
	}
	b.WriteString("Connections dump:\n")
	a.writeConnBuckets(&b, d)
	return b.Bytes(), true
}

// writeConnBuckets writes the connections grouped by expiry time.
func (a *Admin) writeConnBuckets(b *bytes.Buffer, d dumpData) {
	expiry := make(map[int64]int64) // session -> bucket
	for _, bk := range d.buckets {
		for _, id := range bk.IDs {
			expiry[id] = bk.ExpiresAtMs
		}
	}
	groups := make(map[int64][]zkcore.ConnInfo)
	for _, c := range d.conns {
		at, ok := expiry[c.SessionID]
		if !ok {
			at = d.nowMonoMs
		}
		groups[at] = append(groups[at], c)
	}
	times := make([]int64, 0, len(groups))
	for at := range groups {
		times = append(times, at)
	}
	slices.Sort(times)
	fmt.Fprintf(b, "Connections Sets (%d)/(%d):\n", len(groups), len(d.conns))
	for _, at := range times {
		fmt.Fprintf(b, "%d expire at %s:\n", len(groups[at]), a.javaDate(at))
		for _, c := range groups[at] {
			fmt.Fprintf(b, "\tip: /%s sessionId: 0x%x\n", remoteString(c.Remote), uint64(c.SessionID))
		}
	}
}

// javaDate formats a reading of the core's monotonic clock as the wall
// time java.util.Date.toString would show, in the local zone.
func (a *Admin) javaDate(monoMs int64) string {
	return a.wallTime(monoMs).In(time.Local).Format(javaDateLayout)
}

// watchDetail says how much of the watch tables a command needs.
type watchDetail uint8

const (
	watchSummary watchDetail = iota
	watchByConn
	watchByPath
)

// watchData is what wchs, wchc and wchp show: the data-table watches only
// (docs/zookeeper-protocol.md §3.7), keyed by session rather than connection.
type watchData struct {
	conns, paths, total int
	byConn              []watch.ConnWatches
	byPath              []watch.PathWatches
	sessions            map[zkcore.ConnID]int64
}

func (a *Admin) gatherWatches(detail watchDetail) (w watchData, ok bool) {
	ok = a.core.Inspect(func(core *zkcore.Server) {
		m := core.Watches()
		w.conns, w.paths, w.total = m.ConnCount(), m.PathCount(), m.DataWatchCount()
		switch detail {
		case watchByConn:
			w.byConn = m.ByConn()
		case watchByPath:
			w.byPath = m.ByPath()
		}
		if detail != watchSummary {
			w.sessions = sessionOf(core.Conns())
		}
	})
	return w, ok
}

// watchText renders wchs ("<n> connections watching <m> paths" and "Total
// watches:<k>"), wchc (per session: 0x<sid>, then a tab-indented path per
// line) or wchp (per path, then a tab-indented 0x<sid> per line); the last
// two end with a blank line. Sessions and paths come in ascending order,
// where ZooKeeper's follow its hash maps.
func (a *Admin) watchText(detail watchDetail) ([]byte, bool) {
	w, ok := a.gatherWatches(detail)
	if !ok {
		return nil, false
	}
	var b bytes.Buffer
	switch detail {
	case watchSummary:
		fmt.Fprintf(&b, "%d connections watching %d paths\nTotal watches:%d\n", w.conns, w.paths, w.total)
	case watchByConn:
		for _, cw := range w.byConn {
			fmt.Fprintf(&b, "0x%x\n", uint64(w.sessions[cw.Conn]))
			for _, p := range cw.Paths {
				fmt.Fprintf(&b, "\t%s\n", p)
			}
		}
		b.WriteByte('\n')
	case watchByPath:
		for _, pw := range w.byPath {
			fmt.Fprintf(&b, "%s\n", pw.Path)
			for _, c := range pw.Conns {
				fmt.Fprintf(&b, "\t0x%x\n", uint64(w.sessions[c]))
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes(), true
}

// zxidDigest is one entry of the digest log.
type zxidDigest struct {
	zxid   zxid.ID
	digest int64
}

// digests returns the tree digests hash shows. ZooKeeper logs the digest
// every 128 zxids and keeps the last 1024 entries; keeper has no hook on
// every apply, so it shows the current digest only, at the last applied
// zxid.
func (a *Admin) digests() (d []zxidDigest, ok bool) {
	ok = a.core.Inspect(func(core *zkcore.Server) {
		d = []zxidDigest{{zxid: core.LastZxid(), digest: core.Tree().Digest()}}
	})
	return d, ok
}

// hash renders "<zxid hex>: <digest>" lines (docs/zookeeper-protocol.md §8.2).
func (a *Admin) hash() ([]byte, bool) {
	d, ok := a.digests()
	if !ok {
		return nil, false
	}
	var b bytes.Buffer
	for _, e := range d {
		fmt.Fprintf(&b, "%x: %d\n", uint64(e.zxid), e.digest)
	}
	return b.Bytes(), true
}
