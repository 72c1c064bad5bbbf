package sim

import (
	coordserver "keeper/coordination/server"
	"keeper/coordination/zkcore"
)

// A standalone run (Options.Standalone) simulates one standalone server:
// the same Member, loop work and disk path as an ensemble member
// (coordination/server's persister), without Zab. The core prepares
// writes and queues them for the disk as they come; the persister's
// hand-off is an event persistMaxMs away at most, and when it comes the
// batch is everything queued then, written, synced and applied, as the
// persister goroutine and the loop do. Writes queued meanwhile wait for
// the next batch; a crash before the event loses them (none was
// answered). Snapshots, log rolls, autopurge, failpoints and crashes are
// those of an ensemble run.

// startStandalone recovers a standalone server's data as the server does
// at start (coordserver.OpenStandaloneLog) and builds its Member.
func (c *Cluster) startStandalone(s *server, zk *zkcore.Server, cfg zkcore.Config, now zkcore.Now) {
	if err := s.disk.openStandalone(zk, cfg); err != nil {
		c.violate("recovery", "server %d cannot recover its data: %v", s.id, err)
		c.halted, s.up = "recovery", false // no process came up
		return
	}
	zk.RenewSessions(now) // the load's time does not count against sessions
	s.core = zk
	s.member = c.newMember(s)
	c.schedule(c.nowMs+1+c.rng.Int64N(c.zabTickMs()), event{kind: evTick, server: int(s.id), inc: s.inc})
	if c.member.purgeTicks > 0 {
		c.schedule(c.nowMs+c.member.purgeTicks*c.opts.TickMs, event{kind: evPurge, server: int(s.id), inc: s.inc})
	}
	c.tracef("server %d starts standalone: state at %s", s.id, zk.LastZxid())
}

// pumpStandalone carries out a standalone server's work after a step, as
// its loop does (Member.Drive): client bytes at once, writes queued for
// the disk, and a batch to disk when none is on its way; with
// persistMaxMs 0 each batch is written and finished at once. It reports
// false when the server crashed.
func (c *Cluster) pumpStandalone(s *server) bool {
	for {
		s.member.Drive()
		if s.soloBatch || !s.member.Queued() {
			break
		}
		if c.persistMaxMs > 0 {
			s.soloBatch = true
			c.schedule(c.nowMs+c.rng.Int64N(c.persistMaxMs+1), event{kind: evPersisted, server: int(s.id), inc: s.inc})
			break
		}
		if !c.persistQueued(s) {
			return false
		}
	}
	c.scheduleSnapshotWork(s)
	return true
}

// persistQueued writes what a standalone server has queued and finishes
// it, as the persister and then the loop do. It reports false when the
// server crashed (a failpoint, or a storage error, which is a violation).
func (c *Cluster) persistQueued(s *server) bool {
	return c.finishBatch(s, s.member.PersistQueued(), s.core.WritesFailed)
}

// standaloneSettled reports whether the standalone server has nothing on
// its way to disk, no session and no ephemeral znode.
func (s *server) standaloneSettled() bool {
	return !s.soloBatch && !s.member.Queued() && s.core.Sessions().Len() == 0 && s.core.Tree().EphemeralCount() == 0
}

// openStandalone recovers a standalone server's state from its files into
// core, as the server does at start (coordserver.OpenStandaloneLog), and
// sets the replica's history to what the files hold.
func (d *disk) openStandalone(core *zkcore.Server, cfg zkcore.Config) error {
	d.st = coordserver.StorageConfig{FS: d.fs, DataDir: dataDir, PreAllocSizeBytes: preAllocBytes}
	ml, err := coordserver.OpenStandaloneLog(&d.st, core, cfg.MaxBuffer+1024, d.srv.now(), cfg.Logger)
	if err != nil {
		return err
	}
	d.log = ml
	return d.resetHistory(core.LastZxid())
}
