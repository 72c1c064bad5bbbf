package sim

import (
	"errors"
	"math/rand/v2"

	coordserver "keeper/coordination/server"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
)

// Each member runs the production loop's work (coordination/server's
// Member: the methods a server's select loop dispatches to), and the
// simulator plays the goroutines around it, making each hand-off an event
// whose delay is drawn from the seed:
//
//   - the persister: the loop sends the node's Early messages at once,
//     hands one batch at a time to disk (ToDisk), keeps stepping
//     messages, ticks and client requests while it is on its way, and
//     finishes it when it comes back persistDelayMs later; a crash before
//     the event loses the batch, as a crash of the process loses what its
//     persister had not written. Runs whose persistMaxMs is 0 persist each
//     batch at once, on the step that made it.
//   - the snapshotter: every snapCount txns or so the loop rolls the log
//     and starts a fuzzy snapshot; each step of its walk, the writer (run
//     once the walk ends) and the writer's report are events, so writes,
//     TRUNCs and SNAPs go on between them; a TRUNC or SNAP batch taken
//     while a job runs is held until the job ends, as the server holds it.
//   - autopurge, every purgeTicks ticks: a pass plans which files go,
//     then removes them one per event (purgeStepMaxMs apart) and ends,
//     holding the server's storage lock (Server.storageMu) from the plan
//     to the end as the purge goroutine does. A TRUNC or SNAP batch due on
//     disk meanwhile waits for the lock (Member.PersistWaits) and goes to
//     disk when the pass ends, as the persister goroutine, blocked on the
//     lock, does; every other batch, snapshot hand-off, message and tick
//     goes on between the steps.

// maxPersistMs are the bounds a run draws for how long a batch takes to
// come back from disk: 0 (at once, as before), or up to a few ms, or up
// to about a zab tick.
var maxPersistMs = []int64{0, 3, 20, 60}

// snapCounts are the snapCounts a run draws (0: no snapshots of a
// member's own; 3: a job nearly always running, so that TRUNC and SNAP
// batches often come during one and are held), snapStepMaxMs the bounds
// for how long each snapshot hand-off takes, and purgeTicks how often
// autopurge runs (0: never) and purgeStepMaxMs the bounds for how long
// each step of a pass takes.
var (
	snapCounts     = []int{0, 3, 10, 100}
	snapStepMaxMs  = []int64{0, 5, 40, 150}
	purgeTicks     = []int64{0, 7, 30}
	purgeStepMaxMs = []int64{0, 10, 100}
)

// memberParams are a run's draws for the loop's work.
type memberParams struct {
	snapCount      int
	stepNodes      int
	snapStepMaxMs  int64
	purgeTicks     int64
	purgeStepMaxMs int64
}

// drawMemberParams draws them from their own stream of the seed.
func drawMemberParams(seed uint64) memberParams {
	rng := rand.New(rand.NewPCG(seed, 0x5a4e))
	return memberParams{
		snapCount:     snapCounts[rng.IntN(len(snapCounts))],
		stepNodes:     1 + rng.IntN(8),
		snapStepMaxMs: snapStepMaxMs[rng.IntN(len(snapStepMaxMs))],
		purgeTicks:    purgeTicks[rng.IntN(len(purgeTicks))],
		// Drawn last: the draws above stay what they were before it.
		purgeStepMaxMs: purgeStepMaxMs[rng.IntN(len(purgeStepMaxMs))],
	}
}

// newMember wires a started server's peer to the production loop's work.
func (c *Cluster) newMember(s *server) *coordserver.Member {
	inc := s.inc
	cfg := coordserver.MemberConfig{
		ID: s.id, Core: s.core, Peer: s.peer, Log: s.disk.log, TickMs: c.opts.TickMs, Now: s.now,
		SnapCount: c.member.snapCount, SnapshotStepNodes: c.member.stepNodes, SnapRetainCount: coordserver.MinSnapRetainCount,
		Rand:   rand.New(rand.NewPCG(c.opts.Seed^0x5a4e, uint64(s.id)<<32|uint64(inc))),
		Logger: c.opts.Logger.With("server", s.id),
		ToDisk: func(rd zab.Ready) {
			s.inflight = &rd
			s.batchLeader = s.peer.Node().Leader()
			if c.persistMaxMs > 0 {
				delay := c.rng.Int64N(c.persistMaxMs + 1)
				c.schedule(c.nowMs+delay, event{kind: evPersisted, server: int(s.id), inc: inc})
			}
		},
		SnapshotStarted: func(z zxid.ID) { s.snapshotStarted(z) },
	}
	if s.peer == nil {
		// Standalone: the core's client bytes go on the wire, and its
		// batches through the disk (its failpoints, the oracle's notes).
		cfg.ToDisk, cfg.Clients, cfg.Writer = nil, clientSink{c, s.id, inc}, s.disk
	}
	return coordserver.NewMember(cfg)
}

// pump carries out the peer's work after a step, as the server's loop
// does (Member.Drive), and with persistMaxMs 0 writes and finishes each
// batch at once. It reports false when the server crashed.
func (c *Cluster) pump(s *server, now zkcore.Now) bool {
	if s.peer == nil {
		return c.pumpStandalone(s)
	}
	for {
		s.member.Drive()
		if c.persistMaxMs > 0 || s.inflight == nil || s.persistWaits {
			break
		}
		rd := *s.inflight
		s.inflight = nil
		if !c.persist(s, rd) {
			return false
		}
	}
	if err := s.peer.Err(); err != nil {
		s.peer.PumpCore(now) // the connections FailWrites closes
	}
	c.scheduleSnapshotWork(s)
	return true
}

// persist writes a batch and finishes it, as the persister and then the
// loop do. It reports false when the server crashed (a failpoint, or a
// storage error, which is a violation). A batch that waits for an
// autopurge pass stays on its way to disk (persistWaits) until the pass
// ends.
func (c *Cluster) persist(s *server, rd zab.Ready) bool {
	if s.member.PersistWaits(rd) {
		s.inflight, s.persistWaits = &rd, true
		c.stats.PurgeWaits++
		c.tracef("server %d: a batch that replaces the state waits for autopurge", s.id)
		return true
	}
	s.persistWaits = false
	return c.finishBatch(s, s.member.Persist(rd), s.peer.Err)
}

// finishBatch finishes batch b, which the persister wrote, on s's loop;
// failed is the storage error s holds afterwards (its peer's, or a
// standalone core's). It reports false when the server crashed.
func (c *Cluster) finishBatch(s *server, b coordserver.Batch, failed func() error) bool {
	if err := b.Err(); err != nil && (errors.Is(err, errCrash) || s.disk.crashed()) {
		c.crash(s, err.Error())
		return false
	}
	s.member.Finish(b)
	err := failed()
	switch {
	case err == nil && !s.disk.crashed():
		return true
	case errors.Is(err, errCrash) || s.disk.crashed():
		c.crash(s, "crashed while finishing a batch")
		return false
	}
	c.violate("storage", "server %d: %v", s.id, err)
	c.crash(s, "storage error")
	return false
}

// persisted hands a batch back from disk to its server's loop.
func (c *Cluster) persisted(e *event) {
	s := c.servers[e.server]
	if !s.up || s.inc != e.inc || (s.inflight == nil && !s.soloBatch) {
		return
	}
	if s.paused {
		s.hold(e) // a stopped process finishes nothing
		return
	}
	if s.soloBatch {
		s.soloBatch = false
		c.driveFn(s, "persisted", func(zkcore.Now) bool { return c.persistQueued(s) })
		return
	}
	rd := *s.inflight
	s.inflight = nil
	c.driveFn(s, "persisted", func(zkcore.Now) bool { return c.persist(s, rd) })
}

// snapshotStarted records the history a snapshot the member starts at z
// reflects, before any of its file exists: a crash may leave it.
func (s *server) snapshotStarted(z zxid.ID) {
	s.account()
	if s.histZxid != z {
		s.c.violate("snapshot", "server %d starts a snapshot at %s, but its history ends at %s", s.id, z, s.histZxid)
	}
	s.disk.snapHist[z] = append([]zxid.ID(nil), s.hist...)
	s.c.stats.OwnSnapshots++
	s.c.tracef("server %d starts a snapshot at %s", s.id, z)
}

// scheduleSnapshotWork schedules the next hand-off of the member's
// snapshot job, if it has one to make and none is scheduled.
func (c *Cluster) scheduleSnapshotWork(s *server) {
	m := s.member
	if s.snapEvent || !s.up || !(m.SnapshotWritten() || m.SnapshotWriterReady() || m.SnapshotStepReady()) {
		return
	}
	s.snapEvent = true
	delay := c.rng.Int64N(c.member.snapStepMaxMs + 1)
	c.schedule(c.nowMs+delay, event{kind: evSnapshot, server: int(s.id), inc: s.inc})
}

// snapshotWork makes the member's snapshot job's next hand-off: the
// writer's report back to the loop, the writer, or a step of the walk.
func (c *Cluster) snapshotWork(e *event) {
	s := c.servers[e.server]
	if !s.up || s.inc != e.inc {
		return
	}
	if s.paused {
		s.hold(e)
		return
	}
	s.snapEvent = false
	c.driveFn(s, "snapshot", func(zkcore.Now) bool {
		m := s.member
		switch {
		case m.SnapshotWritten():
			m.FinishSnapshot()
		case m.SnapshotWriterReady():
			m.WriteSnapshot()
			return c.survived(s, "writing a snapshot")
		case m.SnapshotStepReady():
			m.StepSnapshot()
		}
		return true
	})
}

// purge starts an autopurge pass on a server, as the purge goroutine's
// ticker does, and schedules the next; a pass still running when it comes
// is left to finish (the goroutine is busy with it).
func (c *Cluster) purge(e *event) {
	s := c.servers[e.server]
	if !s.up || s.inc != e.inc {
		return
	}
	c.schedule(c.nowMs+c.member.purgeTicks*c.opts.TickMs, event{kind: evPurge, server: e.server, inc: e.inc})
	if s.paused || s.member.Purging() {
		return // a stopped process misses its purge; the next one comes
	}
	c.driveFn(s, "purge", func(zkcore.Now) bool {
		s.member.BeginPurge()
		if !c.survived(s, "planning a purge") {
			return false
		}
		c.schedulePurgeStep(s)
		return true
	})
}

// schedulePurgeStep schedules the next step of the server's autopurge
// pass.
func (c *Cluster) schedulePurgeStep(s *server) {
	c.schedule(c.nowMs+c.rng.Int64N(c.member.purgeStepMaxMs+1), event{kind: evPurgeStep, server: int(s.id), inc: s.inc})
}

// purgeStep takes the next step of a server's autopurge pass: one file
// removed, or the pass's end, which lets a batch waiting for it go to
// disk.
func (c *Cluster) purgeStep(e *event) {
	s := c.servers[e.server]
	if !s.up || s.inc != e.inc || !s.member.Purging() {
		return
	}
	if s.paused {
		s.hold(e)
		return
	}
	c.driveFn(s, "purge", func(zkcore.Now) bool {
		if s.member.StepPurge() {
			c.stats.Purged++
			if !c.survived(s, "purging") {
				return false
			}
			c.schedulePurgeStep(s)
			return true
		}
		s.member.EndPurge()
		if !c.survived(s, "ending a purge") {
			return false
		}
		if s.persistWaits {
			// The persister had been waiting for the lock: it writes the
			// batch now.
			c.schedule(c.nowMs, event{kind: evPersisted, server: int(s.id), inc: s.inc})
		}
		return true
	})
}

// survived crashes the server if a failpoint fired in storage work whose
// errors the loop only logs (a snapshot writer, autopurge).
func (c *Cluster) survived(s *server, what string) bool {
	if s.disk.crashed() {
		c.crash(s, "crashed "+what)
		return false
	}
	return true
}
