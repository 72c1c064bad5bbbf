package server

import (
	"maps"
	"net"
	"slices"

	"keeper/coordination/admin"
	"keeper/coordination/peer"
	"keeper/coordination/quorumnet"
	"keeper/coordination/zab"
	"keeper/coordination/zoocfg"
	"keeper/internal/metric"
)

// zabMetrics are ZooKeeper's quorum counters, which the Zab node counts
// (zab.Stats) and the loop copies into the registry after each step, the
// quorum timings the loop takes from the node's role and phase as they
// change (phases), and the per-txn latencies the peer measures. A
// standalone server registers them too and reports 0, as ZooKeeper does.
type zabMetrics struct {
	proposals, commits                 *metric.Counter
	proposalsReceived, commitsReceived *metric.Counter
	elections, diffSyncs, snapSyncs    *metric.Counter
	copied                             zab.Stats // what has been added so far (loop)
	inflightDiff, inflightSnap         *metric.Summary
	phases                             phaseTimes
	peer                               *peer.Metrics
	links                              *quorumnet.LinkMetrics // the leader's send queues to its learners
}

func newZabMetrics(r *metric.Registry) *zabMetrics {
	return &zabMetrics{
		proposals:         r.Counter("proposal_count"),
		commits:           r.Counter("commit_count"),
		proposalsReceived: r.Counter("learner_proposal_received_count"),
		commitsReceived:   r.Counter("learner_commit_received_count"),
		elections:         r.Counter("looking_count"),
		diffSyncs:         r.Counter("diff_count"),
		snapSyncs:         r.Counter("snap_count"),
		inflightDiff:      r.Summary("inflight_diff_count", false),
		inflightSnap:      r.Summary("inflight_snap_count", false),
		phases:            newPhaseTimes(r),
		peer:              peer.NewMetrics(r),
		links:             quorumnet.NewLinkMetrics(r),
	}
}

// update adds what the node counted since the last update. A leader that
// began syncing learners records, once per sync begun, how many of its
// learners are being synced (that one included): ZooKeeper's
// inflight_diff_count and inflight_snap_count, the syncs in progress when
// one begins.
func (m *zabMetrics) update(n *zab.Node) {
	st := n.Stats()
	c := &m.copied
	m.proposals.Add(st.Proposals - c.Proposals)
	m.commits.Add(st.Commits - c.Commits)
	m.proposalsReceived.Add(st.ProposalsReceived - c.ProposalsReceived)
	m.commitsReceived.Add(st.CommitsReceived - c.CommitsReceived)
	m.elections.Add(st.Elections - c.Elections)
	m.diffSyncs.Add(st.DiffSyncs - c.DiffSyncs)
	m.snapSyncs.Add(st.SnapSyncs - c.SnapSyncs)
	if diffs, snaps := st.DiffSyncs-c.DiffSyncs, st.SnapSyncs-c.SnapSyncs; diffs > 0 || snaps > 0 {
		var syncing int64
		for _, l := range n.Learners() {
			if !l.Synced {
				syncing++
			}
		}
		for range diffs {
			m.inflightDiff.Add(syncing)
		}
		for range snaps {
			m.inflightSnap.Add(syncing)
		}
	}
	m.copied = st
}

// quorumPacketBaseBytes is what ZooKeeper's LearnerHandler counts for a
// queued QuorumPacket besides its data (an int, a long, and two
// references), for the observers command's queued_packets_size.
const quorumPacketBaseBytes = 4 + 8 + 8 + 8

// ensembleFacts describes this member and the ensemble for the admin
// server's quorum commands; it runs on the loop. ok is false for a
// standalone server.
func (s *Server) ensembleFacts() (admin.EnsembleFacts, bool) {
	if s.quorum == nil {
		return admin.EnsembleFacts{}, false
	}
	q := s.cfg.Quorum
	n := s.quorum.peer.Node()
	voters, observers, addrs := s.members()
	f := admin.EnsembleFacts{
		MyID:     int64(q.MyID),
		Leading:  n.Role() == zab.Leading,
		Phase:    n.Phase().String(),
		Voting:   slices.Contains(voters, q.MyID),
		LastZxid: n.LastZxid(),
	}
	if ln := s.clientListener(); ln != nil {
		f.ClientAddr = ln.Addr().String()
	}
	if n.Role() != zab.Looking {
		f.LeaderID = int64(n.Leader())
		if host, _, err := net.SplitHostPort(addrs[n.Leader()].Quorum); err == nil {
			f.LeaderHost = host
		}
	}
	ids := slices.Concat(voters, observers)
	slices.Sort(ids)
	for _, id := range ids {
		m := admin.Member{ID: int64(id), QuorumAddr: addrs[id].Quorum, ElectionAddr: addrs[id].Election,
			Observer: slices.Contains(observers, id)}
		if id == q.MyID {
			m.ClientAddr = f.ClientAddr
		}
		f.Members = append(f.Members, m)
	}
	for _, l := range n.Learners() {
		lf := admin.LearnerFacts{ID: int64(l.ID), Observer: l.Observer, Synced: l.Synced,
			LastZxid: l.Acked, PacketsReceived: l.PacketsReceived, PacketsSent: l.PacketsSent, Requests: l.Requests}
		if ls, ok := s.quorum.tr.Link(l.ID); ok {
			lf.Link = &admin.LinkFacts{Remote: "/" + ls.Remote.String(), EstablishedMs: ls.Established.UnixMilli(),
				QueuedPackets: int64(ls.QueuedMessages), QueuedPacketsBytes: ls.QueuedBytes + quorumPacketBaseBytes*int64(ls.QueuedMessages)}
		}
		f.Learners = append(f.Learners, lf)
	}
	return f, true
}

// resetObservers zeroes a leader's per-observer figures; it runs on the
// loop.
func (s *Server) resetObservers() {
	if s.quorum != nil {
		s.quorum.peer.Node().ResetObserverStats()
	}
}

// members is the active configuration: its voters and observers, and
// every member's quorum and election addresses (zoo.cfg's, or those of
// the configuration's text once reconfiguration changed it). It runs on
// the loop.
func (s *Server) members() (voters, observers []zab.PeerID, addrs map[zab.PeerID]quorumnet.PeerAddrs) {
	m := s.quorum.peer.Node().Membership()
	addrs = maps.Clone(s.cfg.Quorum.Peers)
	if e, err := zoocfg.ParseNextDynamic(m.Text, "configuration"); err == nil {
		for _, srv := range e.Servers {
			addrs[zab.PeerID(srv.ID)] = peerAddrs(srv)
		}
	}
	return m.Voters, m.Observers, addrs
}
