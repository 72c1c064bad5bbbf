package zab

import (
	"fmt"

	"keeper/coordination/zxid"
	"keeper/internal/invariants"
)

// learnerStage is how far a follower or observer got with its leader.
type learnerStage uint8

const (
	stageInfo     learnerStage = iota // FOLLOWERINFO sent, waiting for LEADERINFO
	stageEpoch                        // ACKEPOCH sent, waiting for the sync
	stageSyncing                      // receiving the sync
	stageNewEpoch                     // NEWLEADER acked, waiting for UPTODATE
	stageServing                      // UPTODATE received: broadcast
)

// learnerState is what a follower or observer keeps about its leader.
type learnerState struct {
	stage      learnerStage
	newEpoch   zxid.Epoch
	quietTicks int
	syncs      int // sync requests sent and not yet answered
	// dialect is the Zab the leader announced in LEADERINFO.
	dialect Dialect
	// sync holds what the leader sent from DIFF, TRUNC or SNAP up to
	// NEWLEADER. None of it touches the log, the disk or the state machine
	// until NEWLEADER arrives: a leader that never gets a quorum of
	// NEWLEADER acks must leave nothing behind (ZOOKEEPER-1549, -2872), and
	// a sync abandoned half way leaves the node as it was.
	sync []Message
	// leaderConf is the configuration NEWLEADER carried, and deferred
	// the newest one the sync committed: both are activated at UPTODATE.
	leaderConf, deferred *Membership
}

// becomeLearner connects to the elected leader: FOLLOWERINFO (or
// OBSERVERINFO) starts discovery.
func (n *Node) becomeLearner(r Role, leader PeerID) {
	n.leaveRole()
	n.learn = &learnerState{}
	n.setRole(r, leader)
	t := MsgFollowerInfo
	if r == Observing {
		t = MsgObserverInfo
	}
	n.send(Message{Type: t, To: leader, Zxid: zxid.Make(n.hard.AcceptedEpoch, 0),
		Epoch: int64(n.hard.AcceptedEpoch), LastZxid: n.reportedLast(), Dialect: DialectKeeper,
		ConfigVersion: n.conf.Version})
}

// reportedLast is the last zxid a learner tells its leader in discovery:
// its log's, or zxid.None, which no window covers, to get a snapshot when
// it cannot truncate where the leader would take it.
func (n *Node) reportedLast() zxid.ID {
	if n.fullSync {
		return zxid.None
	}
	return n.log.last
}

// stepLearner handles a message from the leader.
func (n *Node) stepLearner(m Message) error {
	if m.From != n.leader {
		if m.Type == MsgFollowerInfo || m.Type == MsgObserverInfo {
			// A peer that thinks we lead: the designated leader of a
			// reconfiguration we are about to learn of, or a mistake that
			// times out. Kept for the first case (followDesignated).
			n.elect.early[m.From] = m
			return nil
		}
		return errFromUnknown(m)
	}
	ls := n.learn
	if m.Type == MsgPing && ls.stage < stageSyncing {
		// A leader pings only learners it syncs. This is a peer that
		// follows us while we follow it (each took the other's vote from
		// an older round): echoing its PING would keep both links alive,
		// and both nodes out of service, for ever.
		return nil
	}
	ls.quietTicks = 0
	switch m.Type {
	case MsgDisconnected:
		// The link went down under us (the leader's process died, or it
		// closed the link): look for a new leader at once, and do not
		// wait for the old one's vote.
		lost := n.leader
		n.becomeLooking()
		if n.isVoter(lost) {
			n.elect.absent[lost] = true
		}
	case MsgLeaderInfo:
		return n.leaderInfo(m)
	case MsgDiff, MsgTrunc, MsgSnap:
		return n.syncStart(m)
	case MsgProposal, MsgCommit, MsgInform, MsgCommitAndActivate, MsgInformAndActivate:
		switch ls.stage {
		case stageInfo, stageEpoch:
			// Left over from an earlier link to the same leader: the
			// leader sends these only after the sync began.
			return errUnexpected(n, m)
		case stageSyncing:
			ls.sync = append(ls.sync, m)
			return nil
		}
		n.fromLeader(m)
		if m.Type == MsgCommitAndActivate || m.Type == MsgInformAndActivate {
			n.followDesignated(m.Designated)
		}
	case MsgNewLeader:
		return n.newLeader(m)
	case MsgUpToDate:
		if ls.stage != stageNewEpoch {
			return errUnexpected(n, m)
		}
		ls.stage = stageServing
		for _, c := range []*Membership{ls.deferred, ls.leaderConf} {
			if c != nil {
				n.activate(*c)
			}
		}
		ls.deferred, ls.leaderConf = nil, nil
		if !n.roleFits() {
			// The leader's configuration gives this node another role,
			// or the leader no vote: look again under it.
			n.becomeLooking()
			return nil
		}
		n.serving = true
		n.setRole(n.role, n.leader)
		if n.role == Following {
			n.send(Message{Type: MsgAck, To: n.leader, Zxid: zxid.Make(ls.newEpoch, 0)})
		}
	case MsgPing:
		n.send(Message{Type: MsgPing, To: n.leader, Zxid: m.Zxid})
	case MsgRevalidate:
		// the leader's verdict on a session; the caller reads the data
	case MsgSync:
		if ls.syncs > 0 {
			ls.syncs--
			n.ready.SyncsDone = append(n.ready.SyncsDone, len(n.ready.Committed))
		}
	default:
		return errUnexpected(n, m)
	}
	return nil
}

// leaderInfo accepts the new epoch (persisting it before ACKEPOCH says so)
// or refuses a leader whose epoch is older than one already accepted.
func (n *Node) leaderInfo(m Message) error {
	ls := n.learn
	if ls.stage != stageInfo {
		return errUnexpected(n, m)
	}
	e := m.Zxid.Epoch()
	ack := Message{Type: MsgAckEpoch, To: n.leader, Zxid: n.reportedLast(), Epoch: int64(n.hard.CurrentEpoch)}
	switch {
	case e > n.hard.AcceptedEpoch:
		n.hard.AcceptedEpoch = e
		n.persist()
	case e == n.hard.AcceptedEpoch:
		ack.Epoch = -1
	default:
		n.becomeLooking()
		return fmt.Errorf("zab: leader %d offers epoch %d, below accepted epoch %d", m.From, e, n.hard.AcceptedEpoch)
	}
	ls.newEpoch = e
	ls.dialect = m.Dialect
	ls.stage = stageEpoch
	n.send(ack)
	return nil
}

// syncStart begins a sync (DIFF, TRUNC or SNAP), which is kept until
// NEWLEADER; a TRUNC below the truncation floor is refused.
func (n *Node) syncStart(m Message) error {
	ls := n.learn
	if ls.stage != stageEpoch {
		return errUnexpected(n, m)
	}
	if m.Type == MsgTrunc && m.Zxid < n.floor {
		// The storage cannot rebuild the state at m.Zxid: leave, and ask
		// the next leader for a snapshot.
		n.fullSync = true
		n.becomeLooking()
		return fmt.Errorf("zab: node %d cannot truncate to %s, below its snapshot at %s: asking for a snapshot",
			n.id, m.Zxid, n.floor)
	}
	ls.stage = stageSyncing
	ls.sync = append(ls.sync, m)
	return nil
}

// fromLeader carries out a message of the sync or of broadcast: it changes
// the log and hands out what is committed.
func (n *Node) fromLeader(m Message) {
	switch m.Type {
	case MsgTrunc:
		z := m.Zxid
		n.ready.Truncate = &z
		n.log.truncate(z)
		n.committed = z
		n.forgetNextAbove(z)
	case MsgSnap:
		n.ready.InstallSnapshot = true
		n.ready.SnapshotZxid = m.Zxid
		n.ready.Snapshot = m.Data
		n.log.reset(m.Zxid)
		n.committed = m.Zxid
		// Below the snapshot the log may hold another history, or
		// nothing: the storage cannot truncate under it.
		n.floor = m.Zxid
		n.fullSync = false
		n.stateLost = false // the leader's state replaces the one lost
		// A configuration seen proposed is either in the snapshot (then
		// committed: the leader's NEWLEADER brings it as active) or never
		// committed and gone with the log it was in (a proposal of a
		// deposed leader); one proposed after the snapshot comes again in
		// the sync. None may survive as last seen: a learner that later
		// leads would propose it in NEWLEADER and activate a configuration
		// no quorum holds (simulator seeds 2449, 3413).
		n.forgetNextAbove(0)
	case MsgProposal:
		if n.learn.stage == stageServing {
			n.stats.ProposalsReceived++
		}
		n.learnerProposal(m)
	case MsgCommit, MsgCommitAndActivate:
		if n.learn.stage == stageServing {
			n.stats.CommitsReceived++
		}
		n.commitTo(min(m.Zxid, n.log.last))
		if m.Type == MsgCommitAndActivate {
			n.activateLogged(m.Zxid)
		}
	case MsgInform, MsgInformAndActivate:
		if m.Zxid > n.log.last {
			n.appendEntry(Entry{Zxid: m.Zxid, Data: m.Data})
		}
		n.commitTo(m.Zxid)
		if m.Type == MsgInformAndActivate {
			n.activateLogged(m.Zxid)
		}
	}
}

// learnerProposal logs a proposal; in broadcast a follower acks it once it
// is durable (Ready sends the ACK after persisting Entries).
func (n *Node) learnerProposal(m Message) {
	if m.Zxid <= n.log.last {
		return // already logged (a DIFF overlapping the learner's log)
	}
	n.appendEntry(Entry{Zxid: m.Zxid, Data: m.Data})
	if n.learn.stage >= stageNewEpoch && n.role == Following {
		n.send(Message{Type: MsgAck, To: n.leader, Zxid: m.Zxid})
	}
}

func (n *Node) appendEntry(e Entry) {
	n.log.append(e)
	n.ready.Entries = append(n.ready.Entries, e)
	n.seeEntry(e)
}

// followDesignated carries out the end of a COMMITANDACTIVATE or
// INFORMANDACTIVATE, the configuration active: a node whose leader stays
// and whose role fits goes on; else it leads, if designated, or follows
// (observes) the designated leader at once, as ZooKeeper's learners do
// without an election; a designated leader that does not vote sends it
// looking.
func (n *Node) followDesignated(d PeerID) {
	if d == n.leader && n.roleFits() {
		return
	}
	switch {
	case d == 0 || !n.conf.IsVoter(d):
		n.becomeLooking()
	case d == n.id:
		early := n.elect.early
		n.elect.early = map[PeerID]Message{}
		n.elect.decided = Vote{Leader: d, Zxid: n.log.last, Epoch: n.hard.CurrentEpoch}
		n.becomeLeading()
		for _, p := range sortedPeers(early) {
			_ = n.stepLeader(early[p])
		}
	default:
		n.elect.decided = Vote{Leader: d, Zxid: n.log.last, Epoch: n.hard.CurrentEpoch}
		r := Following
		if n.observer {
			r = Observing
		}
		n.becomeLearner(r, d)
	}
}

// newLeader completes the sync. Everything the leader sent since DIFF,
// TRUNC or SNAP goes into one batch with the new currentEpoch and the ACK:
// the truncation or the snapshot, the txns (never acked one by one: the
// NEWLEADER ack covers them) and the commits, as Apache ZooKeeper's
// learner does since 3.6. The caller makes the log durable before the
// epoch (see Ready), and both before the ACK leaves.
func (n *Node) newLeader(m Message) error {
	ls := n.learn
	if ls.stage != stageSyncing {
		return errUnexpected(n, m)
	}
	// Every batch before the one that sent ACKEPOCH was taken, and the
	// sync only buffered since: a truncation or snapshot cannot meet older
	// work in this batch.
	invariants.Assertf(len(n.ready.Entries) == 0 && len(n.ready.Committed) == 0 && n.ready.Truncate == nil &&
		!n.ready.InstallSnapshot, "zab: node %d: sync replayed onto a batch with log work", n.id)
	for _, sm := range ls.sync {
		n.fromLeader(sm)
	}
	ls.sync = nil
	if c, ok := n.leaderConfig(m.Data); ok {
		// Seen before the ACK says so; active at UPTODATE.
		if c.Version > n.lastSeen().Version {
			n.next = &c
			n.persistConfig()
		}
		ls.leaderConf = &c
	}
	n.hard.CurrentEpoch = ls.newEpoch
	n.persist()
	n.settleVote(n.leader, ls.newEpoch)
	ls.stage = stageNewEpoch
	n.send(Message{Type: MsgAck, To: n.leader, Zxid: m.Zxid})
	if ls.dialect == DialectZooKeeper && n.role == Following {
		// Apache ZooKeeper's leader counts each proposal's ACK on its own
		// and takes none from the NEWLEADER ack: the txns it had in flight
		// when the sync began need ours, after the NEWLEADER ack, as its
		// own followers send them (docs/zookeeper-protocol.md §10.5).
		for _, e := range n.log.between(n.committed, n.log.last) {
			n.send(Message{Type: MsgAck, To: n.leader, Zxid: e.Zxid})
		}
	}
	return nil
}

// leaderConfig reads the configuration a NEWLEADER carries, if it is
// newer than the active one.
func (n *Node) leaderConfig(text []byte) (Membership, bool) {
	if n.codec == nil || len(text) == 0 {
		return Membership{}, false
	}
	c, err := n.codec.Parse(text)
	if err != nil || c.Version <= n.conf.Version {
		return Membership{}, false
	}
	return c.clone(), true
}

// tickLearner gives up on a leader that went silent: initLimit while
// syncing, syncLimit once in broadcast.
func (n *Node) tickLearner() {
	ls := n.learn
	ls.quietTicks++
	limit := n.cfg.SyncLimitTicks
	if ls.stage < stageServing {
		limit = n.cfg.InitLimitTicks
	}
	if ls.quietTicks > limit {
		n.becomeLooking()
	}
}

// RequestSync asks for a sync: once everything the leader had proposed
// when it got the request is committed here, Ready.SyncsDone counts it.
func (n *Node) RequestSync() error {
	switch {
	case n.role == Leading && n.serving:
		n.lead.syncs = append(n.lead.syncs, n.log.last)
		n.answerSyncs()
	case (n.role == Following || n.role == Observing) && n.serving:
		n.learn.syncs++
		n.send(Message{Type: MsgSyncRequest, To: n.leader})
	default:
		return ErrNotLeader
	}
	return nil
}

// PingLeader sends the leader a PING of the learner's own, between the
// leader's: the caller fills it with its clients' session activity, so
// that the leader learns of it without waiting for its next PING.
func (n *Node) PingLeader() error {
	if (n.role != Following && n.role != Observing) || !n.serving {
		return ErrNotLeader
	}
	n.send(Message{Type: MsgPing, To: n.leader, Zxid: n.log.last})
	return nil
}

// Forward sends a client's write to the leader (Zab's REQUEST), in order
// with the node's other messages, such as sync requests. data and
// authInfo are the caller's (Message.Data and Message.AuthInfo).
func (n *Node) Forward(data, authInfo []byte) error {
	if (n.role != Following && n.role != Observing) || !n.serving {
		return ErrNotLeader
	}
	n.send(Message{Type: MsgRequest, To: n.leader, Data: data, AuthInfo: authInfo})
	return nil
}

// Revalidate asks the leader whether a session is alive (Zab's
// REVALIDATE), in order with the node's other messages; data is the
// caller's. The answer arrives as a MsgRevalidate from the leader, which
// the caller reads before stepping it.
func (n *Node) Revalidate(data []byte) error {
	if (n.role != Following && n.role != Observing) || !n.serving {
		return ErrNotLeader
	}
	n.send(Message{Type: MsgRevalidate, To: n.leader, Zxid: zxid.None, Data: data})
	return nil
}

// AnswerRevalidate sends the leader's verdict on a session to the learner
// that asked (a MsgRevalidate carrying data).
func (n *Node) AnswerRevalidate(to PeerID, data []byte) error {
	if n.role != Leading || !n.serving || n.lead.learners[to] == nil {
		return ErrNotLeader
	}
	n.send(Message{Type: MsgRevalidate, To: to, Zxid: zxid.None, Data: data})
	return nil
}

func errFromUnknown(m Message) error {
	return fmt.Errorf("zab: %s from %d, which is not a peer of this role", m.Type, m.From)
}

func errUnexpected(n *Node, m Message) error {
	return fmt.Errorf("zab: node %d (%s) did not expect %s", n.id, n.role, m)
}

// activateLogged activates the reconfiguration z that the leader says is
// committed when commitTo did not: a node restarted with it logged but not
// committed counts its whole log as applied (as ZooKeeper replays every
// logged txn), so the commit finds nothing new to commit; the
// configuration is its last seen, and activates now (at UPTODATE if the
// sync is still going on).
func (n *Node) activateLogged(z zxid.ID) {
	if n.next == nil || n.next.Version != z || n.conf.Version >= z {
		return
	}
	m := n.next.clone()
	if n.learn != nil && n.learn.stage == stageSyncing {
		if d := n.learn.deferred; d == nil || d.Version < m.Version {
			n.learn.deferred = &m
		}
		return
	}
	n.activate(m)
}
