package zab

import (
	"slices"

	"keeper/coordination/zxid"
)

// learnerPhase is how far a learner got with the leader.
type learnerPhase uint8

const (
	phaseInfo     learnerPhase = iota // FOLLOWERINFO received
	phaseEpoch                        // LEADERINFO sent, waiting for ACKEPOCH
	phaseAcked                        // ACKEPOCH received, waiting for the epoch quorum
	phaseSynced                       // sync and NEWLEADER sent, waiting for its ACK
	phaseUpToDate                     // UPTODATE sent: in broadcast
)

// peerState is the leader's view of one learner.
type peerState struct {
	id            PeerID
	observer      bool
	phase         learnerPhase
	acceptedEpoch zxid.Epoch
	lastZxid      zxid.ID // the learner's last logged zxid (ACKEPOCH)
	acked         zxid.ID // everything up to here is durable on the learner
	quietTicks    int
	forward       bool    // receives new proposals and commits (or informs)
	dialect       Dialect // what the learner announced: how to commit to it
	// commitFloor, for a ZooKeeper learner, is the zxid up to which it
	// holds every txn as committed (its own log at the sync, or a
	// PROPOSAL with its COMMIT): it gets a COMMIT or INFORM for each txn
	// above, and never one for a txn below.
	commitFloor zxid.ID
	// heldCommits are COMMITs (or a COMMITANDACTIVATE) for a ZooKeeper
	// follower between its NEWLEADER and UPTODATE, sent after UPTODATE
	// (upToDate). They are as many as the txns committed in one round
	// trip to it.
	heldCommits []Message
	// received, sent and requests count the messages from and to the
	// learner and its forwarded requests, for monitoring (Learners).
	received, sent, requests int64
}

// leaderState is what a leader keeps: discovery, sync and broadcast.
type leaderState struct {
	newEpoch     zxid.Epoch
	epochDecided bool
	epochAcked   bool
	established  bool
	ticks        int                   // since becoming leader, until established
	pingIn       int                   // ticks until the next PING to the learners
	learners     map[PeerID]*peerState // change only through addLearner and dropLearner
	sorted       []PeerID              // learners' ids in order, nil until asked for again after a change
	syncs        []zxid.ID             // pending sync requests (local ones: RequestSync), by the zxid they wait for
	remoteSyncs  []remoteSync
	// retiring is set once this leader committed a configuration it does
	// not vote in: it commits nothing more (ZooKeeper's allowedToCommit)
	// and leaves once the batch numbered retireAfter, which holds the
	// COMMITANDACTIVATEs, is carried out.
	retiring    bool
	retireAfter uint64
}

type remoteSync struct {
	from PeerID
	upTo zxid.ID
}

// becomeLeading starts discovery as the leader of a new epoch.
func (n *Node) becomeLeading() {
	n.leaveRole()
	n.lead = &leaderState{learners: map[PeerID]*peerState{}}
	n.setRole(Leading, n.id)
	n.tryDecideEpoch()
}

// stepLeader handles a message on the leader.
func (n *Node) stepLeader(m Message) error {
	l := n.lead
	p := l.learners[m.From]
	switch m.Type {
	case MsgFollowerInfo, MsgObserverInfo:
		if l.retiring {
			return nil // it will find the designated leader
		}
		n.learnerInfo(m)
		return nil
	case MsgDisconnected:
		l.dropLearner(m.From)
		return nil
	}
	if p == nil {
		return errFromUnknown(m)
	}
	p.quietTicks = 0
	p.received++
	switch m.Type {
	case MsgAckEpoch:
		return n.ackEpoch(p, m)
	case MsgAck:
		n.learnerAck(p, m.Zxid)
	case MsgSyncRequest:
		n.syncRequest(m.From)
	case MsgPing, MsgRevalidate:
		// liveness only; the caller reads any session data itself
	default:
		return errUnexpected(n, m)
	}
	return nil
}

// learnerInfo registers a learner that connected (FOLLOWERINFO or
// OBSERVERINFO) and, once the epoch is known, offers it.
func (n *Node) learnerInfo(m Message) {
	l := n.lead
	if old := l.learners[m.From]; old != nil && old.phase == phaseInfo && old.acceptedEpoch == zxid.Epoch(m.Epoch) {
		return // a duplicate
	}
	if n.codec != nil && m.ConfigVersion > n.lastSeen().Version {
		// It activated a configuration this leader never saw: refused,
		// as ZooKeeper's leader refuses a learner ahead of it. A leader
		// without reconfiguration knows no version (a Java learner's may
		// come from its dynamic file) and refuses none.
		n.refuseLearner(m.From)
		return
	}
	// A follower outside the configuration (a server about to join, or
	// one removed) follows without a vote: it logs and acks, and counts
	// in a configuration only if it votes there.
	p := &peerState{id: m.From, observer: m.Type == MsgObserverInfo,
		acceptedEpoch: zxid.Epoch(m.Epoch), lastZxid: m.LastZxid, dialect: m.Dialect, received: 1}
	l.addLearner(m.From, p)
	if l.epochDecided && p.acceptedEpoch > l.newEpoch {
		// It promised a later epoch (as a candidate whose own leadership
		// never took hold) and may not accept ours: a new election picks an
		// epoch above every promise, or it could never rejoin.
		n.becomeLooking()
		return
	}
	if l.epochDecided {
		n.offerEpoch(p)
		return
	}
	n.tryDecideEpoch()
}

// refuseLearner forgets a learner and has its connection closed.
func (n *Node) refuseLearner(id PeerID) {
	n.lead.dropLearner(id)
	n.ready.Disconnect = append(n.ready.Disconnect, id)
	n.holdLate(id)
}

// tryDecideEpoch picks the new epoch once a quorum of voters (the leader
// included) told their acceptedEpoch: one more than the highest of them.
func (n *Node) tryDecideEpoch() {
	l := n.lead
	present := map[PeerID]bool{n.id: true}
	epoch := n.hard.AcceptedEpoch
	for id, p := range l.learners {
		// A learner connected as an observer counts where it votes: a
		// reconfiguration in flight may make it a voter (quorum counts
		// only the voters of each configuration), as ZooKeeper counts an
		// ack towards every configuration its server votes in.
		present[id] = true
		epoch = max(epoch, p.acceptedEpoch)
	}
	if !n.quorum(present) {
		return
	}
	l.newEpoch = epoch + 1
	l.epochDecided = true
	n.hard.AcceptedEpoch = l.newEpoch
	n.persist()
	n.stampConfig(l.newEpoch)
	for _, id := range n.sortedLearners() {
		n.offerEpoch(l.learners[id])
	}
	n.tryEpochAcked()
}

func (n *Node) offerEpoch(p *peerState) {
	p.phase = phaseEpoch
	n.send(Message{Type: MsgLeaderInfo, To: p.id, Zxid: zxid.Make(n.lead.newEpoch, 0), Dialect: DialectKeeper})
}

// ackEpoch handles ACKEPOCH. A learner more recent than the leader means
// this election went wrong: the leader gives up (docs/zookeeper-protocol.md §10.3 discovery).
func (n *Node) ackEpoch(p *peerState, m Message) error {
	if p.phase != phaseEpoch {
		return errUnexpected(n, m)
	}
	if m.Epoch != -1 {
		theirs := Vote{Zxid: m.Zxid, Epoch: zxid.Epoch(m.Epoch)}
		ours := Vote{Zxid: n.log.last, Epoch: n.hard.CurrentEpoch}
		if theirs.Epoch > ours.Epoch || (theirs.Epoch == ours.Epoch && theirs.Zxid > ours.Zxid) {
			// It holds txns this leader never had, none of them committed
			// (a committed txn is on a quorum, and the election's quorum
			// gave this leader the latest of its voters). As ZooKeeper's
			// leader ends such a learner's handler, it is disconnected,
			// and the leader goes on with the others: once the new epoch
			// is current the learner comes back behind and is truncated.
			// Stepping down instead livelocks when the learner cannot win
			// an election (a server removed from the voters).
			n.refuseLearner(p.id)
			return nil
		}
	}
	p.lastZxid = m.Zxid
	p.phase = phaseAcked
	if n.lead.epochAcked {
		n.syncLearner(p)
		return nil
	}
	n.tryEpochAcked()
	return nil
}

// tryEpochAcked makes the new epoch current once a quorum acknowledged it,
// then brings every learner that did up to date.
func (n *Node) tryEpochAcked() {
	l := n.lead
	if !l.epochDecided || l.epochAcked {
		return
	}
	acked := map[PeerID]bool{n.id: true}
	for id, p := range l.learners {
		if p.phase == phaseAcked {
			acked[id] = true
		}
	}
	if !n.quorum(acked) {
		return
	}
	l.epochAcked = true
	n.hard.CurrentEpoch = l.newEpoch
	n.persist()
	n.settleVote(n.id, l.newEpoch)
	n.setRole(Leading, n.id)
	for _, id := range n.sortedLearners() {
		if p := l.learners[id]; p.phase == phaseAcked {
			n.syncLearner(p)
		}
	}
	// A lone voter's quorum is itself: it establishes the epoch now.
	n.tryEstablish()
}

// syncLearner brings a learner's log in line with the leader's: DIFF when
// it is a little behind, TRUNC when it holds txns the leader never had,
// SNAP when it is too far behind (docs/zookeeper-protocol.md §10.3 sync), then NEWLEADER. From
// here on it receives every new proposal, after the sync in FIFO order.
func (n *Node) syncLearner(p *peerState) {
	last := n.log.last
	lz := p.lastZxid
	n.stats.DiffSyncs++ // undone below for a snapshot
	switch {
	case lz == last:
		n.send(Message{Type: MsgDiff, To: p.id, Zxid: last})
		p.commitFloor = last
	case lz > last && lz.Counter() != 0:
		n.send(Message{Type: MsgTrunc, To: p.id, Zxid: last})
		p.commitFloor = last
	case n.log.covers(lz) && n.log.has(lz):
		n.send(Message{Type: MsgDiff, To: p.id, Zxid: last})
		n.sendHistory(p, lz)
	case n.log.covers(lz) && n.log.has(n.log.prevBefore(lz)):
		prev := n.log.prevBefore(lz)
		n.send(Message{Type: MsgTrunc, To: p.id, Zxid: prev})
		n.sendHistory(p, prev)
	default:
		n.stats.DiffSyncs--
		n.stats.SnapSyncs++
		n.send(Message{Type: MsgSnap, To: p.id, Zxid: n.applied})
		n.ready.SendSnapshots = append(n.ready.SendSnapshots, p.id)
		n.sendHistory(p, n.applied)
	}
	if c := min(n.committed, lz); c > 0 && p.dialect == DialectKeeper {
		// The learner's log may hold txns committed since it last heard a
		// COMMIT (one lost with a broken link), and sendHistory only
		// covers what it lacks: tell it. Apache ZooKeeper's learner
		// applies its whole log when it reloads, so needs no such news,
		// and would take this COMMIT for one of the txns that follow
		// (docs/zookeeper-protocol.md §10.5).
		n.send(Message{Type: MsgCommit, To: p.id, Zxid: c})
	}
	n.send(Message{Type: MsgNewLeader, To: p.id, Zxid: zxid.Make(n.lead.newEpoch, 0), Data: n.newLeaderConfig()})
	p.phase = phaseSynced
	p.forward = true
}

// newLeaderConfig is the configuration NEWLEADER carries, which the
// learner activates at UPTODATE: before the epoch is established, the
// last seen (the leader activates it when it establishes the epoch, with
// the acks of a quorum of both); after, the active one, since a
// reconfiguration proposed since is not committed yet (the learner sees
// it in its sync's PROPOSAL). Apache ZooKeeper sends the last seen in
// both cases.
func (n *Node) newLeaderConfig() []byte {
	if n.codec == nil {
		return nil
	}
	if n.lead.established {
		return n.conf.Text
	}
	return n.lastSeen().Text
}

// sendHistory sends every logged txn after from, with a commit for those
// already committed.
//
// A ZooKeeper learner gets what Apache ZooKeeper's leader sends
// (docs/zookeeper-protocol.md §10.5): before the epoch is established the
// leader's whole log counts as committed (tryEstablish commits it without
// telling anyone, and a Java learner must see one COMMIT for each of those
// PROPOSALs); after, txns still waiting for a quorum go to followers as
// bare PROPOSALs, whose COMMITs follow in broadcast, and not at all to
// observers, which learn of them by INFORM once they commit.
func (n *Node) sendHistory(p *peerState, from zxid.ID) {
	upTo := n.committed
	if p.dialect == DialectZooKeeper && !n.lead.established {
		upTo = n.log.last
	}
	p.commitFloor = max(from, min(upTo, n.log.last))
	for _, e := range n.log.between(from, n.log.last) {
		switch {
		case e.Zxid <= upTo:
			n.send(Message{Type: MsgProposal, To: p.id, Zxid: e.Zxid, Data: e.Data})
			n.send(Message{Type: MsgCommit, To: p.id, Zxid: e.Zxid})
		case p.dialect == DialectKeeper || !p.observer:
			n.send(Message{Type: MsgProposal, To: p.id, Zxid: e.Zxid, Data: e.Data})
		}
	}
}

// learnerAck handles an ACK: of NEWLEADER while establishing the epoch, or
// of proposals in broadcast. Acks are cumulative: a learner logs in order.
func (n *Node) learnerAck(p *peerState, z zxid.ID) {
	l := n.lead
	if p.phase == phaseSynced && z == zxid.Make(l.newEpoch, 0) {
		p.acked = max(p.acked, z)
		if l.established {
			n.upToDate(p)
		} else {
			n.tryEstablish()
		}
		return
	}
	if p.phase == phaseUpToDate {
		p.acked = max(p.acked, z)
		n.tryCommit()
	}
}

// tryEstablish completes the new epoch once a quorum of voters acked
// NEWLEADER: the leader's whole history is committed, and it serves.
func (n *Node) tryEstablish() {
	l := n.lead
	acked := map[PeerID]bool{n.id: true}
	for id, p := range l.learners {
		// An observer's NEWLEADER ack counts where it votes (a
		// reconfiguration in flight that promotes it), as in
		// tryDecideEpoch: it acks only once the sync is durable.
		if p.phase == phaseSynced && p.acked == zxid.Make(l.newEpoch, 0) {
			acked[id] = true
		}
	}
	if !n.quorum(acked) {
		return
	}
	l.established = true
	n.serving = true
	n.setRole(Leading, n.id)
	if n.log.last > n.committed {
		// The sync told keeper learners of the commits known then; what
		// the epoch commits now they would otherwise learn only with the
		// next COMMIT, and serve reads without it until then.
		for _, id := range n.sortedLearners() {
			if p := l.learners[id]; p.forward && p.dialect == DialectKeeper {
				n.send(Message{Type: MsgCommit, To: id, Zxid: n.log.last})
			}
		}
	}
	n.commitTo(n.log.last)
	if nx := n.next; nx != nil && (nx.Version <= n.log.last || nx.Version.Counter() == 0) {
		// A reconfiguration in the log, now committed with the rest, or a
		// NEWLEADER's stamp (this one's, or that of a leader that never
		// established its epoch), which changes no member: a quorum of
		// its voters acked NEWLEADER, which carries it.
		n.activate(*nx)
	}
	for _, id := range n.sortedLearners() {
		if p := l.learners[id]; p.phase == phaseSynced && p.acked == zxid.Make(l.newEpoch, 0) {
			n.upToDate(p)
		}
	}
	if !n.conf.IsVoter(n.id) {
		// Its learners see at UPTODATE that it does not vote, and look.
		n.retire()
	}
}

// retire stops a leader that does not vote in the configuration it just
// activated: it commits and proposes nothing more, and leaves on a tick
// once the batch that tells its learners is carried out.
func (n *Node) retire() {
	l := n.lead
	l.retiring = true
	l.retireAfter = n.taken + 1
	n.serving = false
	n.setRole(Leading, n.id)
}

// upToDate ends a learner's sync. A ZooKeeper follower then gets the
// commits held back since its sync (commitToLearner).
func (n *Node) upToDate(p *peerState) {
	p.phase = phaseUpToDate
	n.send(Message{Type: MsgUpToDate, To: p.id})
	for _, m := range p.heldCommits {
		n.send(m)
	}
	p.heldCommits = nil
}

// commitToLearner tells a ZooKeeper learner that newly committed, in
// Apache ZooKeeper's terms: a COMMIT for each txn to a follower, an
// INFORM with the txn to an observer; none for a txn at or below its
// commitFloor. A follower that is still syncing gets its COMMITs after
// UPTODATE: Apache ZooKeeper 3.8's learner fails on a COMMIT between
// NEWLEADER and UPTODATE unless a PROPOSAL came after NEWLEADER
// (ZOOKEEPER-4394). An observer takes an INFORM in any phase of its sync.
//
// The txn activating, when not 0, is a reconfiguration: its COMMIT is a
// COMMITANDACTIVATE, its INFORM an INFORMANDACTIVATE, naming designated.
func (n *Node) commitToLearner(p *peerState, newly []Entry, activating zxid.ID, designated PeerID) {
	for _, e := range newly {
		if e.Zxid <= p.commitFloor {
			continue
		}
		p.commitFloor = e.Zxid
		switch {
		case p.observer:
			n.send(informOf(p.id, e, activating, designated))
		case p.phase != phaseUpToDate:
			p.heldCommits = append(p.heldCommits, commitOf(p.id, e.Zxid, activating, designated))
		default:
			n.send(commitOf(p.id, e.Zxid, activating, designated))
		}
	}
}

// commitOf is the COMMIT of z to a follower, or its COMMITANDACTIVATE
// when z is the reconfiguration activating.
func commitOf(to PeerID, z, activating zxid.ID, designated PeerID) Message {
	if z == activating {
		return Message{Type: MsgCommitAndActivate, To: to, Zxid: z, Designated: designated}
	}
	return Message{Type: MsgCommit, To: to, Zxid: z}
}

// informOf is the INFORM of e to an observer, or its INFORMANDACTIVATE.
func informOf(to PeerID, e Entry, activating zxid.ID, designated PeerID) Message {
	if e.Zxid == activating {
		return Message{Type: MsgInformAndActivate, To: to, Zxid: e.Zxid, Data: e.Data, Designated: designated}
	}
	return Message{Type: MsgInform, To: to, Zxid: e.Zxid, Data: e.Data}
}

// leaderPropose logs a new txn and sends it to every follower.
func (n *Node) leaderPropose(e Entry) {
	n.log.append(e)
	n.ready.Entries = append(n.ready.Entries, e)
	n.seeEntry(e)
	for _, id := range n.sortedLearners() {
		if p := n.lead.learners[id]; p.forward && !p.observer {
			n.send(Message{Type: MsgProposal, To: id, Zxid: e.Zxid, Data: e.Data})
		}
	}
}

// leaderAdvanced runs after the caller made entries durable: the leader's
// own log counts as one ack.
func (n *Node) leaderAdvanced() {
	if n.lead.established {
		n.tryCommit()
	}
}

// tryCommit commits up to the highest zxid a quorum of voters has made
// durable, tells followers (COMMIT) and observers (INFORM), and answers the
// syncs that waited for it — each at its own point: a sync issued when the
// leader's log ended at u is answered after the commit of u and before
// later ones, so a learner applies exactly what the sync promised before it
// answers, and no reply that follows the sync carries an older zxid.
//
// While a reconfiguration is in flight, it and every txn after it commit
// only with a quorum of the active configuration and a quorum of the
// proposed one (ZooKeeper's Proposal with two quorum verifiers); the
// reconfiguration commits in a step of its own, which activates it.
func (n *Node) tryCommit() {
	l := n.lead
	if l.retiring {
		return
	}
	acks := map[PeerID]zxid.ID{n.id: n.durable}
	for id, p := range l.learners {
		if !p.observer && p.phase == phaseUpToDate {
			acks[id] = p.acked
		}
	}
	z := n.conf.ackedBy(acks)
	if nx := n.next; nx != nil && z >= nx.Version {
		z = max(nx.Version-1, min(z, nx.ackedBy(acks)))
	}
	z = min(z, n.log.last)
	if z <= n.committed {
		return
	}
	for {
		step := z
		if u, ok := n.nextSyncPoint(); ok && u < z {
			step = u
		}
		if nx := n.next; nx != nil && nx.Version > n.committed && nx.Version < step {
			step = nx.Version
		}
		n.commitStep(step)
		n.answerSyncs()
		if step == z || l.retiring {
			return
		}
	}
}

// nextSyncPoint returns the lowest zxid a pending sync waits for, above the
// commit point.
func (n *Node) nextSyncPoint() (zxid.ID, bool) {
	best, ok := zxid.ID(0), false
	for _, s := range n.lead.remoteSyncs {
		if s.upTo > n.committed && (!ok || s.upTo < best) {
			best, ok = s.upTo, true
		}
	}
	for _, u := range n.lead.syncs {
		if u > n.committed && (!ok || u < best) {
			best, ok = u, true
		}
	}
	return best, ok
}

// commitStep commits up to z and tells the learners.
func (n *Node) commitStep(z zxid.ID) {
	if z <= n.committed {
		return
	}
	newly := n.log.between(n.committed, z)
	// tryCommit ends a step at a reconfiguration: it is z or not in it.
	var activating zxid.ID
	var designated PeerID
	if nx := n.next; nx != nil && nx.Version == z {
		activating, designated = z, n.designatedLeader(*nx)
	}
	n.stats.Commits += int64(len(newly))
	n.commitTo(z)
	for _, id := range n.sortedLearners() {
		p := n.lead.learners[id]
		switch {
		case !p.forward:
		case p.dialect == DialectZooKeeper:
			// One COMMIT per PROPOSAL, in order; none when the commit point
			// moved over no txn (a quorum of NEWLEADER acks).
			n.commitToLearner(p, newly, activating, designated)
		case p.observer:
			for _, e := range newly {
				n.send(informOf(id, e, activating, designated))
			}
		default:
			n.send(commitOf(id, z, activating, designated))
		}
	}
	if activating != 0 && designated != n.id {
		n.retire()
	}
}

// syncRequest queues a learner's sync until everything proposed so far is
// committed (Apache ZooKeeper's Leader.processSync).
func (n *Node) syncRequest(from PeerID) {
	n.lead.remoteSyncs = append(n.lead.remoteSyncs, remoteSync{from: from, upTo: n.log.last})
	n.answerSyncs()
}

// answerSyncs answers every sync whose point is committed: a learner's
// with SYNC, a local one in Ready.SyncsDone at the current end of
// Committed.
func (n *Node) answerSyncs() {
	l := n.lead
	k := 0
	for _, s := range l.remoteSyncs {
		if s.upTo > n.committed {
			l.remoteSyncs[k] = s
			k++
			continue
		}
		if p := l.learners[s.from]; p != nil {
			n.send(Message{Type: MsgSync, To: s.from, Zxid: n.committed})
		}
	}
	l.remoteSyncs = l.remoteSyncs[:k]
	k = 0
	for _, upTo := range l.syncs {
		if upTo > n.committed {
			l.syncs[k] = upTo
			k++
			continue
		}
		n.ready.SyncsDone = append(n.ready.SyncsDone, len(n.ready.Committed))
	}
	l.syncs = l.syncs[:k]
}

// tickLeader pings learners every PingTicks, drops silent ones, and gives up leadership
// when it cannot establish the epoch in time or loses its quorum.
func (n *Node) tickLeader() {
	l := n.lead
	if l.retiring && n.advanced >= l.retireAfter {
		n.becomeLooking()
		return
	}
	l.pingIn--
	ping := l.pingIn <= 0
	if ping {
		l.pingIn = n.cfg.PingTicks
	}
	for _, id := range n.sortedLearners() {
		p := l.learners[id]
		p.quietTicks++
		limit := n.cfg.SyncLimitTicks
		if p.phase < phaseUpToDate {
			limit = n.cfg.InitLimitTicks
		}
		if p.quietTicks > limit {
			l.dropLearner(id)
			n.ready.Disconnect = append(n.ready.Disconnect, id)
			n.holdLate(id)
			continue
		}
		if p.forward && ping {
			n.send(Message{Type: MsgPing, To: id, Zxid: n.log.last})
		}
	}
	if !l.established {
		l.ticks++
		if l.ticks > n.cfg.InitLimitTicks {
			n.becomeLooking()
		}
		return
	}
	alive := map[PeerID]bool{n.id: true}
	for id, p := range l.learners {
		if p.phase == phaseUpToDate {
			alive[id] = true
		}
	}
	if !n.quorum(alive) {
		n.becomeLooking()
	}
}

func (n *Node) sortedLearners() []PeerID {
	l := n.lead
	if l.sorted == nil {
		l.sorted = make([]PeerID, 0, len(l.learners))
		for id := range l.learners {
			l.sorted = append(l.sorted, id)
		}
		slices.Sort(l.sorted)
	}
	return l.sorted // callers only read it; a change makes a new one
}

func (l *leaderState) addLearner(id PeerID, p *peerState) {
	l.learners[id] = p
	l.sorted = nil
}

func (l *leaderState) dropLearner(id PeerID) {
	delete(l.learners, id)
	l.sorted = nil
}
