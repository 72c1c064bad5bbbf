package zab

import "keeper/coordination/zxid"

// Phase is the Zab phase a node is in, as ZooKeeper's zabstate command and
// mntr's peer_state name them.
type Phase uint8

// Phases, in the order a node goes through them.
const (
	PhaseElection        Phase = iota // looking for a leader
	PhaseDiscovery                    // a leader gathering epochs, a learner waiting for LEADERINFO
	PhaseSynchronization              // a leader syncing its learners, a learner taking the sync
	PhaseBroadcast                    // serving: proposals and commits
)

func (p Phase) String() string {
	switch p {
	case PhaseElection:
		return "election"
	case PhaseDiscovery:
		return "discovery"
	case PhaseSynchronization:
		return "synchronization"
	case PhaseBroadcast:
		return "broadcast"
	}
	return "unknown"
}

// Phase returns the node's Zab phase. A leader is in discovery until a
// quorum acknowledged the new epoch (ACKEPOCH), then in synchronization
// until a quorum acknowledged NEWLEADER; a learner is in discovery until
// LEADERINFO arrives and in synchronization until UPTODATE, as ZooKeeper
// moves its peers between the phases.
func (n *Node) Phase() Phase {
	switch {
	case n.role == Leading && n.lead != nil:
		switch {
		case n.lead.established:
			return PhaseBroadcast
		case n.lead.epochAcked:
			return PhaseSynchronization
		}
		return PhaseDiscovery
	case (n.role == Following || n.role == Observing) && n.learn != nil:
		switch n.learn.stage {
		case stageInfo:
			return PhaseDiscovery
		case stageServing:
			return PhaseBroadcast
		}
		return PhaseSynchronization
	}
	return PhaseElection
}

// LearnerStats describes one learner as its leader sees it (ZooKeeper's
// LearnerHandler figures).
type LearnerStats struct {
	ID       PeerID
	Observer bool
	// Synced is set once the learner received UPTODATE.
	Synced bool
	// Acked is the learner's last zxid known durable on it: what it
	// acknowledged, or what it reported in discovery.
	Acked zxid.ID
	// PacketsReceived and PacketsSent count the quorum messages from and to
	// the learner since it connected or since ResetObserverStats; Requests
	// counts the client requests it forwarded (NoteRequest).
	PacketsReceived, PacketsSent, Requests int64
}

// Learners returns the leader's learners in id order; nil on a node that
// does not lead.
func (n *Node) Learners() []LearnerStats {
	if n.role != Leading || n.lead == nil {
		return nil
	}
	out := make([]LearnerStats, 0, len(n.lead.learners))
	for _, id := range n.sortedLearners() {
		p := n.lead.learners[id]
		acked := p.acked
		if acked == 0 {
			acked = p.lastZxid
		}
		out = append(out, LearnerStats{ID: id, Observer: p.observer, Synced: p.phase == phaseUpToDate,
			Acked: acked, PacketsReceived: p.received, PacketsSent: p.sent, Requests: p.requests})
	}
	return out
}

// NoteRequest counts a client request a learner forwarded to this leader
// (the caller handles REQUESTs itself; they do not pass through Step).
func (n *Node) NoteRequest(from PeerID) {
	if n.role != Leading || n.lead == nil {
		return
	}
	if p := n.lead.learners[from]; p != nil {
		p.received++
		p.requests++
	}
}

// ResetObserverStats sets the observers' packet and request counts to zero
// (ZooKeeper's observer_connection_stat_reset); a no-op on a node that does
// not lead.
func (n *Node) ResetObserverStats() {
	if n.role != Leading || n.lead == nil {
		return
	}
	for _, p := range n.lead.learners {
		if p.observer {
			p.received, p.sent, p.requests = 0, 0, 0
		}
	}
}

// countSent counts a message the leader sends to one of its learners.
func (n *Node) countSent(m Message) {
	if n.role != Leading || n.lead == nil {
		return
	}
	if p := n.lead.learners[m.To]; p != nil {
		p.sent++
	}
}

// Stats are a node's running counts since it started, for ZooKeeper's
// quorum metrics (docs/observability.md).
type Stats struct {
	// Proposals and Commits count the txns this node proposed and
	// committed as leader (proposal_count, commit_count).
	Proposals, Commits int64
	// ProposalsReceived and CommitsReceived count the PROPOSALs and
	// COMMITs a follower received in broadcast
	// (learner_proposal_received_count, learner_commit_received_count).
	ProposalsReceived, CommitsReceived int64
	// Elections counts the times the node started looking for a leader
	// (looking_count).
	Elections int64
	// DiffSyncs and SnapSyncs count the learners this node brought up to
	// date as leader by sending txns (DIFF, or TRUNC and txns) and by
	// sending a snapshot (diff_count, snap_count).
	DiffSyncs, SnapSyncs int64
	// LastProposalBytes, MinProposalBytes and MaxProposalBytes are the
	// sizes of the txns proposed as leader; -1 before the first
	// (last_proposal_size, min_proposal_size, max_proposal_size).
	LastProposalBytes, MinProposalBytes, MaxProposalBytes int64
	// Reconfigs counts the configurations this node activated.
	Reconfigs int64
}

// Stats returns the node's counts.
func (n *Node) Stats() Stats { return n.stats }

// countProposal records a txn this leader proposes.
func (n *Node) countProposal(size int) {
	st := &n.stats
	b := int64(size)
	st.Proposals++
	st.LastProposalBytes = b
	if st.MinProposalBytes < 0 || b < st.MinProposalBytes {
		st.MinProposalBytes = b
	}
	st.MaxProposalBytes = max(st.MaxProposalBytes, b)
}
