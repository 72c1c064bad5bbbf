package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// Outcomes tallies what happened after each kind of fault, for a figure
// such as "log-bitflip-tail:refused=1,rejoined=2".
type Outcomes struct {
	mu sync.Mutex
	m  map[string]map[string]int
}

func (o *Outcomes) add(kind, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]map[string]int{}
	}
	if o.m[kind] == nil {
		o.m[kind] = map[string]int{}
	}
	o.m[kind][outcome]++
}

// Figure reports the tally under name.
func (o *Outcomes) Figure(r *Run, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var kinds []string
	for k, outs := range o.m {
		var parts []string
		for out, n := range outs {
			parts = append(parts, fmt.Sprintf("%s=%d", out, n))
		}
		sort.Strings(parts)
		kinds = append(kinds, k+":"+strings.Join(parts, ","))
	}
	sort.Strings(kinds)
	if len(kinds) > 0 {
		r.Report.Figure(name, "%s", strings.Join(kinds, ";"))
	}
}

// CorruptAndRestart kills a random server, damages its files with a
// random corruption, and restarts it. The server must either refuse to
// start (then its data is wiped, as an operator would, and it must rejoin
// by a full sync) or start and serve exactly the committed state: the
// digest it serves with is sampled and checked against the history.
//
// The first server's files are never damaged: the checkers read the
// committed history back from the servers' logs, and need one log that
// reaches back to the first txn.
func CorruptAndRestart(corruptions []Corruption, o *Outcomes) Fault {
	return func(ctx context.Context, r *Run) {
		s := r.Cluster.Servers[1+r.IntN(len(r.Cluster.Servers)-1)]
		cor := corruptions[r.IntN(len(corruptions))]
		r.Cluster.Kill(s)
		desc, err := cor.Apply(s.DataDir, r.ClientRand(r.IntN(1<<30)))
		switch {
		case errors.Is(err, ErrNothingToCorrupt):
			o.add(cor.Name, "no-file")
		case err != nil:
			r.Report.Violate("harness", "corrupt %s: %v", s.Name, err)
		default:
			r.Fault("kill -9 %s, %s: %s", s.Name, cor.Name, desc)
		}
		start := time.Now()
		if err := r.Cluster.Start(s); err != nil {
			o.add(cor.Name, "refused")
			r.Logf("%s refused to start: %v", s.Name, firstLine(err))
			if err := WipeData(s.DataDir); err != nil {
				r.Report.Violate("harness", "wipe %s: %v", s.Name, err)
				return
			}
			restart(ctx, r, s, nil)
			return
		}
		o.add(cor.Name, "started")
		awaitServing(ctx, r, s, start, nil)
	}
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// DiskFull makes a random server's disk "full" for hold: its file size
// limit is lowered to its newest log file's size, so the log's next
// preallocation fails (EFBIG, as ENOSPC would). A server whose log
// cannot be written stops taking writes for good (a sticky error), so it
// is restarted with the limit lifted afterwards. The quorum of healthy
// servers must go on committing meanwhile.
func DiskFull(hold time.Duration, o *Outcomes) Fault {
	return func(ctx context.Context, r *Run) {
		s := r.Cluster.Servers[r.IntN(len(r.Cluster.Servers))]
		p := s.Proc()
		before, desc := servingZxid(ctx, r, progressGrace)
		size, err := newestLogSize(s.DataDir)
		if p == nil || err != nil {
			sleepCtx(ctx, hold)
			return
		}
		role := "follower"
		if r.Cluster.Leader() == s {
			role = "leader"
		}
		if err := setFileSizeLimit(p.Pid(), size); err != nil {
			r.Logf("cannot limit %s's file size: %v", s.Name, err)
			sleepCtx(ctx, hold)
			return
		}
		r.Fault("disk full on %s (%s): files capped at %d bytes for %v", s.Name, role, size, hold)
		sleepCtx(ctx, hold)
		after, adesc := servingZxid(ctx, r, progressGrace)
		outcome := progressOutcome(ctx, r, before, after, hold, s.Name+"'s disk was full", desc+"; then "+adesc)
		if !p.Running() {
			outcome += "+exited"
		}
		o.add("disk-full-"+role, outcome)
		r.Cluster.Kill(s)
		restart(ctx, r, s, nil)
	}
}

// progressGrace bounds how long servingZxid waits for a server to answer
// srvr as serving. At either end of a hold an election may be under way:
// a follower that loses its leader looks for syncLimit ticks before it
// votes, and a learner whose election chose a server that went on to
// follow another waits initLimit ticks for it. (Seed 1796049465651719463:
// s1 waited so on s2, s2's full disk then cost the leader s3 its only
// follower, and the hold ended 0.1 s before the next leader served.)
const progressGrace = 3 * time.Second

// progressOutcome judges whether the quorum kept committing while one
// server's disk failed for hold: the committed zxid (srvr, servingZxid)
// before and after. A zxid of 0 means no server answered srvr as serving
// within progressGrace, which says nothing about progress: "unmeasured",
// not a violation; desc, what the servers answered, goes to the log.
func progressOutcome(ctx context.Context, r *Run, before, after zxid.ID, hold time.Duration, what, desc string) string {
	switch {
	case before == 0 || after == 0:
		r.Logf("progress unmeasured while %s: no server served within %v: %s", what, progressGrace, desc)
		return "unmeasured"
	case after > before:
		return "quorum-committed"
	}
	if hold >= 4*time.Second && ctx.Err() == nil {
		r.Report.Violate("liveness", "nothing committed for %v while only %s (zxid %v)", hold, what, after)
	}
	return "stalled"
}

// committedZxid is the highest zxid a serving server reports now (0 if
// none does at this moment; servingZxid waits for one).
func committedZxid(r *Run) zxid.ID {
	got, _ := r.Cluster.modes()
	var z zxid.ID
	for _, st := range got {
		if st.Mode != "" && zxid.ID(st.Zxid) > z {
			z = zxid.ID(st.Zxid)
		}
	}
	return z
}

// servingZxid asks every running server for srvr until one answers as a
// leader, follower or observer (not read-only: its zxid may be stale), for
// up to wait, and returns the highest zxid such a server reports and what
// the servers answered last. The zxid is 0 if none served in time.
func servingZxid(ctx context.Context, r *Run, wait time.Duration) (zxid.ID, string) {
	var z zxid.ID
	var desc string
	_ = poll(wait, "a serving server", func() (bool, string, error) {
		var got map[int]Srvr
		got, desc = r.Cluster.modes()
		z = 0
		for _, st := range got {
			if st.Mode == "leader" || st.Mode == "follower" || st.Mode == "observer" {
				z = max(z, zxid.ID(st.Zxid))
			}
		}
		return z != 0, desc, ctx.Err()
	})
	return z, desc
}

// newestLogSize is the size of the newest log file in dataDir.
func newestLogSize(dataDir string) (int64, error) {
	files, err := txnlog.Files(vfs.Default, dataDir)
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("no log file: %v", err)
	}
	fi, err := os.Stat(files[len(files)-1].Path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// snapshotCount returns how many snapshot files dataDir holds and the
// newest one's zxid.
func snapshotCount(dataDir string) (int, zxid.ID) {
	infos, err := snap.List(vfs.Default, filepath.Join(dataDir, txnlog.DirName))
	if err != nil || len(infos) == 0 {
		return 0, 0
	}
	return len(infos), infos[0].Zxid
}

// KillDuringSync crashes servers while a follower recovers and syncs
// with the leader (the learner-sync durability points of ZOOKEEPER-3911,
// 4643, 4646, 4685, 2872, hit at random moments instead of failpoints):
// a follower is killed, writes go on, it is started again and killed
// once more a random moment into its recovery and sync — or the leader
// is killed then instead — and finally it is started for good. No
// committed txn may be lost, and every server must start.
func KillDuringSync(window time.Duration, o *Outcomes) Fault {
	return func(ctx context.Context, r *Run) {
		l := r.Cluster.Leader()
		if l == nil {
			sleepCtx(ctx, time.Second)
			return
		}
		others := r.Cluster.Others(l)
		f := others[r.IntN(len(others))]
		r.Cluster.Kill(f)
		sleepCtx(ctx, r.Duration(500*time.Millisecond, 1500*time.Millisecond))
		if _, err := r.Cluster.Launch(f); err != nil {
			r.Report.Violate("restart", "%s: %v", f.Name, err)
			return
		}
		at := r.Duration(0, window)
		sleepCtx(ctx, at)
		victim, kind := f, "follower"
		if r.IntN(3) == 0 {
			victim, kind = l, "leader"
		}
		r.Cluster.Kill(victim)
		r.Fault("kill -9 %s (%s) %v into %s's recovery and sync", victim.Name, kind, at.Round(time.Millisecond), f.Name)
		o.add("kill-"+kind+"-during-sync", "ok")
		sleepCtx(ctx, r.Duration(200*time.Millisecond, time.Second))
		for _, s := range []*Server{f, l} {
			if !s.Running() {
				restart(ctx, r, s, nil)
			} else {
				r.Sample(s)
			}
		}
	}
}

// LagUntilSnap cuts a follower off the quorum until the leader has
// committed more than minTxns since (more than the leader keeps in
// memory for a DIFF, so the follower must be brought up to date by SNAP)
// or maxHold passes, then heals and times the catch-up. A new snapshot
// file in the follower's data directory shows the SNAP.
func LagUntilSnap(minTxns uint32, maxHold time.Duration, o *Outcomes, catchUp *Durations) Fault {
	return func(ctx context.Context, r *Run) {
		l := r.Cluster.Leader()
		if l == nil {
			sleepCtx(ctx, time.Second)
			return
		}
		others := r.Cluster.Others(l)
		f := others[r.IntN(len(others))]
		start, _ := l.Srvr()
		snaps, _ := snapshotCount(f.DataDir)
		r.Cluster.Net.Partition([]string{f.Name}, names(r.Cluster.Others(f)))
		r.Fault("cut follower %s off until the leader is %d txns ahead (at most %v)", f.Name, minTxns, maxHold)
		deadline := time.Now().Add(maxHold)
		var ahead uint32
		for ctx.Err() == nil && time.Now().Before(deadline) {
			st, err := l.Srvr()
			if err == nil {
				ahead = zxid.ID(st.Zxid).Counter() - zxid.ID(start.Zxid).Counter()
				if zxid.ID(st.Zxid).Epoch() != zxid.ID(start.Zxid).Epoch() || ahead >= minTxns {
					break
				}
			}
			sleepCtx(ctx, 100*time.Millisecond)
		}
		r.Cluster.Net.Heal()
		healed := time.Now()
		r.Logf("healed %s, %d txns behind", f.Name, ahead)
		err := poll(healTimeout, f.Name+" caught up", func() (bool, string, error) {
			fs, err1 := f.Srvr()
			ls, err2 := l.Srvr()
			return err1 == nil && err2 == nil && fs.Mode == "follower" && fs.Zxid >= ls.Zxid-int64(minTxns/4),
				fmt.Sprintf("%s:%+v %s:%+v", f.Name, fs, l.Name, ls), ctx.Err()
		})
		if err != nil {
			if ctx.Err() == nil {
				r.Report.Violate("liveness", "%v", err)
			}
			return
		}
		r.Sample(f)
		after, newest := snapshotCount(f.DataDir)
		mode := "diff"
		if after > snaps {
			mode = "snap"
		}
		o.add("sync", mode)
		catchUp.add(time.Since(healed))
		r.Logf("%s caught up in %v by %s (newest snapshot %v)", f.Name, time.Since(healed).Round(time.Millisecond), mode, newest)
	}
}

// SyncEIO makes every fsync of one server's files fail with EIO (an errorfs
// rule loaded through its fault file, which a chaos build of keeper reads
// on SIGUSR1) for hold, under the leader or a follower. The server must
// leave the service (srvr: not serving) instead of serving data it could
// not log, and the others must go on committing; then the rule is lifted
// and the server restarted, to rejoin.
func SyncEIO(hold time.Duration, o *Outcomes) Fault {
	return func(ctx context.Context, r *Run) {
		s := r.Cluster.Servers[r.IntN(len(r.Cluster.Servers))]
		p := s.Proc()
		if p == nil || !p.Running() {
			sleepCtx(ctx, hold)
			return
		}
		before, desc := servingZxid(ctx, r, progressGrace)
		role := "follower"
		if r.Cluster.Leader() == s {
			role = "leader"
		}
		if err := writeFaultLines(s.FaultsPath(), "", "ops=anysync err=EIO"); err != nil {
			r.Logf("cannot write %s's fault file: %v", s.Name, err)
			sleepCtx(ctx, hold)
			return
		}
		if err := p.ReloadFaults(); err != nil {
			r.Logf("cannot signal %s: %v", s.Name, err)
		}
		r.Fault("fsync EIO on %s (%s) for %v", s.Name, role, hold)
		sleepCtx(ctx, hold)
		after, adesc := servingZxid(ctx, r, progressGrace)
		outcome := progressOutcome(ctx, r, before, after, hold, s.Name+"'s fsyncs failed", desc+"; then "+adesc)
		got, _ := r.Cluster.modes()
		if st, ok := got[s.ID]; ok && st.Mode != "" && after > before {
			outcome += "+still-serving"
			r.Report.Violate("disk", "%s still serves as %s after its fsyncs failed", s.Name, st.Mode)
		}
		o.add("fsync-eio-"+role, outcome)
		if err := writeFaultLines(s.FaultsPath(), ""); err != nil {
			r.Logf("cannot clear %s's fault file: %v", s.Name, err)
		}
		r.Cluster.Kill(s)
		restart(ctx, r, s, nil)
	}
}

// faultHooks are the first words that route a fault-file line to a hook
// of its own rather than to errorfs (cmd/keeper/faults_chaos.go).
var faultHooks = []string{"clock", "failpoint"}

// faultFileMu serializes the read-modify-write of fault files.
var faultFileMu sync.Mutex

// writeFaultLines replaces the lines of the fault file at path that belong
// to one hook — those whose first word is hook ("clock", "failpoint"), or
// with hook "" the errorfs rules, every line no hook claims — with lines,
// and keeps the other hooks' lines. A running server loads the file on
// Process.ReloadFaults.
func writeFaultLines(path, hook string, lines ...string) error {
	faultFileMu.Lock()
	defer faultFileMu.Unlock()
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var keep []string
	for _, line := range strings.Split(string(old), "\n") {
		word, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		owner := word
		if !slices.Contains(faultHooks, word) {
			owner = ""
		}
		if strings.TrimSpace(line) != "" && owner != hook {
			keep = append(keep, line)
		}
	}
	text := strings.Join(append(keep, lines...), "\n")
	if text != "" {
		text += "\n"
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
