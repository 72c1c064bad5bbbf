package sim

import (
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"

	"keeper/coordination/peer"
	coordserver "keeper/coordination/server"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
)

// server is one ensemble member across its incarnations: the disk survives
// a crash, the peer does not.
type server struct {
	c    *Cluster
	id   zab.PeerID
	up   bool
	inc  int        // incarnation, bumped at every start
	peer *peer.Peer // nil in a standalone run
	// core is the process's core: its peer's, or a standalone server's.
	core *zkcore.Server
	disk *disk
	// member is the production loop's work around the peer (persister.go);
	// snapEvent is set while an evSnapshot is scheduled for it.
	member    *coordserver.Member
	snapEvent bool
	// inflight is the Zab batch on its way to disk (persister.go), nil
	// when none is; batchLeader is who led when the last batch was taken.
	inflight    *zab.Ready
	batchLeader zab.PeerID
	// persistWaits is set while the inflight batch waits for an autopurge
	// pass to release the storage lock (persister.go).
	persistWaits bool
	// soloBatch is set while a standalone server's batch is on its way
	// to disk (standalone.go).
	soloBatch bool

	// Each process has its own clocks: the wall clock is skewed, the
	// monotonic clock starts anywhere. Both advance with virtual time.
	wallSkewMs int64
	monoBaseMs int64
	// A paused (SIGSTOP) process handles nothing: what arrives is held,
	// in order, until it resumes, and its ticks are lost.
	paused   bool
	held     []*event
	pauseGen uint64 // which pause a resume event ends

	// conns maps the client connections open on this incarnation to their
	// client, and keeps each connection's server-to-client FIFO.
	conns map[zkcore.ConnID]*serverConn

	// hist is the list of zxids the core's tree reflects, in order, up to
	// histZxid: the replica's history as the simulator tracks it.
	hist     []zxid.ID
	histZxid zxid.ID

	// confVersion is the version of the configuration the process has
	// active as far as its store says (reconfig.go).
	confVersion zxid.ID
	// nextSeen is the proposed configuration last traced.
	nextSeen zxid.ID

	// What the role looked like at the last observation, to trace changes.
	role    zab.Role
	leader  zab.PeerID
	serving bool
}

type serverConn struct {
	client   int
	lastAtMs int64
}

func newServer(c *Cluster, id zab.PeerID) *server {
	s := &server{c: c, id: id, wallSkewMs: c.rng.Int64N(1001) - 500, monoBaseMs: c.rng.Int64N(1 << 30)}
	s.disk = newDisk(s)
	return s
}

// now is the time as this server's process sees it.
func (s *server) now() zkcore.Now {
	return zkcore.Now{WallMs: wallEpochMs + s.c.nowMs + s.wallSkewMs, MonoMs: s.monoBaseMs + s.c.nowMs}
}

// start (re)creates the server's process from its disk.
func (c *Cluster) start(s *server) {
	s.inc++
	s.up, s.paused, s.held, s.inflight, s.snapEvent, s.soloBatch = true, false, nil, nil, false, false
	s.persistWaits = false
	c.net.restarted(s.id)
	s.conns = map[zkcore.ConnID]*serverConn{}
	s.monoBaseMs = c.rng.Int64N(1 << 30) // a new process, a new monotonic origin
	now := s.now()
	cfg := zkcore.DefaultConfig()
	cfg.ServerID = int64(s.id)
	cfg.TickMs = c.opts.TickMs
	cfg.MinSessionTimeoutMs = int32(4 * c.opts.TickMs)
	cfg.MaxSessionTimeoutMs = int32(100 * c.opts.TickMs)
	cfg.StartWallMs = now.WallMs
	cfg.Logger = c.opts.Logger.With("server", s.id)
	var rs *reconfigStart
	if c.opts.Reconfig {
		var err error
		if rs, err = c.loadConfig(s, &cfg); err != nil {
			c.violate("recovery", "server %d cannot load its configuration files: %v", s.id, err)
			c.halted, s.up = "recovery", false // no process came up
			return
		}
	}
	zk, err := zkcore.New(cfg)
	if err != nil {
		panic(err) // the configuration above is a constant
	}
	// The production recovery: the newest valid snapshot, a torn tail
	// repaired, the log replayed; data it cannot account for is refused.
	if c.opts.Standalone {
		c.startStandalone(s, zk, cfg, now)
		return
	}
	rec, err := s.disk.open(zk, cfg, c.opts.MaxRecentEntries)
	if err != nil {
		c.violate("recovery", "server %d cannot recover its data: %v", s.id, err)
		c.halted, s.up = "recovery", false // no process came up
		return
	}
	zk.SetMode(zkcore.NotServing, 0, now)
	zcfg := zab.Config{
		ID: s.id, Voters: c.ids,
		HardState: rec.HardState, LastZxid: zk.LastZxid(), Recent: rec.Recent,
		MaxRecentEntries: c.opts.MaxRecentEntries,
		TruncateFloor:    rec.TruncateFloor,
		StateLost:        rec.Lost,
		Rand:             rand.New(rand.NewPCG(c.opts.Seed, uint64(s.id)<<32|uint64(s.inc))),
	}
	// As the server does: initLimit 10 and syncLimit 5 in ticks of TickMs,
	// and the node ticked a few times per tick (zabTickMs).
	zab.TimingFor(c.opts.TickMs, 10, 5).Apply(&zcfg)
	if rs != nil {
		rs.apply(&zcfg)
	}
	node, err := zab.New(zcfg)
	if err != nil {
		c.violate("recovery", "server %d: zab refuses its disk: %v", s.id, err)
		c.halted, s.up = "recovery", false // no process came up
		return
	}
	s.peer = peer.New(node, zk, s.disk, transport{c, s.id, s.inc}, clientSink{c, s.id, s.inc}, cfg.Logger)
	s.core = zk
	if rs != nil {
		// As the server wires a member with reconfigEnabled: the core
		// prepares reconfigs against the node's view, and the peer
		// persists every configuration zab hands out.
		zk.SetEnsemble(s.peer.Ensemble())
		s.peer.SetConfigStore(configStore{s: s, files: rs.files})
		// The node shows the active configuration, whatever reconfig
		// txns the replay applied (coordination/server's startQuorum).
		zk.SetEnsembleConfig(rs.text, int64(rs.version), now)
		s.confVersion = rs.version
	}
	s.member = c.newMember(s)
	s.role, s.leader, s.serving = node.Role(), 0, false
	c.schedule(c.nowMs+1+c.rng.Int64N(c.zabTickMs()), event{kind: evTick, server: int(s.id), inc: s.inc})
	if c.member.purgeTicks > 0 {
		c.schedule(c.nowMs+c.member.purgeTicks*c.opts.TickMs, event{kind: evPurge, server: int(s.id), inc: s.inc})
	}
	c.tracef("server %d starts: epochs %d/%d, state at %s", s.id, rec.HardState.AcceptedEpoch, rec.HardState.CurrentEpoch, zk.LastZxid())
}

// crash kills the server's process: its links fail, its client
// connections break, and its disk keeps only what a power cut would.
func (c *Cluster) crash(s *server, why string) {
	if !s.up {
		return
	}
	s.up = false
	s.peer, s.core, s.member = nil, nil, nil
	s.inflight, s.soloBatch, s.persistWaits = nil, false, false // what the persister had not written is lost
	s.snapEvent = false
	s.paused, s.held = false, nil
	s.disk.crash(c.rng)
	c.stats.Crashes++
	c.tracef("server %d crashes (%s)", s.id, why)
	for _, o := range c.ids {
		if o != s.id {
			c.net.bump(s.id, o)
			c.net.tell(s.id, o)
		}
	}
	for _, id := range sortedConnIDs(s.conns) {
		c.connBroken(s, id)
	}
	s.conns = nil
}

// drive runs fn against the server's process, then carries out the work
// it produced (pump) and observes the replica. A panic in the server halts
// the run with a violation; a failpoint crashes the server.
func (c *Cluster) drive(s *server, what string, fn func(now zkcore.Now)) {
	c.driveFn(s, what, func(now zkcore.Now) bool { fn(now); return true })
}

// driveFn is drive for a step that may crash the server: fn reports false
// when it did.
func (c *Cluster) driveFn(s *server, what string, fn func(now zkcore.Now) bool) {
	if c.halted != "" || !s.up {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			c.violate("panic", "server %d panicked during %s: %v\n%s", s.id, what, r, debug.Stack())
			c.halted = "panic"
		}
	}()
	now := s.now()
	if fn(now) && c.pump(s, now) {
		c.observe(s)
	}
}

// zabTickMs is how often a server ticks its peer, as the server's loop
// does (zab.TimingFor).
func (c *Cluster) zabTickMs() int64 {
	return max(1, zab.TimingFor(c.opts.TickMs, 10, 5).Tick.Milliseconds())
}

// tick lets a zab tick pass on a server and schedules the next one.
func (c *Cluster) tick(e *event) {
	s := c.servers[e.server]
	if !s.up || s.inc != e.inc {
		return
	}
	c.schedule(c.nowMs+c.zabTickMs(), event{kind: evTick, server: e.server, inc: e.inc})
	if s.paused {
		return // a stopped process misses its ticks
	}
	c.drive(s, "tick", func(now zkcore.Now) {
		if s.peer == nil {
			s.core.Tick(now) // standalone: the loop ticks the core
			return
		}
		s.peer.Tick(now)
	})
}

// pause stops a server's process for d ms.
func (c *Cluster) pause(s *server, d int64) {
	s.paused = true
	s.pauseGen++
	c.tracef("server %d paused for %d ms", s.id, d)
	c.schedule(c.nowMs+d, event{kind: evResume, server: int(s.id), inc: s.inc, gen: s.pauseGen})
}

// resume lets a paused server go on: it handles what it was sent while
// stopped, in order, before anything else.
func (c *Cluster) resume(s *server, inc int) {
	if !s.up || s.inc != inc || !s.paused {
		return
	}
	s.paused = false
	c.tracef("server %d resumes (%d events held)", s.id, len(s.held))
	held := s.held
	s.held = nil
	for _, e := range held {
		c.dispatch(e)
	}
}

// observe records what the replica's state machine did since the last
// look: txns applied, its digest, a change of role.
func (c *Cluster) observe(s *server) {
	s.account()
	zk := s.core
	c.oracle.digest(c, s.id, zk.LastZxid(), zk.Tree().Digest())
	if s.peer == nil {
		return // standalone: no role to change
	}
	n := s.peer.Node()
	if n.Role() != s.role || n.Leader() != s.leader || n.Serving() != s.serving {
		s.role, s.leader, s.serving = n.Role(), n.Leader(), n.Serving()
		c.tracef("server %d: %s leader=%d serving=%v epoch=%d last=%s", s.id, s.role, s.leader, s.serving, n.Epoch(), n.LastZxid())
		if s.role == zab.Leading && s.serving {
			c.stats.Elections++
			if l, ok := c.oracle.leaders[n.Epoch()]; ok && l != s.id {
				c.violate("zab", "servers %d and %d both served as leader of epoch %d", l, s.id, n.Epoch())
			}
			c.oracle.leaders[n.Epoch()] = s.id
		}
	}
}

// account adds the txns the core applied since the last look to the
// replica's history. Applied txns are committed ones: the oracle notes them.
func (s *server) account() {
	if s.core == nil {
		return
	}
	z := s.core.LastZxid()
	switch {
	case z > s.histZxid:
		zs := s.disk.takeApplied(s.histZxid, z)
		if len(zs) == 0 || zs[len(zs)-1] != z {
			s.c.violate("history", "server %d applied up to %s, but its log has %v after %s", s.id, z, zs, s.histZxid)
		}
		for _, a := range zs {
			s.c.oracle.noteApplied(s.id, a)
		}
		s.hist = append(s.hist, zs...)
		s.histZxid = z
	case z < s.histZxid:
		s.c.violate("history", "server %d state machine went back from %s to %s without a truncate", s.id, s.histZxid, z)
		s.histZxid = z
	}
}

// setHistory replaces the replica's history after a reload or a snapshot.
func (s *server) setHistory(hist []zxid.ID, z zxid.ID) {
	s.hist, s.histZxid = hist, z
}

// leaderHistory is the history of the snapshot a learner installs at z:
// its leader's, up to z. It takes the history of the leader when the batch
// went to disk, or else of any member whose history reaches z: a batch held
// for a snapshot job may leave when the learner no longer has a leader,
// and histories that share a zxid agree up to it.
func (c *Cluster) leaderHistory(learner *server, z zxid.ID) []zxid.ID {
	if z == 0 {
		return nil
	}
	for _, o := range append([]*server{c.servers[learner.batchLeader]}, c.servers[1:]...) {
		if o == nil {
			continue // no leader when the batch went to disk (servers[0])
		}
		if i, found := slices.BinarySearch(o.hist, z); found {
			return slices.Clone(o.hist[:i+1])
		}
	}
	c.violate("snapshot", "server %d installs a snapshot at %s, but no member's history has such a zxid", learner.id, z)
	return nil
}

func sortedConnIDs(m map[zkcore.ConnID]*serverConn) []zkcore.ConnID {
	out := make([]zkcore.ConnID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func (s *server) String() string { return fmt.Sprintf("server %d", s.id) }
