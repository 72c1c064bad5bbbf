package zab

import (
	"slices"
	"testing"
)

// Every node goes from election through discovery and synchronization to
// broadcast, never backwards while the leader stays, and the leader's view
// of its learners counts what passed between them.
func TestPhasesAndLearnerStats(t *testing.T) {
	c := newCluster(t, three, []PeerID{4}, nil)
	seen := map[PeerID][]Phase{}
	record := func() {
		for _, id := range c.ids {
			ph := c.nodes[id].Phase()
			if s := seen[id]; len(s) == 0 || s[len(s)-1] != ph {
				seen[id] = append(s, ph)
			}
		}
	}
	for i := 0; i < 2000; i++ {
		record()
		if _, ok := c.stable(); ok {
			break
		}
		c.step()
	}
	record()
	l, ok := c.stable()
	if !ok {
		t.Fatalf("no stable leader: %s", c.roles())
	}
	for _, id := range c.ids {
		got := seen[id]
		if got[0] != PhaseElection || got[len(got)-1] != PhaseBroadcast {
			t.Errorf("node %d went through %v", id, got)
		}
		if !slices.IsSorted(got) && id == l {
			t.Errorf("leader %d went back a phase: %v", id, got)
		}
	}
	zs := c.propose(l, 3)
	c.until(500, "applied", func() bool { return c.appliedUpTo(zs[2]) })
	c.nodes[l].NoteRequest(4)
	ls := c.nodes[l].Learners()
	if len(ls) != 3 {
		t.Fatalf("leader %d reports %d learners, want 3: %+v", l, len(ls), ls)
	}
	for _, s := range ls {
		if !s.Synced || s.PacketsReceived == 0 || s.PacketsSent == 0 || s.Observer != (s.ID == 4) {
			t.Errorf("learner %+v", s)
		}
		if s.Observer && s.Requests != 1 {
			t.Errorf("observer's requests = %d, want 1", s.Requests)
		}
	}
	c.nodes[l].ResetObserverStats()
	for _, s := range c.nodes[l].Learners() {
		if zero := s.PacketsReceived == 0 && s.PacketsSent == 0 && s.Requests == 0; zero != s.Observer {
			t.Errorf("after the observer reset: %+v", s)
		}
	}
	for _, id := range c.ids {
		if id != l && c.nodes[id].Learners() != nil {
			t.Errorf("learner %d reports learners", id)
		}
	}
}

func TestPhaseNames(t *testing.T) {
	for ph, want := range map[Phase]string{PhaseElection: "election", PhaseDiscovery: "discovery",
		PhaseSynchronization: "synchronization", PhaseBroadcast: "broadcast", Phase(9): "unknown"} {
		if ph.String() != want {
			t.Errorf("%d: %q, want %q", ph, ph.String(), want)
		}
	}
}

// The counts follow what the nodes did: an election each, a sync per
// learner, and each proposal proposed, committed and received.
func TestStats(t *testing.T) {
	c := newCluster(t, three, nil, nil)
	c.until(1000, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	if st := c.nodes[l].Stats(); st.LastProposalBytes != -1 || st.MinProposalBytes != -1 {
		t.Errorf("proposal sizes before any proposal: %+v", st)
	}
	zs := c.propose(l, 3)
	c.until(500, "applied", func() bool { return c.appliedUpTo(zs[2]) })
	st := c.nodes[l].Stats()
	if st.Proposals != 3 || st.Commits != 3 || st.DiffSyncs+st.SnapSyncs != 2 || st.Elections < 1 {
		t.Errorf("leader: %+v", st)
	}
	if size := int64(len("txn " + zs[2].String())); st.LastProposalBytes != size || st.MaxProposalBytes != size ||
		st.MinProposalBytes != int64(len("txn "+zs[0].String())) {
		t.Errorf("leader's proposal sizes: %+v", st)
	}
	for _, id := range c.ids {
		if id == l {
			continue
		}
		st := c.nodes[id].Stats()
		if st.ProposalsReceived != 3 || st.CommitsReceived < 1 || st.Proposals != 0 || st.Elections < 1 {
			t.Errorf("follower %d: %+v", id, st)
		}
	}
}
