package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/failpoint"
	"keeper/internal/vfs"
)

// SyncMode is how a leader brings a learner up to date (docs/zookeeper-protocol.md §10.3).
type SyncMode string

// Sync modes.
const (
	SyncDIFF  SyncMode = "DIFF"
	SyncTRUNC SyncMode = "TRUNC"
	SyncSNAP  SyncMode = "SNAP"
)

// FailpointCell is one cell of scenario 3's matrix: a failpoint (package
// internal/failpoint) armed to kill a server while a learner is brought
// up to date in a sync mode.
type FailpointCell struct {
	Point string
	Mode  SyncMode
	// OnLeader arms the point on the leader that syncs the learner
	// instead of on the learner.
	OnLeader bool
}

func (c FailpointCell) String() string { return c.Point + "/" + string(c.Mode) }

// FailpointCells is scenario 3's matrix in the order a sweep visits it:
// the modes take turns, the points most likely to lose data first.
var FailpointCells = []FailpointCell{
	{Point: failpoint.CurrentEpochWritten, Mode: SyncDIFF},
	{Point: failpoint.LearnerTruncated, Mode: SyncTRUNC},
	{Point: failpoint.SnapBeforeRename, Mode: SyncSNAP},
	{Point: failpoint.LogAppendedBeforeFsync, Mode: SyncDIFF},
	{Point: failpoint.CurrentEpochWritten, Mode: SyncTRUNC},
	{Point: failpoint.LearnerSnapWritten, Mode: SyncSNAP},
	{Point: failpoint.LearnerNewLeaderAcked, Mode: SyncDIFF},
	{Point: failpoint.LogAppendedBeforeFsync, Mode: SyncTRUNC},
	{Point: failpoint.LearnerSnapReceived, Mode: SyncSNAP},
	{Point: failpoint.LeaderNewLeaderSent, Mode: SyncDIFF, OnLeader: true},
	{Point: failpoint.LearnerNewLeaderAcked, Mode: SyncTRUNC},
	{Point: failpoint.CurrentEpochWritten, Mode: SyncSNAP},
	{Point: failpoint.LeaderDiffSent, Mode: SyncDIFF, OnLeader: true},
	{Point: failpoint.LeaderTruncSent, Mode: SyncTRUNC, OnLeader: true},
	{Point: failpoint.SnapRenamedBeforeDirSync, Mode: SyncSNAP},
	{Point: failpoint.LeaderSnapSent, Mode: SyncSNAP, OnLeader: true},
	{Point: failpoint.LearnerNewLeaderAcked, Mode: SyncSNAP},
}

// witnesses are the leader's points that tell which sync it chose; a
// cell arms them on the leader with a 1 ms sleep and reads its log.
var witnesses = []struct {
	point string
	mode  SyncMode
}{{failpoint.LeaderTruncSent, SyncTRUNC}, {failpoint.LeaderSnapSent, SyncSNAP}, {failpoint.LeaderDiffSent, SyncDIFF}}

// Timing of a cell.
const (
	fireTimeout     = 6 * time.Second // for the armed point to kill its server
	snapshotTimeout = 6 * time.Second // for the leader to snapshot past the learner (SNAP)
	truncHold       = 1500 * time.Millisecond
	coverTimeout    = 15 * time.Second // for every server to log the txn committed before the sync
)

// FailpointMatrix tallies each cell's outcomes: ok (the point fired, the
// server started again and the ensemble converged with nothing committed
// lost), not-reached (the point did not fire: the sync took another
// path), FAIL (a check broke; the violations say which).
type FailpointMatrix struct {
	mu    sync.Mutex
	order []string
	m     map[string]map[string]int
}

func (fm *FailpointMatrix) add(cell, outcome string) {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	if fm.m == nil {
		fm.m = map[string]map[string]int{}
	}
	if fm.m[cell] == nil {
		fm.m[cell] = map[string]int{}
		fm.order = append(fm.order, cell)
	}
	fm.m[cell][outcome]++
}

// String is the matrix as "point/MODE=ok(2),not-reached(1) ...", cells in
// FailpointCells' order (then any other, in the order first seen).
func (fm *FailpointMatrix) String() string {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	rank := func(c string) int {
		for i, fc := range FailpointCells {
			if fc.String() == c {
				return i
			}
		}
		return len(FailpointCells)
	}
	order := slices.Clone(fm.order)
	slices.SortStableFunc(order, func(a, b string) int { return rank(a) - rank(b) })
	var cells []string
	for _, c := range order {
		var parts []string
		for _, out := range []string{"ok", "not-reached", "FAIL"} {
			if n := fm.m[c][out]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s(%d)", out, n))
			}
		}
		cells = append(cells, c+"="+strings.Join(parts, ","))
	}
	return strings.Join(cells, " ")
}

// Figure reports the matrix as the figure "failpoints".
func (fm *FailpointMatrix) Figure(r *Run) {
	if s := fm.String(); s != "" {
		r.Report.Figure("failpoints", "%s", s)
	}
}

// FailpointSweep returns a fault that runs the next cell of cells (then
// the next of extra, the faults that follow the cells in the sweep) each
// time it is called, starting at a cell the run's seed picks, so that
// short runs cover different cells and a long one all of them.
func FailpointSweep(cells []FailpointCell, fm *FailpointMatrix, extra ...Fault) Fault {
	next := -1
	return func(ctx context.Context, r *Run) {
		n := len(cells) + len(extra)
		if next < 0 {
			next = r.IntN(n)
		}
		i := next % n
		next++
		if i >= len(cells) {
			extra[i-len(cells)](ctx, r)
			return
		}
		runCell(ctx, r, cells[i], fm)
	}
}

// cellRun is one run of a cell.
type cellRun struct {
	r    *Run
	cell FailpointCell
	// learner is brought up to date by leader; target is where the point
	// is armed; down were stopped to force the mode and start again after.
	learner, leader, target *Server
	down                    []*Server
	committed               zxid.ID // committed before the sync: no server may lose it
	marks                   map[*Server]logMark
}

// runCell forces a learner into the cell's sync mode with the point
// armed, waits for the point to kill its server, clears the rule and
// brings everything back, then checks that every server starts, serves,
// and keeps the txn committed before the sync.
func runCell(ctx context.Context, r *Run, cell FailpointCell, fm *FailpointMatrix) {
	l := r.Cluster.Leader()
	if l == nil {
		sleepCtx(ctx, time.Second)
		return
	}
	cr := &cellRun{r: r, cell: cell, marks: map[*Server]logMark{}}
	defer cr.disarm()
	before := r.Report.Violations()
	prepare := map[SyncMode]func(context.Context, *Server) bool{
		SyncDIFF: cr.prepareDIFF, SyncSNAP: cr.prepareSNAP, SyncTRUNC: cr.prepareTRUNC}[cell.Mode]
	if !prepare(ctx, l) {
		cr.bringBack(ctx, false)
		if ctx.Err() == nil {
			fm.add(cell.String(), "not-reached")
		}
		return
	}
	fired := cr.trigger(ctx)
	mode := cr.observedMode()
	cr.disarm()
	cr.bringBack(ctx, fired)
	if ctx.Err() != nil && !fired {
		return
	}
	key := cell.String()
	if fired && mode != "" {
		key = FailpointCell{Point: cell.Point, Mode: mode}.String()
	}
	cr.checkCommitted(ctx)
	outcome := "not-reached"
	switch {
	case r.Report.Violations() > before:
		outcome = "FAIL"
	case fired:
		outcome = "ok"
	}
	fm.add(key, outcome)
	r.Logf("failpoint %s on %s: %s (sync seen: %q)", cell, cr.target.Name, outcome, mode)
}

// prepareDIFF: a follower misses some txns while down, then the leader
// stops too, so that the learner rejoins the other follower in a new
// epoch (and writes currentEpoch) by DIFF.
func (cr *cellRun) prepareDIFF(ctx context.Context, l *Server) bool {
	f, o := cr.pickFollowers(l)
	cr.r.Cluster.Kill(f)
	sleepCtx(ctx, cr.r.Duration(300*time.Millisecond, 700*time.Millisecond))
	cr.committed = committedZxid(cr.r)
	cr.r.Cluster.Kill(l)
	cr.learner, cr.leader, cr.down = f, o, []*Server{l, f}
	cr.r.Fault("failpoint %s: kill -9 %s (follower), %s (leader) after %s; %s syncs %s in a new epoch",
		cr.cell, f.Name, l.Name, cr.committed, o.Name, f.Name)
	return ctx.Err() == nil
}

// prepareSNAP: as prepareDIFF, but the follower stays down until the
// other follower has a snapshot past the follower's log, which then
// restarts so that its in-memory log starts at that snapshot: a learner
// that far behind gets a SNAP.
func (cr *cellRun) prepareSNAP(ctx context.Context, l *Server) bool {
	f, o := cr.pickFollowers(l)
	st, _ := f.Srvr()
	cr.r.Cluster.Kill(f)
	last := lastLoggedFrom(f.DataDir, zxid.ID(st.Zxid))
	err := poll(snapshotTimeout, o.Name+" snapshots past "+f.Name, func() (bool, string, error) {
		_, newest := snapshotCount(o.DataDir)
		return newest > last, fmt.Sprintf("newest snapshot %s, %s logged %s", newest, f.Name, last), ctx.Err()
	})
	cr.learner, cr.leader, cr.down = f, o, []*Server{l, f}
	if err != nil {
		cr.r.Logf("failpoint %s: %v", cr.cell, err)
		return false
	}
	cr.committed = committedZxid(cr.r)
	cr.r.Cluster.Kill(l)
	cr.r.Cluster.Kill(o)
	if err := cr.r.Cluster.Start(o); err != nil {
		cr.r.Report.Violate("restart", "%s did not start again: %v", o.Name, err)
		return false
	}
	cr.r.Fault("failpoint %s: kill -9 %s (follower at %s), %s (leader) after %s; restart %s; %s syncs %s by SNAP",
		cr.cell, f.Name, last, l.Name, cr.committed, o.Name, o.Name, f.Name)
	return ctx.Err() == nil
}

// prepareTRUNC: the leader is cut off while its clients keep writing, so
// that it logs proposals no quorum acknowledges; the others elect a new
// leader and commit without them. The old leader, once healed, must
// truncate them.
func (cr *cellRun) prepareTRUNC(ctx context.Context, l *Server) bool {
	others := cr.r.Cluster.Others(l)
	cr.r.Cluster.Net.Partition([]string{l.Name}, names(others))
	cr.learner = l
	var n *Server
	err := poll(truncHold+5*time.Second, "a new leader without "+l.Name, func() (bool, string, error) {
		for _, s := range others {
			if st, err := s.Srvr(); err == nil && st.Mode == "leader" {
				n = s
			}
		}
		return n != nil, "", ctx.Err()
	})
	if err != nil {
		cr.r.Logf("failpoint %s: %v", cr.cell, err)
		return false
	}
	sleepCtx(ctx, truncHold)
	cr.leader = n
	cr.committed = committedZxid(cr.r)
	cr.r.Fault("failpoint %s: cut leader %s off; %s leads and commits %s; %s must TRUNC",
		cr.cell, l.Name, n.Name, cr.committed, l.Name)
	return ctx.Err() == nil
}

// pickFollowers returns a random follower of l and the other one.
func (cr *cellRun) pickFollowers(l *Server) (*Server, *Server) {
	others := cr.r.Cluster.Others(l)
	i := cr.r.IntN(len(others))
	return others[i], others[1-i]
}

// trigger arms the point and the witnesses, starts the sync (launches the
// learner, or heals the network) and reports whether the point killed its
// server in time.
func (cr *cellRun) trigger(ctx context.Context) bool {
	cr.target = cr.learner
	if cr.cell.OnLeader {
		cr.target = cr.leader
	}
	kill := failpoint.Rule{Name: cr.cell.Point, Action: failpoint.Kill, Count: 1}
	if cr.cell.Point == failpoint.LogAppendedBeforeFsync && cr.cell.Mode != SyncTRUNC {
		kill.After = 1 // the first batch holds the start of the DIFF; the next one, NEWLEADER's
	}
	var watch []string
	for _, w := range witnesses {
		if cr.target != cr.leader || w.point != kill.Name {
			watch = append(watch, failpoint.Rule{Name: w.point, Action: failpoint.Sleep, Sleep: time.Millisecond}.String())
		}
	}
	if cr.target == cr.leader {
		cr.arm(cr.leader, append(watch, kill.String())...)
	} else {
		cr.arm(cr.leader, watch...)
		cr.arm(cr.target, kill.String())
	}
	if cr.cell.Mode == SyncTRUNC {
		cr.r.Cluster.Net.Heal()
	} else if _, err := cr.r.Cluster.Launch(cr.learner); err != nil {
		cr.r.Report.Violate("restart", "%s: %v", cr.learner.Name, err)
		return false
	}
	p := cr.target.Proc()
	timer := time.NewTimer(fireTimeout)
	defer timer.Stop()
	select {
	case <-p.Exited():
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
	if cr.sawFired(cr.target, cr.cell.Point) {
		cr.r.Logf("failpoint %s killed %s", cr.cell.Point, cr.target.Name)
		return true
	}
	cr.r.Report.Violate("crash", "%s exited during the sync of %s without a failpoint (%v):\n%s",
		cr.target.Name, cr.learner.Name, p.ExitErr(), LogTail(p.LogPath, 30))
	return false
}

// arm replaces s's failpoint rules with lines, now if it runs, at its
// next start otherwise, and marks its log.
func (cr *cellRun) arm(s *Server, lines ...string) {
	if err := writeFaultLines(s.FaultsPath(), "failpoint", lines...); err != nil {
		cr.r.Report.Violate("harness", "arm %s: %v", s.Name, err)
		return
	}
	if _, ok := cr.marks[s]; !ok {
		cr.marks[s] = markLog(s)
	}
	p := s.Proc()
	if p == nil || !p.Running() {
		return
	}
	if err := p.ReloadFaults(); err != nil {
		cr.r.Logf("cannot signal %s: %v", s.Name, err)
		return
	}
	err := poll(2*time.Second, s.Name+" loads its faults", func() (bool, string, error) {
		return strings.Contains(cr.logSince(s), "fault rules loaded"), "", nil
	})
	if err != nil {
		cr.r.Logf("%v", err)
	}
}

// disarm clears every rule armed, before any server starts again.
func (cr *cellRun) disarm() {
	for s := range cr.marks {
		if err := writeFaultLines(s.FaultsPath(), "failpoint"); err != nil {
			cr.r.Report.Violate("harness", "disarm %s: %v", s.Name, err)
		}
		if p := s.Proc(); p != nil && p.Running() {
			_ = p.ReloadFaults()
		}
	}
}

// bringBack heals the network and starts every stopped server. After a
// point fired during a DIFF or SNAP it springs the trap of
// ZOOKEEPER-4643/4646 first: the servers still running stop, and the
// killed one starts with the old leader alone, so that a learner whose
// currentEpoch got ahead of its log would win the election and truncate
// the old leader's committed txns. Every server must start and serve.
func (cr *cellRun) bringBack(ctx context.Context, fired bool) {
	r := cr.r
	r.Cluster.Net.Heal()
	var first []*Server
	if fired && cr.cell.Mode != SyncTRUNC {
		for _, s := range r.Cluster.Running() {
			r.Cluster.Kill(s)
		}
		first = append(first, cr.target)
		for _, s := range cr.down {
			if s != cr.target && s != cr.learner {
				first = append(first, s)
			}
		}
		r.Logf("trap: only %s restart", strings.Join(names(first), " and "))
	}
	start := func(group []*Server) {
		var started []*Server
		for _, s := range group {
			if s.Running() {
				continue
			}
			if err := r.Cluster.Start(s); err != nil {
				r.Report.Violate("restart", "no node refuses to start: %s after %s: %v", s.Name, cr.cell, err)
				continue
			}
			started = append(started, s)
		}
		for _, s := range started {
			awaitServing(ctx, r, s, time.Now(), nil)
		}
	}
	start(first)
	start(r.Cluster.Servers)
}

// checkCommitted waits until every server holds the txn committed before
// the sync — logged, or covered by a snapshot taken where its log skips
// it — and reports the servers that lost it (records after it, no
// snapshot between) at once, and those that never got to it.
func (cr *cellRun) checkCommitted(ctx context.Context) {
	if cr.committed == 0 {
		return
	}
	var lost bool
	var last string
	err := poll(coverTimeout, "every server keeps "+cr.committed.String(), func() (bool, string, error) {
		var desc []string
		all := true
		for _, s := range cr.r.Cluster.Servers {
			state := holds(s.DataDir, cr.committed)
			desc = append(desc, s.Name+":"+state)
			all = all && (state == "logged" || state == "snapshot")
			lost = lost || state == "lost"
		}
		last = strings.Join(desc, " ")
		if lost {
			return false, last, errors.New("lost")
		}
		return all, last, ctx.Err()
	})
	if err != nil && (lost || ctx.Err() == nil) {
		cr.r.Report.Violate("failpoint", "after %s, txn %s, committed before the sync, is not kept everywhere: %s",
			cr.cell, cr.committed, last)
	}
}

// holds tells whether dataDir's log holds z ("logged"), skips it under a
// snapshot ("snapshot"), has not reached it ("behind"), or lost it
// ("lost": records after z, and no snapshot between).
func holds(dataDir string, z zxid.ID) string {
	it, err := txnlog.Read(vfs.Default, dataDir, z, txnlog.Config{})
	if err != nil {
		return "unreadable"
	}
	defer it.Close()
	t, err := it.Next()
	next := noZxid
	switch {
	case err == nil && t.Header.Zxid == z:
		return "logged"
	case err == nil:
		next = t.Header.Zxid
	case !errors.Is(err, io.EOF) && !errors.Is(err, txnlog.ErrTorn):
		return "unreadable"
	}
	for _, s := range snapshotZxids(dataDir) {
		if s >= z && s < next {
			return "snapshot"
		}
	}
	if next == noZxid {
		return "behind"
	}
	return "lost"
}

// noZxid stands for "no record after z" in holds.
const noZxid = zxid.ID(1<<63 - 1)

// lastLoggedFrom is the last zxid in dataDir's log, reading from from (a zxid
// the log holds, such as what the server had applied).
func lastLoggedFrom(dataDir string, from zxid.ID) zxid.ID {
	last := from
	it, err := txnlog.Read(vfs.Default, dataDir, from, txnlog.Config{})
	if err != nil {
		return last
	}
	defer it.Close()
	for {
		t, err := it.Next()
		if err != nil {
			return last
		}
		last = t.Header.Zxid
	}
}

// logMark is where a server's log stood when a cell armed it: from run
// number run, offset off on.
type logMark struct {
	run int
	off int64
}

func markLog(s *Server) logMark {
	s.mu.Lock()
	run, running := s.runs, s.proc != nil && s.proc.Running()
	s.mu.Unlock()
	if !running {
		return logMark{run: run + 1}
	}
	fi, err := os.Stat(runLogPath(s, run))
	if err != nil {
		return logMark{run: run}
	}
	return logMark{run: run, off: fi.Size()}
}

func runLogPath(s *Server, run int) string {
	return filepath.Join(s.Dir, fmt.Sprintf("keeper-run%02d.log", run))
}

// logSince returns what s logged since its mark.
func (cr *cellRun) logSince(s *Server) string {
	m, ok := cr.marks[s]
	if !ok {
		return ""
	}
	s.mu.Lock()
	runs := s.runs
	s.mu.Unlock()
	var b strings.Builder
	for run := m.run; run <= runs; run++ {
		data, err := os.ReadFile(runLogPath(s, run))
		if err != nil {
			continue
		}
		if run == m.run && m.off <= int64(len(data)) {
			data = data[m.off:]
		}
		b.Write(data)
	}
	return b.String()
}

// firedLine is how a chaos build of keeper logs a failpoint that fired
// (cmd/keeper/failpoints_chaos.go).
func firedLine(point string) string { return `msg="failpoint fired" name=` + point + " " }

func (cr *cellRun) sawFired(s *Server, point string) bool {
	return strings.Contains(cr.logSince(s), firedLine(point))
}

// observedMode is the sync the leader's witnesses logged, "" if none.
func (cr *cellRun) observedMode() SyncMode {
	log := cr.logSince(cr.leader)
	for _, w := range witnesses {
		if strings.Contains(log, firedLine(w.point)) {
			return w.mode
		}
	}
	return ""
}
