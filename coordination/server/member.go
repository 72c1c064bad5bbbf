package server

import (
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"keeper/coordination/peer"
	"keeper/coordination/snap"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
	"keeper/internal/invariants"
	"keeper/internal/metric"
)

// Member is a server's loop work without the loop: the same methods a
// running Server's select loop dispatches to (driveQuorum or drive,
// finishBatch, stepSnapshot, snapshotFinished, autopurge), on a server
// that has no sockets and starts no goroutines. An ensemble member's
// drives a peer; a standalone one's (MemberConfig.Peer nil) drives its core
// as a standalone server does, through the same persister batches.
// Whoever drives it decides when each hand-off completes: a batch taken to
// disk (MemberConfig.ToDisk, then Persist and Finish; standalone: Queued,
// then PersistQueued and Finish), a snapshot walk's next step, its writer,
// the writer's report, and each step of an autopurge pass (BeginPurge,
// StepPurge, EndPurge; a TRUNC or SNAP batch waits for the pass to end,
// PersistWaits). The simulator (verify/sim) drives one per
// member that way, ordering the hand-offs from its seed. A Member is not
// safe for concurrent use.
type Member struct {
	s      *Server
	purger *purger
	// purge is the autopurge pass in progress (BeginPurge to EndPurge),
	// nil when none is.
	purge *purgeRun
	// writer is the snapshot job whose writer has not run yet; written is
	// its report, waiting for FinishSnapshot.
	writer  *snapshotJob
	written *snapshotResult
}

// MemberConfig builds a Member.
type MemberConfig struct {
	// ID is the member's id.
	ID zab.PeerID
	// Core, Peer and Log are the member's core, the peer that drives it and
	// its log as OpenMemberLog returned it; the peer's log may wrap Log. A
	// nil Peer makes a standalone server, whose Log OpenStandaloneLog
	// returned.
	Core *zkcore.Server
	Peer *peer.Peer
	Log  *MemberLog
	// Clients (standalone) receives the core's client bytes; an ensemble
	// member's peer has its own.
	Clients peer.Clients
	// Writer (standalone) is where batches are appended and synced; nil
	// means Log.
	Writer BatchWriter
	// TickMs is the core's tickTime (zkcore.Config.TickMs).
	TickMs int64
	// Now reads the clock the core runs on.
	Now func() zkcore.Now
	// SnapCount is the member's snapCount; 0 means it takes no snapshots
	// of its own. SnapshotStepNodes is how many nodes one step of a walk
	// encodes (at least 1). SnapRetainCount is autopurge's
	// snapRetainCount (at least MinSnapRetainCount).
	SnapCount, SnapshotStepNodes, SnapRetainCount int
	// Rand draws where each snapCount window ends (snap.Trigger).
	Rand *rand.Rand
	// ToDisk takes a batch to disk: the driver calls Persist with it later
	// and hands the result to Finish. One batch at a time. Not used
	// standalone.
	ToDisk func(zab.Ready)
	// SnapshotStarted, if set, learns the zxid of each snapshot the member
	// starts, before any of its file exists.
	SnapshotStarted func(zxid.ID)
	// Logger receives the member's logs; nil discards them.
	Logger *slog.Logger
}

// memberSnapshotChunks is how many encoded chunks a Member's walk may run
// ahead of its writer, which its driver runs only once the walk has
// ended: more than a simulated tree ever needs.
const memberSnapshotChunks = 1024

// NewMember builds a Member over a recovered core and its log.
func NewMember(cfg MemberConfig) *Member {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	snapCount := cfg.SnapCount
	if snapCount <= 0 {
		snapCount = math.MaxInt32
	}
	now := cfg.Now
	st := *cfg.Log.storage
	st.SnapCount = snapCount
	st.SnapshotStepNodes = max(cfg.SnapshotStepNodes, 1)
	st.SnapRetainCount = cfg.SnapRetainCount
	metrics := metric.NewRegistry()
	s := &Server{
		cfg: Config{Core: zkcore.Config{TickMs: cfg.TickMs, MaxBuffer: cfg.Log.maxRecord - 1024},
			Storage: st, Quorum: &QuorumConfig{MyID: cfg.ID},
			Clock: func() (time.Time, time.Duration) {
				n := now()
				return time.UnixMilli(n.WallMs), time.Duration(n.MonoMs) * time.Millisecond
			}},
		log:      logger,
		core:     cfg.Core,
		stopped:  make(chan struct{}),
		rng:      cfg.Rand,
		trigger:  snap.NewTrigger(snapCount, 0, cfg.Rand),
		snapDone: make(chan snapshotResult, 1),
		metrics:  metrics,
		stm:      newStorageMetrics(metrics),
		zm:       newZabMetrics(metrics),
	}
	m := &Member{s: s}
	s.snapshotChunks = memberSnapshotChunks
	s.spawnWriter = func(job *snapshotJob) { m.writer = job }
	s.snapshotWritten = func(r snapshotResult) { m.written = &r }
	s.snapshotStarted = cfg.SnapshotStarted
	s.walkInOrder = true
	cfg.Log.purgeMu = &s.storageMu
	s.disk = s.newPersister(cfg.Log.log) // its queue, roll flag and batch writing; no goroutine
	if cfg.Peer == nil {
		s.cfg.Quorum = nil
		s.soloLog, s.clientsOut = cfg.Writer, cfg.Clients
		if s.soloLog == nil {
			s.soloLog = cfg.Log
		}
		m.purger = s.newPurger()
		return m
	}
	s.quorum = &quorumState{peer: cfg.Peer, log: cfg.Log, leaderlessSinceMs: 0, handOff: cfg.ToDisk}
	s.quorum.role.Store("")
	s.zm.phases.start(s.now().MonoMs)
	m.purger = s.newPurger()
	return m
}

// Drive is the loop's work after every event: the peer's client bytes,
// new writes and Early messages, a batch to disk (ToDisk) unless one is on
// its way or held (one with nothing to persist or send, peer.ApplyOnly, it
// finishes itself), the role, and a snapshot (with a log roll) when one is
// due.
func (m *Member) Drive() {
	if m.s.quorum == nil {
		m.s.drive() // standalone: writes are queued for the disk (Queued)
		return
	}
	m.s.driveQuorum()
}

// Queued reports whether a standalone member has writes queued for the
// disk: the driver then calls PersistQueued, when the persister would
// take them.
func (m *Member) Queued() bool { return m.s.quorum == nil && m.s.disk.queuedTxns() }

// PersistQueued writes what a standalone member has queued (up to the
// persister's batch bound), as the persister goroutine does: the log roll
// a snapshot asked for, then the txns, synced once. Finish completes it.
func (m *Member) PersistQueued() Batch {
	b, roll, ok, _ := m.s.disk.take()
	if !ok {
		return Batch{}
	}
	return Batch{m.s.persistBatch(b, roll)}
}

// Batch is a batch back from disk, for Finish.
type Batch struct{ p persisted }

// Err is the storage error the batch failed with, nil if it is durable.
func (b Batch) Err() error { return b.p.err }

// Persist writes a batch ToDisk handed over, as the persister goroutine
// does: the log roll a snapshot asked for, then the batch. The driver
// must not call it while PersistWaits(rd) (the storage lock it would
// wait for is held on this very goroutine).
func (m *Member) Persist(rd zab.Ready) Batch {
	invariants.Assertf(!m.PersistWaits(rd), "server: a TRUNC or SNAP batch persisted during an autopurge pass")
	return Batch{m.s.persistBatch(diskBatch{rd: rd}, m.s.disk.takeRoll())}
}

// Finish completes a batch back from disk, as the loop does when the
// persister hands it back; a failed one takes the member out of the
// service for good.
func (m *Member) Finish(b Batch) { m.s.finishBatch(b.p) }

// SnapshotStepReady reports whether a snapshot walk can take its next step.
func (m *Member) SnapshotStepReady() bool { return m.s.snapshotStepReady() }

// StepSnapshot walks the next part of the tree, as the loop does between
// requests while writes go on.
func (m *Member) StepSnapshot() { m.s.stepSnapshot() }

// SnapshotWriterReady reports whether a snapshot job's walk has ended
// (finished or aborted) and its writer has not run.
func (m *Member) SnapshotWriterReady() bool {
	job := m.writer
	return job != nil && (job.walked.Load() || job.aborted.Load())
}

// WriteSnapshot runs the writer of the job whose walk ended: it writes
// the snapshot file (or nothing, for an aborted walk) and keeps the report
// for FinishSnapshot.
func (m *Member) WriteSnapshot() {
	job := m.writer
	m.writer = nil
	m.s.writeSnapshot(job)
}

// SnapshotWritten reports whether a writer's report waits for
// FinishSnapshot.
func (m *Member) SnapshotWritten() bool { return m.written != nil }

// FinishSnapshot hands the writer's report to the loop: the job ends, and
// a TRUNC or SNAP batch held for it goes to disk (ToDisk).
func (m *Member) FinishSnapshot() {
	r := *m.written
	m.written = nil
	m.s.snapshotFinished(r)
}

// Purge runs one autopurge pass at once: BeginPurge, every StepPurge,
// EndPurge.
func (m *Member) Purge() PurgeResult { return m.purger.once() }

// BeginPurge starts an autopurge pass as the purge goroutine does: it
// takes Server.storageMu and decides which files go. StepPurge removes
// them one at a time and EndPurge ends the pass and releases the lock;
// between the steps the driver may run anything but a batch that
// PersistWaits says waits for the lock. One pass at a time.
func (m *Member) BeginPurge() {
	invariants.Assertf(m.purge == nil, "server: an autopurge pass began while one runs")
	m.purge = m.purger.begin()
}

// Purging reports whether an autopurge pass runs (BeginPurge, not yet
// EndPurge).
func (m *Member) Purging() bool { return m.purge != nil }

// StepPurge removes the next file of the pass; it reports false when
// nothing is left to remove (EndPurge comes next).
func (m *Member) StepPurge() bool { return m.purge.step() }

// EndPurge ends the pass: the directories synced, the lock released. It
// returns what the pass removed.
func (m *Member) EndPurge() PurgeResult {
	r := m.purge
	m.purge = nil
	return r.end()
}

// PersistWaits reports whether Persist(rd) would wait, on the persister
// goroutine, for an autopurge pass to end: rd replaces the state (a TRUNC
// or SNAP batch, whose MemberLog.Truncate or InstallSnapshot takes
// Server.storageMu) and the lock is held. The driver then persists rd
// after EndPurge.
func (m *Member) PersistWaits(rd zab.Ready) bool {
	if !replacesState(rd) {
		return false
	}
	if m.s.storageMu.TryLock() {
		m.s.storageMu.Unlock()
		return false
	}
	return true
}
