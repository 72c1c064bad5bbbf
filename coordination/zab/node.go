package zab

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"keeper/coordination/zxid"
	"keeper/internal/invariants"
)

// Config configures a Node.
type Config struct {
	// ID is this server's id.
	ID PeerID
	// Voters are the participants (server.N lines without :observer),
	// this server included if it is one. Observers receive committed
	// txns and never vote. They are the active configuration, whose
	// version is ConfigVersion and Text ConfigText (Membership).
	Voters        []PeerID
	Observers     []PeerID
	ConfigVersion zxid.ID
	ConfigText    []byte
	// NextConfig is the configuration last seen proposed and not yet
	// active, as persisted (Ready.Config), if any.
	NextConfig *Membership
	// Reconfigs recognises reconfiguration txns and reads configuration
	// texts; nil keeps the configuration fixed (ReconfigCodec).
	Reconfigs ReconfigCodec

	// InitLimitTicks bounds how long a learner may take to connect to and
	// sync with a new leader; SyncLimitTicks how long either side of an
	// established link may stay silent (zoo.cfg initLimit and syncLimit).
	InitLimitTicks int
	SyncLimitTicks int
	// ElectionRetryTicks is how long a looking node waits for news before
	// resending its notifications; it doubles up to ElectionMaxRetryTicks.
	ElectionRetryTicks    int
	ElectionMaxRetryTicks int
	// FinalizeTicks is how long a node whose vote has a quorum waits for a
	// better vote before it decides (Apache ZooKeeper's finalizeWait). It
	// waits only while a voter it has reason to think alive has not voted
	// the same: once every other voter did, or is the leader whose link it
	// just lost, no better vote can come and it decides at once.
	FinalizeTicks int
	// PingTicks is how often a leader pings its learners (Apache ZooKeeper
	// pings every half tickTime); default 1.
	PingTicks int

	// HardState, LastZxid and Recent describe what the node found on disk:
	// its epochs, the last zxid in its log, and the tail of the log (oldest
	// first, ending at LastZxid) it keeps in memory to bring learners up to
	// date with a DIFF. The caller's state machine must have applied every
	// txn up to LastZxid, as Apache ZooKeeper does at start-up.
	HardState HardState
	LastZxid  zxid.ID
	Recent    []Entry
	// MaxRecentEntries bounds the in-memory tail; learners further behind
	// get a snapshot (SNAP).
	MaxRecentEntries int
	// TruncateFloor is the lowest zxid the caller's storage can truncate
	// its log to (Ready.Truncate) and still rebuild the state there: the
	// zxid of its newest snapshot is a safe choice, 0 claims that any
	// point can be reached. A leader that asks for a truncation below the
	// floor (a learner that installed a snapshot from a leader that never
	// got established, then met one with a shorter history) gets a request
	// for a full snapshot instead; the node raises the floor itself when
	// it installs one.
	TruncateFloor zxid.ID
	// StateLost says that the caller started from an empty state in place
	// of data it could not account for (snapshot.trust.empty over a damaged
	// data directory): this member may have acknowledged txns it no longer
	// holds. Until a leader's snapshot (SNAP) gives it a state, it takes no
	// part in elections (it neither votes nor stands, and the others ignore
	// its notifications, as Apache ZooKeeper ignores a member whose zxid is
	// -1), so no quorum counts it; it follows a leader that a quorum of the
	// others settled on and reports no last zxid, which makes that leader
	// send a SNAP. LastZxid must be 0 and Recent empty.
	StateLost bool

	// Rand seeds any randomness; it must not be shared.
	Rand *rand.Rand
}

// Validate reports the first problem in c.
func (c *Config) Validate() error {
	switch {
	case c.ID <= 0:
		return fmt.Errorf("zab: id %d must be positive", c.ID)
	case len(c.Voters) == 0:
		return errors.New("zab: no voters")
	case !slices.Contains(c.Voters, c.ID) && !slices.Contains(c.Observers, c.ID) && c.Reconfigs == nil:
		// With reconfiguration a server may be outside the configuration:
		// removed, it follows without a vote.
		return fmt.Errorf("zab: id %d is neither a voter nor an observer", c.ID)
	case c.NextConfig != nil && c.NextConfig.Version <= c.ConfigVersion:
		return fmt.Errorf("zab: next configuration %s not above the active one %s", c.NextConfig.Version, c.ConfigVersion)
	case c.InitLimitTicks <= 0 || c.SyncLimitTicks <= 0:
		return errors.New("zab: init and sync limits must be positive")
	case c.Rand == nil:
		return errors.New("zab: no Rand")
	case c.StateLost && (c.LastZxid != 0 || len(c.Recent) > 0):
		return fmt.Errorf("zab: a member that lost its state has no log, but its last zxid is %s", c.LastZxid)
	}
	for i := 1; i < len(c.Recent); i++ {
		if c.Recent[i].Zxid <= c.Recent[i-1].Zxid {
			return fmt.Errorf("zab: recent entries out of order at %s", c.Recent[i].Zxid)
		}
	}
	if n := len(c.Recent); n > 0 && c.Recent[n-1].Zxid != c.LastZxid {
		return fmt.Errorf("zab: recent entries end at %s, the log at %s", c.Recent[n-1].Zxid, c.LastZxid)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.ElectionRetryTicks <= 0 {
		c.ElectionRetryTicks = 1
	}
	if c.ElectionMaxRetryTicks < c.ElectionRetryTicks {
		c.ElectionMaxRetryTicks = 32 * c.ElectionRetryTicks
	}
	if c.FinalizeTicks <= 0 {
		c.FinalizeTicks = 1
	}
	if c.PingTicks <= 0 {
		c.PingTicks = 1
	}
	if c.MaxRecentEntries <= 0 {
		c.MaxRecentEntries = 10000
	}
}

// Node is one Zab participant. It is not safe for concurrent use: exactly
// one goroutine, or the simulator, owns it.
type Node struct {
	cfg      Config
	id       PeerID
	observer bool
	role     Role
	leader   PeerID
	serving  bool

	hard HardState

	conf  Membership    // the active configuration
	next  *Membership   // the last seen proposed and not yet active, if any
	codec ReconfigCodec // nil: the configuration never changes

	log       window  // the tail of the log, for DIFF
	floor     zxid.ID // the lowest zxid the caller can truncate to (Config.TruncateFloor)
	fullSync  bool    // ask the next leader for a snapshot: a TRUNC went below floor, or the state was lost
	stateLost bool    // a voter out of elections until a SNAP gives it a state (Config.StateLost)
	committed zxid.ID // highest zxid known committed (handed out as Committed)
	applied   zxid.ID // highest zxid the caller has applied (after Advance)
	durable   zxid.ID // highest zxid the caller has made durable (after Advance)

	elect election
	lead  *leaderState
	learn *learnerState

	stats Stats // running counts for monitoring (Stats)

	ready Ready
	// taken and advanced count the batches handed out by Ready and
	// carried out (Advance); lateTo[p] is the number of the last batch
	// with a message to p in Messages (or a link to p to close), which
	// holds later messages to p out of Early until it is carried out.
	taken, advanced uint64
	lateTo          map[PeerID]uint64
}

// New returns a node that starts looking for a leader.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	n := &Node{
		cfg:       cfg,
		id:        cfg.ID,
		observer:  slices.Contains(cfg.Observers, cfg.ID),
		hard:      cfg.HardState,
		floor:     cfg.TruncateFloor,
		fullSync:  cfg.StateLost,
		stateLost: cfg.StateLost && slices.Contains(cfg.Voters, cfg.ID),
		committed: cfg.LastZxid,
		applied:   cfg.LastZxid,
		durable:   cfg.LastZxid,
		lateTo:    make(map[PeerID]uint64),
		stats:     Stats{LastProposalBytes: -1, MinProposalBytes: -1, MaxProposalBytes: -1},
		conf: Membership{Version: cfg.ConfigVersion, Voters: cfg.Voters, Observers: cfg.Observers,
			Text: cfg.ConfigText}.clone(),
		codec: cfg.Reconfigs,
	}
	if cfg.NextConfig != nil {
		nx := cfg.NextConfig.clone()
		n.next = &nx
	}
	for _, e := range cfg.Recent {
		// The log is durable before the configurations (Ready): a crash
		// between leaves a reconfiguration logged and not noted as seen.
		if m, ok := n.reconfigOf(e); ok && m.Version > n.lastSeen().Version {
			n.next = &m
		}
	}
	n.log.init(cfg.Recent, cfg.LastZxid, cfg.MaxRecentEntries)
	n.becomeLooking()
	return n, nil
}

// ID returns the node's id.
func (n *Node) ID() PeerID { return n.id }

// Role returns what the node is doing now.
func (n *Node) Role() Role { return n.role }

// Leader returns the leader the node follows or is, 0 while looking.
func (n *Node) Leader() PeerID { return n.leader }

// Serving reports whether the node may serve clients: it leads an
// established epoch or has received UPTODATE.
func (n *Node) Serving() bool { return n.serving }

// Epoch returns the node's current epoch.
func (n *Node) Epoch() zxid.Epoch { return n.hard.CurrentEpoch }

// LastZxid returns the last zxid in the node's log (including entries in
// the pending Ready).
func (n *Node) LastZxid() zxid.ID { return n.log.last }

// Committed returns the highest zxid known to be committed.
func (n *Node) Committed() zxid.ID { return n.committed }

// HasReady reports whether Ready has work.
func (n *Node) HasReady() bool { return !n.ready.empty() }

// Ready takes the work accumulated since the last call. The caller must
// carry it out and then call Advance with it. The node may be stepped,
// ticked and asked to propose while the caller persists a batch: that work
// goes into the next one, which the caller takes only after Advance.
func (n *Node) Ready() Ready {
	rd := n.ready
	n.ready = Ready{}
	n.taken++
	return rd
}

// TakeEarly takes the Early messages accumulated since the last Ready or
// TakeEarly, for a caller to send while an earlier batch is still on its
// way to disk.
func (n *Node) TakeEarly() []Message {
	m := n.ready.Early
	n.ready.Early = nil
	return m
}

// Advance tells the node the caller carried out rd: its entries are
// durable and its committed txns applied.
func (n *Node) Advance(rd Ready) {
	n.advanced++
	for p, b := range n.lateTo {
		if b <= n.advanced {
			delete(n.lateTo, p)
		}
	}
	// In the order the caller carried them out: a sync's truncation or
	// snapshot, then the txns that follow it.
	if rd.Truncate != nil {
		n.durable = *rd.Truncate
		n.applied = *rd.Truncate
	}
	if rd.InstallSnapshot {
		n.applied = rd.SnapshotZxid
		n.durable = max(n.durable, rd.SnapshotZxid)
	}
	if k := len(rd.Entries); k > 0 {
		n.durable = max(n.durable, rd.Entries[k-1].Zxid)
	}
	if k := len(rd.Committed); k > 0 {
		n.applied = max(n.applied, rd.Committed[k-1].Zxid)
	}
	n.log.trim(n.applied)
	if n.role == Leading {
		n.leaderAdvanced()
	}
}

// Tick advances the node's clock by one tick.
func (n *Node) Tick() {
	switch n.role {
	case Looking:
		n.tickElection()
	case Leading:
		n.tickLeader()
	default:
		n.tickLearner()
	}
}

// ErrNotLeader means Propose was called on a node that is not serving as
// leader.
var ErrNotLeader = errors.New("zab: not the serving leader")

// NextZxid returns the zxid the next proposal must carry.
func (n *Node) NextZxid() zxid.ID {
	if n.log.last.Epoch() < n.hard.CurrentEpoch {
		return zxid.Make(n.hard.CurrentEpoch, 1)
	}
	return n.log.last + 1
}

// Propose appends a new txn with zxid z (which must be NextZxid) and
// broadcasts it. Only a serving leader proposes.
func (n *Node) Propose(z zxid.ID, data []byte) error {
	if n.role != Leading || !n.serving {
		return ErrNotLeader
	}
	if want := n.NextZxid(); z != want {
		return fmt.Errorf("zab: proposal %s out of order, want %s", z, want)
	}
	if _, ok := n.reconfigOf(Entry{Zxid: z, Data: data}); ok && n.next != nil {
		return ErrReconfigInProgress
	}
	if z.Counter() == 0xffffffff {
		// The counter would overflow into the epoch: a new election
		// starts a new epoch (docs/zookeeper-protocol.md §10.3).
		n.becomeLooking()
		return ErrNotLeader
	}
	n.countProposal(len(data))
	n.leaderPropose(Entry{Zxid: z, Data: data})
	return nil
}

// Step feeds one message into the node. It returns an error for a message
// the node cannot use; the caller logs it and carries on.
func (n *Node) Step(m Message) error {
	if m.To != n.id && m.Type != MsgDisconnected {
		return fmt.Errorf("zab: message for %d delivered to %d", m.To, n.id)
	}
	if m.Type == MsgNotification {
		n.stepNotification(m)
		return nil
	}
	switch n.role {
	case Leading:
		return n.stepLeader(m)
	case Following, Observing:
		return n.stepLearner(m)
	}
	if m.Type == MsgFollowerInfo || m.Type == MsgObserverInfo {
		n.elect.early[m.From] = m // a learner that decided before us
	}
	return nil
}

// send queues a message.
func (n *Node) send(m Message) {
	m.From = n.id
	invariants.Assertf(m.To != n.id, "zab: %d sending %s to itself", n.id, m.Type)
	n.countSent(m)
	if n.mayGoEarly(m) {
		n.ready.Early = append(n.ready.Early, m)
		return
	}
	n.ready.Messages = append(n.ready.Messages, m)
	n.holdLate(m.To)
}

// holdLate keeps later messages to p out of Early until the batch being
// built now is carried out.
func (n *Node) holdLate(p PeerID) { n.lateTo[p] = n.taken + 1 }

// mayGoEarly reports whether m promises nothing the open batch makes
// durable and no message to its peer waits for a batch (Ready.Early).
func (n *Node) mayGoEarly(m Message) bool {
	if n.ready.State != nil || n.ready.Config != nil || !n.serving {
		return false
	}
	if _, held := n.lateTo[m.To]; held {
		return false
	}
	switch n.role {
	case Leading:
		switch m.Type {
		case MsgProposal, MsgCommit, MsgInform, MsgPing, MsgSync, MsgRevalidate:
			return n.lead.established
		}
	case Following, Observing:
		switch m.Type {
		case MsgRequest, MsgSyncRequest, MsgRevalidate, MsgPing:
			return true
		}
	}
	return false
}

// setRole records a role change for the caller.
func (n *Node) setRole(r Role, leader PeerID) {
	n.role, n.leader = r, leader
	n.ready.Role = &RoleChange{Role: r, Leader: leader, Epoch: n.hard.CurrentEpoch, Serving: n.serving}
}

// persist records new epochs for the caller to write before sending.
func (n *Node) persist() {
	hs := n.hard
	n.ready.State = &hs
}

// commitTo hands every entry up to z to the caller as committed, and
// activates the configuration of any reconfiguration among them.
func (n *Node) commitTo(z zxid.ID) {
	if z <= n.committed {
		return
	}
	newly := n.log.between(n.committed, z)
	n.ready.Committed = append(n.ready.Committed, newly...)
	n.committed = z
	for _, e := range newly {
		m, ok := n.reconfigOf(e)
		switch {
		case !ok:
		case n.learn != nil && n.learn.stage == stageSyncing:
			// A sync's commits may come from a leader not yet
			// established, which counts its whole log as committed: the
			// configuration is active once it is (UPTODATE).
			if d := n.learn.deferred; d == nil || d.Version < m.Version {
				n.learn.deferred = &m
			}
		default:
			n.activate(m)
		}
	}
}

// LeaderStats describes a leader's learners for monitoring.
type LeaderStats struct {
	Followers       int // followers connected (any phase)
	SyncedFollowers int // followers in broadcast
	Observers       int // observers connected
	PendingSyncs    int // learners' sync requests waiting for a commit
}

// LeaderStats returns the leader's view of its learners; ok is false on a
// node that does not lead.
func (n *Node) LeaderStats() (st LeaderStats, ok bool) {
	if n.role != Leading || n.lead == nil {
		return st, false
	}
	for _, p := range n.lead.learners {
		switch {
		case p.observer:
			st.Observers++
		case p.phase == phaseUpToDate:
			st.Followers++
			st.SyncedFollowers++
		default:
			st.Followers++
		}
	}
	st.PendingSyncs = len(n.lead.remoteSyncs)
	return st, true
}
