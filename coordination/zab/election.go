package zab

import (
	"slices"

	"keeper/coordination/zxid"
)

// election is the state of fast leader election (docs/zookeeper-protocol.md §10.2).
type election struct {
	round   uint64             // the logical clock: this node's election round
	vote    Vote               // the node's current proposal
	initial Vote               // the node's own candidacy
	votes   map[PeerID]Message // votes of this round (state and vote), self included
	outside map[PeerID]Message // notifications from peers that left the election
	decided Vote               // the vote that won, reported to latecomers
	// absent holds the voter whose link this node lost when it left its
	// role (the leader it followed, gone with a reset or a closed
	// connection) until a notification shows it is alive: a vote with a
	// quorum waits FinalizeTicks only for voters not in it.
	absent map[PeerID]bool

	finalizeIn int // ticks until deciding on a vote that has a quorum; 0 = not waiting
	quietTicks int // ticks since the last notification arrived
	retryTicks int // current resend interval, doubling

	early map[PeerID]Message // learner infos that arrived before we decided
}

// becomeLooking starts a new election round with the node's own candidacy.
func (n *Node) becomeLooking() {
	n.stats.Elections++
	n.leaveRole()
	n.serving = false
	e := &n.elect
	e.round++
	if !n.standing() {
		// No candidacy: a vote for no one with no zxid, which no peer
		// counts or adopts.
		e.initial = Vote{Leader: 0, Zxid: zxid.None}
	} else {
		e.initial = Vote{Leader: n.id, Zxid: n.log.last, Epoch: n.hard.CurrentEpoch}
	}
	e.vote = e.initial
	e.votes = map[PeerID]Message{}
	e.outside = map[PeerID]Message{}
	e.early = map[PeerID]Message{}
	e.absent = map[PeerID]bool{}
	e.finalizeIn = 0
	e.quietTicks = 0
	e.retryTicks = n.cfg.ElectionRetryTicks
	n.recordOwnVote()
	n.setRole(Looking, 0)
	n.broadcastVote()
	// A lone voter (standaloneEnabled=false with one participant) is a
	// quorum by itself: no notification will come to decide on.
	if n.hasQuorum(e.votes, e.vote, true) && n.heardAll(e.vote) {
		n.decide(e.vote)
	}
}

// leaveRole drops the state of the role the node is leaving; it serves
// no more until its new role is established.
func (n *Node) leaveRole() {
	n.serving = false
	if n.lead != nil {
		for _, id := range n.sortedLearners() {
			n.ready.Disconnect = append(n.ready.Disconnect, id)
			n.holdLate(id)
		}
	}
	if n.learn != nil && n.leader != 0 {
		n.ready.Disconnect = append(n.ready.Disconnect, n.leader)
		n.holdLate(n.leader)
	}
	n.lead, n.learn = nil, nil
}

// standing reports whether the node is a candidate and votes: a voter of
// the active configuration that has a state.
func (n *Node) standing() bool { return n.conf.IsVoter(n.id) && !n.stateLost }

func (n *Node) recordOwnVote() {
	if n.standing() {
		n.elect.votes[n.id] = Message{State: Looking, Round: n.elect.round, Vote: n.elect.vote}
	}
}

// broadcastVote sends the current proposal to every other voter; an
// observer sends too, to learn who leads.
func (n *Node) broadcastVote() {
	for _, p := range n.conf.Voters {
		if p != n.id {
			n.sendVote(p)
		}
	}
}

func (n *Node) sendVote(to PeerID) {
	n.send(Message{Type: MsgNotification, To: to, State: Looking, Round: n.elect.round, Vote: n.elect.vote,
		Data: n.configText()})
}

// configText is the active configuration a notification carries, so that
// a peer that missed a reconfiguration learns it while it looks for a
// leader (docs/zookeeper-protocol.md §10.2); none without a codec.
func (n *Node) configText() []byte {
	if n.codec == nil {
		return nil
	}
	return n.conf.Text
}

// adoptConfig takes the configuration in a notification when it is newer
// than the active one, as ZooKeeper's looking peers do: that configuration
// was committed. It reports whether it did; the election then starts over
// under it.
func (n *Node) adoptConfig(m Message) bool {
	if n.codec == nil || len(m.Data) == 0 {
		return false
	}
	c, err := n.codec.Parse(m.Data)
	if err != nil || c.Version <= n.conf.Version {
		return false
	}
	n.activate(c.clone())
	return true
}

// stepNotification handles a vote from a peer.
func (n *Node) stepNotification(m Message) {
	e := &n.elect
	if n.role != Looking {
		if m.State == Looking {
			// Tell a looking peer who leads now.
			n.send(Message{Type: MsgNotification, To: m.From, State: n.role, Round: e.round, Vote: e.decided,
				Data: n.configText()})
		}
		return
	}
	if n.adoptConfig(m) {
		n.becomeLooking()
		return
	}
	if !n.isVoter(m.From) {
		// Observers and servers outside the configuration never count;
		// a looking one learns from our answer. One that follows or
		// leads gets none: it would answer ours, and the two would
		// trade notifications for ever, holding back our resends.
		if m.State == Looking {
			n.sendVote(m.From)
		}
		return
	}
	e.quietTicks = 0
	delete(e.absent, m.From)
	if m.State == Looking {
		if n.stateLost || m.Vote.Zxid == zxid.None {
			// A member that lost its state neither takes votes nor
			// gives them: it waits to hear of a settled leader.
			return
		}
		n.lookingVote(m)
		return
	}
	n.settledVote(m)
}

// lookingVote handles a notification from a peer that is also looking.
func (n *Node) lookingVote(m Message) {
	e := &n.elect
	switch {
	case m.Round > e.round:
		e.round = m.Round
		clear(e.votes)
		e.vote = e.initial
		if m.Vote.beats(e.vote) && n.isVoter(m.Vote.Leader) {
			e.vote = m.Vote
		}
		n.recordOwnVote()
		n.broadcastVote()
	case m.Round < e.round:
		n.sendVote(m.From) // help it catch up; its vote is stale
		return
	case m.Vote.beats(e.vote) && n.isVoter(m.Vote.Leader):
		e.vote = m.Vote
		n.recordOwnVote()
		n.broadcastVote()
	case m.Vote != e.vote:
		// The peer has not heard our better vote: it was not looking
		// yet when we sent it, or the notification was lost. Tell it
		// now rather than at our next resend (ElectionRetryTicks).
		n.sendVote(m.From)
	}
	e.votes[m.From] = m
	if n.hasQuorum(e.votes, e.vote, true) {
		if n.heardAll(e.vote) {
			n.decide(e.vote)
			return
		}
		if e.finalizeIn == 0 {
			e.finalizeIn = n.cfg.FinalizeTicks
		}
	} else {
		e.finalizeIn = 0
	}
}

// settledVote handles a notification from a peer that follows or leads.
func (n *Node) settledVote(m Message) {
	e := &n.elect
	if m.Round == e.round {
		e.votes[m.From] = m
		if n.hasQuorum(e.votes, m.Vote, false) && n.leaderConfirmed(e.votes, m.Vote.Leader, m.Round) {
			n.decide(m.Vote)
			return
		}
	}
	e.outside[m.From] = m
	if n.hasQuorum(e.outside, m.Vote, false) && n.leaderConfirmed(e.outside, m.Vote.Leader, m.Round) {
		e.round = m.Round
		n.decide(m.Vote)
	}
}

// hasQuorum reports whether a majority of voters in set back v. Looking
// votes must match exactly; settled ones on leader and epoch.
func (n *Node) hasQuorum(set map[PeerID]Message, v Vote, looking bool) bool {
	k := 0
	for _, p := range n.conf.Voters {
		got, ok := set[p]
		if !ok {
			continue
		}
		if got.Vote.Leader == v.Leader && got.Vote.Epoch == v.Epoch && (!looking || got.Vote.Zxid == v.Zxid) {
			k++
		}
	}
	return k > len(n.conf.Voters)/2
}

// heardAll reports whether every voter this node has reason to think
// alive voted v in this round: no better vote can come, so waiting for one
// (FinalizeTicks) would only delay the election. Apache ZooKeeper always
// waits finalizeWait; deciding sooner is safe, since a leader that a better
// candidate follows gives up at ACKEPOCH (ackEpoch), and it costs an
// election round only when a voter thought gone was in fact alive.
func (n *Node) heardAll(v Vote) bool {
	e := &n.elect
	for _, p := range n.conf.Voters {
		if e.absent[p] {
			continue
		}
		if got, ok := e.votes[p]; !ok || got.Vote != v {
			return false
		}
	}
	return true
}

// leaderConfirmed reports whether the proposed leader itself says it leads
// (or, for ourselves, whether it is our round): a quorum of followers is
// not enough if the leader has moved on.
func (n *Node) leaderConfirmed(set map[PeerID]Message, leader PeerID, round uint64) bool {
	if leader == n.id {
		return round == n.elect.round
	}
	got, ok := set[leader]
	return ok && got.State == Leading
}

// tickElection resends notifications when nothing happens and decides once
// a vote with a quorum has gone unchallenged for FinalizeTicks.
func (n *Node) tickElection() {
	e := &n.elect
	if e.finalizeIn > 0 {
		e.finalizeIn--
		if e.finalizeIn == 0 && n.hasQuorum(e.votes, e.vote, true) {
			n.decide(e.vote)
			return
		}
	}
	e.quietTicks++
	if e.quietTicks >= e.retryTicks {
		e.quietTicks = 0
		e.retryTicks = min(2*e.retryTicks, n.cfg.ElectionMaxRetryTicks)
		n.broadcastVote()
	}
}

// settleVote makes the vote this node reports to looking peers the same on
// every member of an established epoch: the leader and the epoch. Votes
// taken in different rounds would otherwise differ, and a latecomer could
// never see a quorum agree.
func (n *Node) settleVote(leader PeerID, epoch zxid.Epoch) {
	n.elect.decided = Vote{Leader: leader, Zxid: zxid.Make(epoch, 0), Epoch: epoch}
}

// decide ends the election with v.
func (n *Node) decide(v Vote) {
	e := &n.elect
	e.decided = v
	e.finalizeIn = 0
	early := e.early
	switch {
	case v.Leader == n.id:
		n.becomeLeading()
		for _, p := range sortedPeers(early) {
			_ = n.stepLeader(early[p])
		}
	case n.observer:
		n.becomeLearner(Observing, v.Leader)
	default:
		n.becomeLearner(Following, v.Leader)
	}
}

func sortedPeers(m map[PeerID]Message) []PeerID {
	out := make([]PeerID, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
