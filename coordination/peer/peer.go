// Package peer runs one server of a ZooKeeper ensemble: it drives a
// zab.Node and the zkcore together, persisting the replicated log
// before it sends what promises durability, applying what is committed,
// forwarding learners' writes to the leader and bringing the core's mode
// (leader, learner, not serving) in line with Zab's.
//
// A Peer is not safe for concurrent use: the server's loop, or the
// simulator, owns it. It does no I/O of its own: the log, the links to
// other servers and the client connections come in through the interfaces
// below, so the simulator can run whole ensembles in virtual time.
package peer

import (
	"bytes"
	"fmt"
	"log/slog"

	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
	"keeper/internal/failpoint"
)

// Log is the durable replicated log and the epoch files.
type Log interface {
	// SaveState writes acceptedEpoch and currentEpoch durably.
	SaveState(zab.HardState) error
	// Append adds txns (payloads are txn records); Sync makes them durable.
	Append([]zab.Entry) error
	Sync() error
	// Truncate removes every txn after z, and any snapshot above z, so
	// that Reload rebuilds the state at exactly z; when the storage cannot
	// give that state it returns an error and changes nothing.
	Truncate(z zxid.ID) error
	// InstallSnapshot makes snapshot (taken at z) the durable state: the
	// log restarts after z.
	InstallSnapshot(z zxid.ID, tree *datatree.Tree, sessions []zkcore.SessionState) error
	// Reload rebuilds the state from what is durable (the newest snapshot
	// and every txn logged after it), as at start-up.
	Reload() (*datatree.Tree, []zkcore.SessionState, error)
}

// Transport carries messages to other servers.
type Transport interface {
	Send([]zab.Message)
	Disconnect(zab.PeerID)
}

// Clients delivers bytes to client connections.
type Clients interface {
	Send(zkcore.Send)
}

// Peer is one server of an ensemble.
type Peer struct {
	id      zab.PeerID
	node    *zab.Node
	zk      *zkcore.Server
	log     Log
	tr      Transport
	clients Clients
	logger  *slog.Logger
	maxBuf  int

	// writeErr is the first storage error: the peer stops, since the disk's
	// state is unknown and a retry could report as durable what is not
	// (docs/storage-recovery.md, "The durable-log rules").
	writeErr error
	// configs stores the configurations zab hands out (SetConfigStore).
	configs ConfigStore
	// lat times txns for the quorum latencies (SetMetrics); nil measures
	// nothing.
	lat *latencies
}

// ConfigStore makes zab's configurations durable (Ready.Config): the
// server's ConfigFiles, ZooKeeper's files beside zoo.cfg.
type ConfigStore interface {
	SaveConfig(zab.ConfigState) error
}

// SetConfigStore gives the peer where to persist configurations; without
// one, a batch that carries any fails (a node without a ReconfigCodec
// never hands one out).
func (p *Peer) SetConfigStore(cs ConfigStore) { p.configs = cs }

// New returns a peer over a node and a core restored from the log.
func New(node *zab.Node, zk *zkcore.Server, log Log, tr Transport, clients Clients, logger *slog.Logger) *Peer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Peer{id: node.ID(), node: node, zk: zk, log: log, tr: tr, clients: clients, logger: logger,
		maxBuf: jute.DefaultMaxBuffer + 1024}
}

// Node returns the Zab node.
func (p *Peer) Node() *zab.Node { return p.node }

// Core returns the service core.
func (p *Peer) Core() *zkcore.Server { return p.zk }

// Err returns the storage error that stopped the peer, or nil.
func (p *Peer) Err() error { return p.writeErr }

// Step handles a message from another server. Forwarded client writes go
// to the core; a learner's PING carries the sessions it saw active; a
// REVALIDATE is a learner's question about a session (leader) or the
// leader's verdict (learner).
//
// After a storage error the peer is out of the ensemble for good: it drops
// every message, as a server that shut down would.
func (p *Peer) Step(m zab.Message, now zkcore.Now) error {
	if p.writeErr != nil {
		return nil
	}
	switch {
	case m.Type == zab.MsgRevalidate:
		p.revalidateCounted()
		return p.revalidate(m, now)
	case m.Type == zab.MsgRequest:
		if p.node.Role() != zab.Leading || !p.node.Serving() {
			return nil // the learner will time out and find the new leader
		}
		p.node.NoteRequest(m.From)
		f, err := DecodeForward(m.Data, m.AuthInfo, p.maxBuf)
		if err != nil {
			return fmt.Errorf("peer %d: request from %d: %w", p.id, m.From, err)
		}
		p.zk.Remote(f, now)
		return nil
	case m.Type == zab.MsgPing && p.node.Role() == zab.Leading && len(m.Data) > 0:
		touches, err := decodeTouches(m.Data)
		if err != nil {
			return fmt.Errorf("peer %d: ping from %d: %w", p.id, m.From, err)
		}
		p.zk.TouchSessions(touches, now)
	}
	p.receivedTimed(m, now)
	err := p.node.Step(m)
	p.committedTimed(now)
	return err
}

// Tick lets time pass for Zab and for the core. A learner whose clients
// were active since its last PING sends the leader one now, with their
// sessions: the leader then extends them within a tick of their activity,
// not at its next PING (every half tickTime), and a session expires within
// its timeout and a tick wherever its client is attached.
func (p *Peer) Tick(now zkcore.Now) {
	if p.writeErr != nil {
		return
	}
	p.node.Tick()
	p.zk.Tick(now)
	if p.zk.HasTouches() && p.node.Role() != zab.Leading {
		_ = p.node.PingLeader() // not serving: the touches wait for a leader
	}
}

// HandleReady carries out the work of the core and of the node until
// neither has any, in the order zab.Ready documents, persisting each batch
// on the calling goroutine (the simulator's way). After a storage error it
// only delivers the core's client bytes (connections it closes) and
// returns that error.
func (p *Peer) HandleReady(now zkcore.Now) error {
	for p.writeErr == nil && (p.zk.HasReady() || p.node.HasReady()) {
		p.PumpCore(now)
		if !p.node.HasReady() {
			continue
		}
		rd := p.node.Ready()
		p.send(rd.Early, nil)
		rd.Early = nil
		ps, err := p.Persist(rd)
		if err == nil {
			err = p.Finish(rd, ps, now)
		}
		if err != nil {
			p.fail(err)
		}
	}
	if p.writeErr != nil {
		p.PumpCore(now)
	}
	return p.writeErr
}

// Fail stops the peer after a storage error the driver met persisting a
// batch (Persist): writes stop and the member leaves the service for good
// (zkcore.FailWrites). It returns the error the peer keeps.
func (p *Peer) Fail(err error) error { return p.fail(err) }

// fail records the first storage error and stops writes for good.
func (p *Peer) fail(err error) error {
	if p.writeErr == nil {
		p.writeErr = fmt.Errorf("peer %d: %w", p.id, err)
		p.zk.FailWrites(p.writeErr)
	}
	return p.writeErr
}

// PumpCore sends the core's client bytes and hands its writes to Zab. A
// driver that persists batches on another goroutine calls it while a batch
// is on its way to disk: reads and replies keep flowing, and the writes go
// into the next batch.
func (p *Peer) PumpCore(now zkcore.Now) {
	if p.zk.HasReady() {
		p.handleCore(now)
	}
}

// SendEarly sends the node's Early messages (zab.Ready.Early) now: a
// driver that persists batches on another goroutine calls it after each
// step, so a leader's proposals and commits, and a learner's forwarded
// writes, do not wait for the batch on its way to disk.
func (p *Peer) SendEarly() {
	if p.writeErr != nil {
		return
	}
	if msgs := p.node.TakeEarly(); len(msgs) > 0 {
		p.send(msgs, nil)
	}
}

// Persisted is what Persist did that Finish needs: the state rebuilt from
// disk after a TRUNC, or read from the leader's snapshot.
type Persisted struct {
	tree     *datatree.Tree
	sessions []zkcore.SessionState
	rebuilt  bool
	// acksSent: Persist sent the batch's Messages (its ACKs) itself.
	acksSent bool
}

// ApplyOnly reports whether rd has nothing for Persist to do and nothing
// to send: only committed txns to apply, syncs to answer and a role
// change (a follower's batch after a COMMIT, a leader's after a quorum
// of ACKs). A driver that persists batches on another goroutine finishes
// such a batch at once, on its loop (Finish with a zero Persisted): the
// txns it commits are in batches already made durable, since a batch is
// taken only once the one before it was finished.
func ApplyOnly(rd zab.Ready) bool {
	return rd.Truncate == nil && !rd.InstallSnapshot && len(rd.Entries) == 0 && rd.State == nil &&
		rd.Config == nil && len(rd.Messages) == 0 && len(rd.Early) == 0 && len(rd.Disconnect) == 0 &&
		len(rd.SendSnapshots) == 0
}

// onlyAcks reports whether rd's Messages are ACKs of its entries and
// nothing else in rd must come before them: Persist may then send them
// as soon as the entries are durable, from the goroutine that synced
// them, instead of leaving them for Finish on the loop. An ACK promises
// only that the entries are on disk; the node holds every later message
// to the leader out of Early until this batch is advanced, so the link
// keeps its order.
func onlyAcks(rd zab.Ready) bool {
	if len(rd.Messages) == 0 || len(rd.Entries) == 0 || rd.State != nil || rd.Config != nil || rd.Role != nil ||
		rd.Truncate != nil || rd.InstallSnapshot || len(rd.Early) > 0 || len(rd.Disconnect) > 0 ||
		len(rd.SendSnapshots) > 0 {
		return false
	}
	for _, m := range rd.Messages {
		if m.Type != zab.MsgAck {
			return false
		}
	}
	return true
}

// Persist carries out the disk part of rd: truncation or snapshot install
// (with the state they leave), appended txns and the sync, and only then
// the epochs. A learner's batch that acknowledges NEWLEADER holds the
// whole sync (zab keeps it in memory until NEWLEADER: the truncation or
// snapshot, the txns, the commits) and the new currentEpoch: were the
// epoch durable first, a crash in between would leave a learner whose
// currentEpoch is ahead of its log, which can win an election and
// truncate committed txns on the others (ZOOKEEPER-4643/4646; scenario
// 3's failpoint current-epoch-written found it). No batch needs its
// epochs first: acceptedEpoch (before ACKEPOCH) and a leader's
// currentEpoch (before LEADERINFO and the syncs) are promises that only
// Messages carry, and Finish sends them after Persist. A TRUNC the disk
// cannot carry out (Log.Truncate's error, or a rebuilt state that does
// not end where the leader said) fails the batch, and the peer leaves the
// service rather than serve another history. A follower's batch whose
// messages are only the ACKs of its entries (the steady state of
// broadcast) has them sent here, right after the sync, so that they do
// not wait for the loop to take the batch back. It touches only the Log
// and the Transport, so a driver may run it on another goroutine while
// the loop goes on; Finish must follow, on the loop, before the next
// batch is taken.
func (p *Peer) Persist(rd zab.Ready) (Persisted, error) {
	var ps Persisted
	switch {
	case rd.InstallSnapshot:
		tree, sessions, err := DecodeSnapshot(rd.Snapshot, p.maxBuf)
		if err != nil {
			return ps, fmt.Errorf("snapshot from the leader at %s: %w", rd.SnapshotZxid, err)
		}
		tree.SetLastZxid(rd.SnapshotZxid)
		failpoint.Hit(failpoint.LearnerSnapReceived)
		if err := p.log.InstallSnapshot(rd.SnapshotZxid, tree, sessions); err != nil {
			return ps, err
		}
		ps = Persisted{tree: tree, sessions: sessions, rebuilt: true}
	case rd.Truncate != nil:
		if err := p.log.Truncate(*rd.Truncate); err != nil {
			return ps, err
		}
		failpoint.Hit(failpoint.LearnerTruncated)
		tree, sessions, err := p.log.Reload()
		if err != nil {
			return ps, err
		}
		if got := tree.LastZxid(); got != *rd.Truncate {
			return ps, fmt.Errorf("truncated to %s, but the state rebuilt from disk ends at %s", *rd.Truncate, got)
		}
		ps = Persisted{tree: tree, sessions: sessions, rebuilt: true}
	}
	if len(rd.Entries) > 0 {
		if err := p.log.Append(rd.Entries); err != nil {
			return ps, err
		}
		failpoint.Hit(failpoint.LogAppendedBeforeFsync)
		if err := p.log.Sync(); err != nil {
			return ps, err
		}
	}
	if rd.State != nil {
		if err := p.log.SaveState(*rd.State); err != nil {
			return ps, err
		}
	}
	if rd.Config != nil {
		if p.configs == nil {
			// The batch must not be acted on: its messages may promise a
			// configuration that is not durable.
			return ps, fmt.Errorf("configuration %s to persist, but this member cannot store configurations", rd.Config.Active.Version)
		}
		if err := p.configs.SaveConfig(*rd.Config); err != nil {
			return ps, err
		}
	}
	if onlyAcks(rd) {
		p.tr.Send(rd.Messages)
		ps.acksSent = true
	}
	return ps, nil
}

// Finish carries out the rest of rd once Persist succeeded: the rebuilt
// state, links to close, messages (which may promise what Persist made
// durable), committed txns, completed syncs and the role; then it advances
// the node.
func (p *Peer) Finish(rd zab.Ready, ps Persisted, now zkcore.Now) error {
	if ps.rebuilt {
		p.zk.Restore(ps.tree, ps.sessions, now)
	}
	// Close links first: a FOLLOWERINFO in the same batch opens a new one.
	for _, id := range rd.Disconnect {
		p.tr.Disconnect(id)
	}
	p.send(rd.Early, nil) // a driver that did not send them before Persist
	// A batch of ACKs alone Persist has sent (onlyAcks).
	if !ps.acksSent {
		if err := p.send(rd.Messages, rd.SendSnapshots); err != nil {
			return p.fail(err)
		}
	}
	if failpoint.Enabled {
		hitAfterSend(rd)
	}
	p.ackedTimed(rd.Entries, now)
	p.committedTimed(now) // a commit the node learned outside Step
	if err := p.applyCommitted(&rd, now); err != nil {
		return p.fail(err)
	}
	if c := rd.Config; c != nil && c.Active.Version > p.zk.EnsembleConfigVersion() && !committedIn(rd.Committed, c.Active.Version) {
		// Activated without its txn in this batch (a stamp, a sync, a
		// notification): the node shows it now. A reconfig txn applied
		// above has already written it, with the txn's time.
		p.zk.SetEnsembleConfig(c.Active.Text, int64(c.Active.Version), now)
	}
	if rd.Role != nil {
		p.setMode(*rd.Role, now)
	}
	p.node.Advance(rd)
	p.committedTimed(now)
	return nil
}

// committedIn reports whether z is among es.
func committedIn(es []zab.Entry, z zxid.ID) bool {
	for _, e := range es {
		if e.Zxid == z {
			return true
		}
	}
	return false
}

// handleCore sends client bytes and hands the core's writes to Zab: the
// leader proposes them, a learner forwards them.
func (p *Peer) handleCore(now zkcore.Now) {
	rd := p.zk.Ready()
	for _, s := range rd.Sends {
		p.clients.Send(s)
	}
	if p.writeErr != nil {
		return // out of the ensemble: nothing goes to Zab
	}
	for _, o := range rd.Outbox {
		var err error
		switch {
		case o.Txn != nil:
			err = p.node.Propose(o.Txn.Header.Zxid, txn.Marshal(o.Txn))
			if err == nil {
				p.proposedTimed(o.Txn.Header.Zxid, o.Txn.Header.Time)
			}
		case o.Forward != nil:
			data, auth := EncodeForward(*o.Forward)
			err = p.node.Forward(data, auth)
		case o.Sync:
			err = p.node.RequestSync()
		case o.Revalidate != nil:
			err = p.node.Revalidate(EncodeRevalidate(*o.Revalidate))
		}
		if err != nil {
			// The core and Zab disagree on who leads or on the next
			// zxid: void what the core prepared; its clients see the
			// connection drop and retry.
			p.logger.Warn("write refused by zab", "err", err)
			p.zk.SetMode(zkcore.NotServing, 0, now)
			return
		}
	}
}

// send passes messages on, filling in what only the peer knows: the
// snapshot a learner needs, and a learner's active sessions in its PING.
func (p *Peer) send(msgs []zab.Message, snapshotsFor []zab.PeerID) error {
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.Type == zab.MsgSnap && contains(snapshotsFor, m.To):
			// The snapshot is the state applied now, which may be past the
			// zxid the node chose when it decided on a SNAP (a batch may
			// have been applied since): name it by what it holds. The
			// learner skips the proposals that follow up to there.
			b, err := EncodeSnapshot(p.zk)
			if err != nil {
				return err
			}
			m.Data = b
			m.Zxid = p.zk.LastZxid()
		case m.Type == zab.MsgPing && p.node.Role() != zab.Leading:
			m.Data = encodeTouches(p.zk.TakeTouches())
		}
	}
	if len(msgs) > 0 {
		p.tr.Send(msgs)
	}
	return nil
}

// hitAfterSend marks the failpoints of a batch whose messages just went to
// the transport: a leader's start of a sync and its NEWLEADER, a learner's
// ACK of NEWLEADER (an epoch ACK in the batch that made the epoch current;
// UPTODATE's carries no state).
func hitAfterSend(rd zab.Ready) {
	for _, m := range rd.Messages {
		switch {
		case m.Type == zab.MsgDiff:
			failpoint.Hit(failpoint.LeaderDiffSent)
		case m.Type == zab.MsgTrunc:
			failpoint.Hit(failpoint.LeaderTruncSent)
		case m.Type == zab.MsgSnap:
			failpoint.Hit(failpoint.LeaderSnapSent)
		case m.Type == zab.MsgAck && m.Zxid.Counter() == 0 && rd.State != nil:
			failpoint.Hit(failpoint.LearnerNewLeaderAcked)
		case m.Type == zab.MsgNewLeader:
			failpoint.Hit(failpoint.LeaderNewLeaderSent)
		}
	}
}

// setMode follows Zab's role with the core's mode.
func (p *Peer) setMode(rc zab.RoleChange, now zkcore.Now) {
	switch {
	case !rc.Serving:
		p.zk.SetMode(zkcore.NotServing, rc.Epoch, now)
	case rc.Role == zab.Leading:
		p.zk.SetMode(zkcore.Leader, rc.Epoch, now)
	default:
		p.zk.SetMode(zkcore.Learner, rc.Epoch, now)
	}
}

func contains(ids []zab.PeerID, id zab.PeerID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// EncodeSnapshot is the SNAP stream's body: the sessions, then the tree as
// a snapshot file holds it (docs/zookeeper-protocol.md §10.3), without header or seals.
func EncodeSnapshot(zk *zkcore.Server) ([]byte, error) {
	var e jute.Encoder
	sessions := zk.SnapshotSessions()
	e.Int(int32(len(sessions)))
	for _, s := range sessions {
		e.Long(s.ID)
		e.Int(s.TimeoutMs)
	}
	buf := bytes.NewBuffer(e.B)
	if err := zk.Tree().WriteBody(buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeSnapshot reads EncodeSnapshot's bytes.
func DecodeSnapshot(b []byte, maxLen int) (*datatree.Tree, []zkcore.SessionState, error) {
	d := jute.NewDecoder(b, maxLen)
	n := d.VectorLen(12)
	var sessions []zkcore.SessionState
	for i := 0; i < n; i++ {
		sessions = append(sessions, zkcore.SessionState{ID: d.Long(), TimeoutMs: d.Int()})
	}
	if d.Err() != nil {
		return nil, nil, d.Err()
	}
	tree, err := datatree.ReadBody(bytes.NewReader(b[d.Offset():]), maxLen)
	if err != nil {
		return nil, nil, err
	}
	return tree, sessions, nil
}

// encodeTouches is a learner's PING data: repeated {long session; int timeout}.
func encodeTouches(ts []zkcore.SessionTouch) []byte {
	var e jute.Encoder
	for _, t := range ts {
		e.Long(t.ID)
		e.Int(t.TimeoutMs)
	}
	return e.B
}

func decodeTouches(b []byte) ([]zkcore.SessionTouch, error) {
	if len(b)%12 != 0 {
		return nil, fmt.Errorf("ping data of %d bytes is not a list of session touches", len(b))
	}
	d := jute.NewDecoder(b, 0)
	out := make([]zkcore.SessionTouch, 0, len(b)/12)
	for d.Remaining() > 0 {
		out = append(out, zkcore.SessionTouch{ID: d.Long(), TimeoutMs: d.Int()})
	}
	return out, d.Err()
}

// applyCommitted applies the batch's committed txns in order, answering
// the syncs that wait between them. A snapshot walk beside the loop
// waits for the batch (datatree.Tree.HoldWrites), not each txn for it.
func (p *Peer) applyCommitted(rd *zab.Ready, now zkcore.Now) error {
	tree := p.zk.Tree()
	tree.HoldWrites()
	defer tree.ReleaseWrites()
	syncs := rd.SyncsDone
	for i, e := range rd.Committed {
		for len(syncs) > 0 && syncs[0] == i {
			p.zk.SyncDone(now)
			syncs = syncs[1:]
		}
		t, err := txn.Unmarshal(e.Data, p.maxBuf)
		if err != nil {
			return fmt.Errorf("committed txn %s does not decode: %w", e.Zxid, err)
		}
		p.appliedTimed(t, now)
		p.zk.Apply(t, now)
	}
	for range syncs {
		p.zk.SyncDone(now)
	}
	return nil
}
