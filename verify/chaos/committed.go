package chaos

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// Committed is the history the servers agree on at the end of a run: the
// union of their txn logs up to the zxid they converged on, checked for
// agreement, and replayed from an empty tree. It is the oracle the
// checkers consult: which requests took effect, the state of every path
// after every zxid, the digest after every txn, and the final tree.
type Committed struct {
	Txns  []*txn.Txn
	Final *datatree.Tree
	// Problems are violations found while reading and replaying: logs
	// that disagree, holes, duplicate requests, ephemerals of dead
	// sessions.
	Problems []string
	// Leftovers counts txns one server logged but a quorum skipped: a cut
	// off leader's uncommitted tail, left below a snapshot it was later
	// synced with (see checkCoverage). They are not in Txns.
	Leftovers int

	index   map[zxid.ID]int
	byReq   map[reqKey]int
	digests []int64
	paths   map[string][]pathState
	changes map[string][]pathChange
	created map[int64]int // session -> index of its createSession
	closed  map[int64]int // session -> index of its (first) closeSession
}

type reqKey struct {
	session int64
	xid     int32
}

// pathState is a path's state after some zxid.
type pathState struct {
	zxid   zxid.ID
	exists bool
	data   string
	stat   zkproto.Stat
}

// pathChange is one watchable change of a path.
type pathChange struct {
	zxid zxid.ID
	typ  zkproto.EventType
}

// logRecord is a txn as one server logged it.
type logRecord struct {
	payload []byte
	server  string
}

// serverLog is one server's log, read up to the converged zxid.
type serverLog struct {
	server      string
	zxids       []zxid.ID
	first, last zxid.ID
}

// ReadCommitted reads the logs in the data directories (server name ->
// dataDir) of the servers that converged at upto and builds the committed
// history.
func ReadCommitted(dataDirs map[string]string, upto zxid.ID) (*Committed, error) {
	c := newCommitted()
	records := map[zxid.ID]logRecord{}
	var logs []serverLog
	names := make([]string, 0, len(dataDirs))
	for name := range dataDirs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sl, err := c.readLog(name, dataDirs[name], upto, records)
		if err != nil {
			return nil, err
		}
		logs = append(logs, sl)
	}
	zxids := make([]zxid.ID, 0, len(records))
	for z := range records {
		zxids = append(zxids, z)
	}
	slices.Sort(zxids)
	if leftovers := c.checkCoverage(logs, zxids, dataDirs); len(leftovers) > 0 {
		zxids = slices.DeleteFunc(zxids, func(z zxid.ID) bool { return leftovers[z] })
		for z := range leftovers {
			delete(records, z)
		}
		c.Leftovers = len(leftovers)
	}
	if err := c.checkContiguous(zxids, upto); err != nil {
		return nil, err
	}
	return c, c.replay(zxids, records)
}

func newCommitted() *Committed {
	return &Committed{index: map[zxid.ID]int{}, byReq: map[reqKey]int{}, paths: map[string][]pathState{},
		changes: map[string][]pathChange{}, created: map[int64]int{}, closed: map[int64]int{}}
}

// committedFrom builds a committed history from txns in zxid order, as if
// every server had logged exactly them.
func committedFrom(txns []*txn.Txn) (*Committed, error) {
	c := newCommitted()
	records := map[zxid.ID]logRecord{}
	var zxids []zxid.ID
	for _, t := range txns {
		records[t.Header.Zxid] = logRecord{payload: txn.Marshal(t), server: "test"}
		zxids = append(zxids, t.Header.Zxid)
	}
	if err := c.checkContiguous(zxids, zxids[len(zxids)-1]); err != nil {
		return nil, err
	}
	return c, c.replay(zxids, records)
}

// readLog reads one server's log into records, noting disagreements.
func (c *Committed) readLog(name, dir string, upto zxid.ID, records map[zxid.ID]logRecord) (serverLog, error) {
	sl := serverLog{server: name}
	it, err := txnlog.Read(vfs.Default, dir, 0, txnlog.Config{})
	if err != nil {
		return sl, fmt.Errorf("chaos: read %s's log: %w", name, err)
	}
	defer it.Close()
	for {
		t, err := it.Next()
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, txnlog.ErrTorn):
			return sl, nil
		case err != nil && len(sl.zxids) > 0 && sl.last >= upto:
			// The server is live and may be appending past upto (a
			// session of an idle client expiring) while we read: a
			// record half-copied into our buffer looks like data after
			// the end. Nothing past upto is judged, so stop here.
			return sl, nil
		case err != nil:
			return sl, fmt.Errorf("chaos: read %s's log: %w", name, err)
		}
		z := t.Header.Zxid
		if z > upto {
			return sl, nil
		}
		if len(sl.zxids) == 0 {
			sl.first = z
		}
		sl.last = z
		sl.zxids = append(sl.zxids, z)
		p := it.Payload()
		if old, ok := records[z]; ok {
			if !bytes.Equal(old.payload, p) {
				c.problem("logs disagree at zxid %v: %s has %s, %s has %s", z, old.server,
					describeTxn(old.payload), name, describeTxn(p))
			}
			continue
		}
		records[z] = logRecord{payload: bytes.Clone(p), server: name}
	}
}

// checkCoverage checks that every log holds every committed zxid in the
// range it covers — logs are prefixes of one history — except for runs a
// snapshot in the same server's directory covers: a follower brought up
// to date by SNAP logs nothing between where it was and the snapshot.
//
// A run that a quorum of servers skip that way (their logs cover both
// sides, no snapshot of theirs covers it) was never committed: it is the
// tail a leader logged and lost when it was cut off, left in its log below
// the snapshot it was later brought up to date with (a learner synced by
// SNAP keeps its old log, as ZooKeeper's does). Those zxids are returned,
// to leave out of the history, and are no problem.
func (c *Committed) checkCoverage(logs []serverLog, zxids []zxid.ID, dataDirs map[string]string) (leftovers map[zxid.ID]bool) {
	type gap struct {
		server   string
		first    zxid.ID
		last     zxid.ID
		from, to zxid.ID // the run
	}
	var gaps []gap
	skippers := map[zxid.ID]int{}
	for _, sl := range logs {
		if len(sl.zxids) == 0 {
			continue
		}
		have := map[zxid.ID]bool{}
		for _, z := range sl.zxids {
			have[z] = true
		}
		snaps := snapshotZxids(dataDirs[sl.server])
		var missing []zxid.ID // the current run of missing zxids
		for _, z := range zxids {
			if z < sl.first || z > sl.last {
				continue
			}
			if !have[z] {
				missing = append(missing, z)
				continue
			}
			if len(missing) > 0 && !slices.ContainsFunc(snaps, func(s zxid.ID) bool { return s >= missing[len(missing)-1] && s < z }) {
				gaps = append(gaps, gap{sl.server, sl.first, sl.last, missing[0], missing[len(missing)-1]})
				for _, m := range missing {
					skippers[m]++
				}
			}
			missing = missing[:0]
		}
	}
	quorum := len(dataDirs)/2 + 1
	leftovers = map[zxid.ID]bool{}
	for z, n := range skippers {
		if n >= quorum {
			leftovers[z] = true
		}
	}
	reported := map[string]bool{}
	for _, g := range gaps {
		if leftovers[g.from] && leftovers[g.to] || reported[g.server] {
			continue
		}
		reported[g.server] = true
		c.problem("%s's log covers %v-%v but lacks %v-%v, which other servers logged, and no snapshot of its covers them",
			g.server, g.first, g.last, g.from, g.to)
	}
	return leftovers
}

// snapshotZxids lists the zxids of the snapshots in a data directory.
func snapshotZxids(dataDir string) []zxid.ID {
	infos, err := snap.List(vfs.Default, filepath.Join(dataDir, txnlog.DirName))
	if err != nil {
		return nil
	}
	out := make([]zxid.ID, len(infos))
	for i, in := range infos {
		out[i] = in.Zxid
	}
	return out
}

// checkContiguous checks that the history starts at the first txn and has
// no holes: within an epoch counters follow one another, and a new epoch
// starts at counter 1.
func (c *Committed) checkContiguous(zxids []zxid.ID, upto zxid.ID) error {
	if len(zxids) == 0 {
		if upto != 0 {
			return fmt.Errorf("chaos: no log holds any txn up to %v", upto)
		}
		return nil
	}
	if zxids[0].Counter() != 1 {
		return fmt.Errorf("chaos: the logs start at %v, not at an epoch's first txn; cannot replay from scratch", zxids[0])
	}
	for i := 1; i < len(zxids); i++ {
		prev, z := zxids[i-1], zxids[i]
		if (z.Epoch() == prev.Epoch() && z.Counter() != prev.Counter()+1) || (z.Epoch() != prev.Epoch() && z.Counter() != 1) {
			c.problem("hole in the committed history: %v follows %v", z, prev)
		}
	}
	if last := zxids[len(zxids)-1]; last != upto {
		c.problem("the logs end at %v but the servers converged at %v", last, upto)
	}
	return nil
}

// replay applies the history to an empty tree and indexes it.
func (c *Committed) replay(zxids []zxid.ID, records map[zxid.ID]logRecord) error {
	tree := datatree.New()
	for i, z := range zxids {
		t, err := txn.Unmarshal(records[z].payload, len(records[z].payload))
		if err != nil {
			return fmt.Errorf("chaos: txn %v does not decode: %w", z, err)
		}
		c.Txns = append(c.Txns, t)
		c.index[z] = i
		c.noteSession(t, i)
		_, changes := tree.Apply(t)
		c.digests = append(c.digests, tree.Digest())
		c.notePaths(tree, z, changes)
	}
	c.Final = tree
	return nil
}

// noteSession indexes requests and sessions, and checks ephemerals
// against their owners' lives.
func (c *Committed) noteSession(t *txn.Txn, i int) {
	h := t.Header
	switch h.Type {
	case zkproto.OpCreateSession:
		c.created[h.ClientID] = i
		return
	case zkproto.OpCloseSession:
		if _, ok := c.closed[h.ClientID]; !ok {
			c.closed[h.ClientID] = i
		}
	}
	if cr, ok := t.Record.(*txn.Create); ok && cr.Ephemeral {
		if _, born := c.created[h.ClientID]; !born {
			c.problem("ephemeral %s created at %v for session %#x, which was never created", cr.Path, h.Zxid, h.ClientID)
		}
		if j, dead := c.closed[h.ClientID]; dead {
			c.problem("ephemeral %s created at %v for session %#x, closed at %v", cr.Path, h.Zxid, h.ClientID, c.Txns[j].Header.Zxid)
		}
	}
	if h.ClientID == 0 || h.Cxid == 0 {
		return
	}
	key := reqKey{h.ClientID, h.Cxid}
	if j, dup := c.byReq[key]; dup {
		c.problem("request xid %d of session %#x committed twice: %v and %v", h.Cxid, h.ClientID, c.Txns[j].Header.Zxid, h.Zxid)
		return
	}
	c.byReq[key] = i
}

// notePaths records the new state of every path a txn changed.
func (c *Committed) notePaths(tree *datatree.Tree, z zxid.ID, changes []datatree.Change) {
	for _, ch := range changes {
		c.changes[ch.Path] = append(c.changes[ch.Path], pathChange{zxid: z, typ: ch.Type})
		st := pathState{zxid: z}
		if n := tree.Node(ch.Path); n != nil {
			st = pathState{zxid: z, exists: true, data: string(n.Data()), stat: n.Stat()}
		}
		hist := c.paths[ch.Path]
		if k := len(hist); k > 0 && hist[k-1].zxid == z {
			hist[k-1] = st
			continue
		}
		c.paths[ch.Path] = append(hist, st)
	}
}

func (c *Committed) problem(format string, args ...any) {
	c.Problems = append(c.Problems, fmt.Sprintf(format, args...))
}

// Last is the last committed zxid (0 for an empty history).
func (c *Committed) Last() zxid.ID {
	if len(c.Txns) == 0 {
		return 0
	}
	return c.Txns[len(c.Txns)-1].Header.Zxid
}

// Has reports whether z is a committed zxid (0, the empty state, is).
func (c *Committed) Has(z zxid.ID) bool {
	_, ok := c.index[z]
	return ok || z == 0
}

// Request returns the txn of a client's request, found by session and xid.
func (c *Committed) Request(session int64, xid int32) (*txn.Txn, bool) {
	i, ok := c.byReq[reqKey{session, xid}]
	if !ok {
		return nil, false
	}
	return c.Txns[i], true
}

// DigestAt returns the tree digest right after z.
func (c *Committed) DigestAt(z zxid.ID) (int64, bool) {
	if z == 0 {
		return datatree.New().Digest(), true
	}
	i, ok := c.index[z]
	if !ok {
		return 0, false
	}
	return c.digests[i], true
}

// StateAt returns path's state once every txn up to z was applied.
func (c *Committed) StateAt(path string, z zxid.ID) pathState {
	hist := c.paths[path]
	i := sort.Search(len(hist), func(i int) bool { return hist[i].zxid > z })
	if i == 0 {
		if n := datatree.New().Node(path); n != nil { // the tree's built-in nodes
			return pathState{exists: true, data: string(n.Data()), stat: n.Stat()}
		}
		return pathState{}
	}
	return hist[i-1]
}

// FirstChange returns the first change after z of path that an event of
// one of types would report.
func (c *Committed) FirstChange(path string, z zxid.ID, types ...zkproto.EventType) (pathChange, bool) {
	hist := c.changes[path]
	i := sort.Search(len(hist), func(i int) bool { return hist[i].zxid > z })
	for ; i < len(hist); i++ {
		if slices.Contains(types, hist[i].typ) {
			return hist[i], true
		}
	}
	return pathChange{}, false
}

// SessionCreated reports whether session's createSession is committed.
func (c *Committed) SessionCreated(session int64) bool {
	_, ok := c.created[session]
	return ok
}

// SessionClosed returns the txn that closed session, if one did.
func (c *Committed) SessionClosed(session int64) (*txn.Txn, bool) {
	i, ok := c.closed[session]
	if !ok {
		return nil, false
	}
	return c.Txns[i], true
}

// describeTxn renders a logged txn for a message.
func describeTxn(payload []byte) string {
	t, err := txn.Unmarshal(payload, len(payload))
	if err != nil {
		return "undecodable: " + err.Error()
	}
	return DescribeTxn(t)
}

// DescribeTxn renders a txn in one line.
func DescribeTxn(t *txn.Txn) string {
	s := t.Header.Type.String()
	switch r := t.Record.(type) {
	case *txn.Create:
		s += fmt.Sprintf(" %s %q eph=%v", r.Path, r.Data, r.Ephemeral)
	case *txn.SetData:
		s += fmt.Sprintf(" %s %q v%d", r.Path, r.Data, r.Version)
	case *txn.Delete:
		s += " " + r.Path
	case *txn.Error:
		s += " " + zkproto.Code(r.Err).String()
	case *txn.CloseSession:
		s += fmt.Sprintf(" %v", r.Paths)
	}
	return fmt.Sprintf("%s (zxid %v session %#x xid %d)", s, t.Header.Zxid, t.Header.ClientID, t.Header.Cxid)
}
