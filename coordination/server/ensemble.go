package server

import (
	"net"
	"slices"

	"keeper/coordination/admin"
	"keeper/coordination/zab"
)

// ensembleFacts describes this member and the ensemble for the admin
// server's quorum commands; it runs on the loop. ok is false for a
// standalone server.
func (s *Server) ensembleFacts() (admin.EnsembleFacts, bool) {
	if s.quorum == nil {
		return admin.EnsembleFacts{}, false
	}
	q := s.cfg.Quorum
	n := s.quorum.peer.Node()
	f := admin.EnsembleFacts{
		MyID:     int64(q.MyID),
		Leading:  n.Role() == zab.Leading,
		Phase:    n.Phase().String(),
		Voting:   slices.Contains(q.Voters, q.MyID),
		LastZxid: n.LastZxid(),
	}
	if s.ln != nil {
		f.ClientAddr = s.ln.Addr().String()
	}
	if n.Role() != zab.Looking {
		f.LeaderID = int64(n.Leader())
		if host, _, err := net.SplitHostPort(q.Peers[n.Leader()].Quorum); err == nil {
			f.LeaderHost = host
		}
	}
	ids := make([]zab.PeerID, 0, len(q.Peers))
	for id := range q.Peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := admin.Member{ID: int64(id), QuorumAddr: q.Peers[id].Quorum, ElectionAddr: q.Peers[id].Election,
			Observer: slices.Contains(q.Observers, id)}
		if id == q.MyID {
			m.ClientAddr = f.ClientAddr
		}
		f.Members = append(f.Members, m)
	}
	for _, l := range n.Learners() {
		f.Learners = append(f.Learners, admin.LearnerFacts{ID: int64(l.ID), Observer: l.Observer, Synced: l.Synced,
			LastZxid: l.Acked, PacketsReceived: l.PacketsReceived, PacketsSent: l.PacketsSent, Requests: l.Requests})
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
