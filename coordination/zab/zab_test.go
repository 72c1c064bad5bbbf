package zab

import (
	"testing"

	"keeper/coordination/zxid"
)

var three = []PeerID{1, 2, 3}

// With equal histories the highest id leads; everyone serves epoch 1.
func TestElectionEqualHistories(t *testing.T) {
	c := newCluster(t, three, nil, nil)
	c.until(500, "stable", func() bool { _, ok := c.stable(); return ok })
	if l, _ := c.stable(); l != 3 {
		t.Fatalf("leader %d, want 3", l)
	}
	for _, id := range three {
		if c.hard[id].CurrentEpoch != 1 || c.hard[id].AcceptedEpoch != 1 {
			t.Fatalf("node %d persisted %+v", id, c.hard[id])
		}
	}
}

// The longest history wins whatever the ids.
func TestElectionLongestHistory(t *testing.T) {
	c := newCluster(t, three, nil, func(id PeerID, cfg *Config) {
		cfg.HardState = HardState{AcceptedEpoch: 1, CurrentEpoch: 1}
		switch id {
		case 1:
			cfg.Recent = entries(1, 1, 2, 3, 4, 5)
		default:
			cfg.Recent = entries(1, 1, 2)
		}
		cfg.LastZxid = cfg.Recent[len(cfg.Recent)-1].Zxid
	})
	c.until(500, "stable", func() bool { _, ok := c.stable(); return ok })
	if l, _ := c.stable(); l != 1 {
		t.Fatalf("leader %d, want 1", l)
	}
	c.until(10, "applied", func() bool { return c.appliedUpTo(zxid.Make(1, 5)) })
	c.checkPrefix()
	if e := c.nodes[1].Epoch(); e != 2 {
		t.Fatalf("epoch %d, want 2", e)
	}
}

// Proposals reach every follower in order; the first zxid of the new epoch
// is epoch<<32|1.
func TestBroadcast(t *testing.T) {
	c := newCluster(t, three, nil, nil)
	c.until(500, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	zs := c.propose(l, 10)
	if zs[0] != zxid.Make(1, 1) {
		t.Fatalf("first zxid %s", zs[0])
	}
	c.until(200, "all applied", func() bool { return c.appliedUpTo(zs[9]) })
	c.checkPrefix()
}

// When the leader crashes, the others elect a new one in a new epoch, and
// everything committed survives.
func TestLeaderCrash(t *testing.T) {
	c := newCluster(t, three, nil, nil)
	c.until(500, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	zs := c.propose(l, 5)
	c.until(200, "applied", func() bool { return c.appliedUpTo(zs[4]) })
	c.crash(l)
	c.until(1000, "new leader", func() bool { nl, ok := c.stable(); return ok && nl != l })
	nl, _ := c.stable()
	more := c.propose(nl, 3)
	if more[0].Epoch() != 2 {
		t.Fatalf("new epoch %d", more[0].Epoch())
	}
	c.until(200, "applied after failover", func() bool { return c.appliedUpTo(more[2]) })
	c.start(l)
	c.until(1000, "old leader rejoined", func() bool { _, ok := c.stable(); return ok && c.appliedUpTo(more[2]) })
	c.checkPrefix()
}

// A follower holding a txn the new leader never had truncates it.
func TestTruncate(t *testing.T) {
	c := newCluster(t, three, nil, func(id PeerID, cfg *Config) {
		cfg.HardState = HardState{AcceptedEpoch: 1, CurrentEpoch: 1}
		cfg.Recent = entries(1, 1, 2, 3)
		if id == 1 {
			cfg.Recent = entries(1, 1, 2, 3, 4) // 1.4 was never committed
			cfg.HardState = HardState{AcceptedEpoch: 1, CurrentEpoch: 1}
		}
		cfg.LastZxid = cfg.Recent[len(cfg.Recent)-1].Zxid
	})
	// Node 1 is away while 2 and 3 elect and commit in epoch 2.
	c.crash(1)
	c.until(1000, "2 and 3 stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	zs := c.propose(l, 2)
	c.until(200, "applied", func() bool { return c.appliedUpTo(zs[1]) })
	c.start(1)
	c.until(1000, "1 rejoined", func() bool { _, ok := c.stable(); return ok && c.appliedUpTo(zs[1]) })
	for _, e := range c.applied[1] {
		if e.Zxid == zxid.Make(1, 4) {
			t.Fatal("node 1 still applies the uncommitted 1.4")
		}
	}
	c.checkPrefix()
}

// A learner too far behind for the leader's in-memory log gets a snapshot.
func TestSnapSync(t *testing.T) {
	c := newCluster(t, three, nil, func(id PeerID, cfg *Config) { cfg.MaxRecentEntries = 4 })
	c.until(500, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	victim := PeerID(1)
	if victim == l {
		victim = 2
	}
	c.crash(victim)
	zs := c.propose(l, 20)
	c.until(500, "applied", func() bool { return c.appliedUpTo(zs[19]) })
	c.start(victim)
	c.until(2000, "victim caught up", func() bool { _, ok := c.stable(); return ok && c.appliedUpTo(zs[19]) })
	c.checkPrefix()
}

// Observers learn committed txns through INFORM and never vote.
func TestObserver(t *testing.T) {
	c := newCluster(t, three, []PeerID{4, 5}, nil)
	c.until(1000, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	if l == 4 || l == 5 {
		t.Fatalf("observer %d leads", l)
	}
	zs := c.propose(l, 5)
	c.until(500, "observers applied", func() bool { return c.appliedUpTo(zs[4]) })
	c.checkPrefix()
}

// A leader that loses its quorum stops serving.
func TestLeaderLosesQuorum(t *testing.T) {
	c := newCluster(t, three, nil, nil)
	c.until(500, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	for _, id := range three {
		if id != l {
			c.crash(id)
		}
	}
	c.until(200, "leader steps down", func() bool { return !c.nodes[l].Serving() })
}

// TestResyncCommitsWhatTheLearnerLogged: a follower logs and acks a
// proposal but loses its link before the COMMIT arrives, then syncs again
// by a DIFF with nothing to send. The leader must still tell it that the
// txn is committed, or it serves stale data until the next write. (Found by
// the simulator, seed 1199, once proposals left before the leader's fsync.)
func TestResyncCommitsWhatTheLearnerLogged(t *testing.T) {
	c := newCluster(t, []PeerID{1, 2, 3}, nil, nil)
	c.until(5000, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	f := PeerID(1)
	if f == l {
		f = 2
	}
	z := c.propose(l, 1)[0]
	for i := 0; c.nodes[l].committed < z || c.nodes[f].durable < z; i++ {
		if i > 1000 {
			t.Fatalf("not committed at the leader and logged at %d: %s", f, c.roles())
		}
		for _, id := range c.ids {
			c.handle(id)
		}
		if len(c.queue) == 0 {
			continue
		}
		m := c.queue[0]
		c.queue = c.queue[1:]
		if m.Type == MsgCommit && m.To == f {
			continue // lost with the link
		}
		_ = c.nodes[m.To].Step(m)
	}
	c.breakLink(l, f)
	c.until(5000, "the follower applied the txn", func() bool {
		a := c.applied[f]
		return len(a) > 0 && a[len(a)-1].Zxid >= z
	})
}

// A one-voter ensemble (ZooKeeper's standaloneEnabled=false with a single
// participant) elects its only voter at once, serves, commits on its own
// log and leads its observers; after a restart it leads again in a new
// epoch with its history.
func TestLoneVoterLeads(t *testing.T) {
	for _, observers := range [][]PeerID{nil, {2, 3}} {
		c := newCluster(t, []PeerID{1}, observers, nil)
		c.until(500, "stable", func() bool { _, ok := c.stable(); return ok })
		if l, _ := c.stable(); l != 1 {
			t.Fatalf("observers %v: leader %d, want 1", observers, l)
		}
		zs := c.propose(1, 5)
		c.until(500, "applied", func() bool { return c.appliedUpTo(zs[4]) })
		c.checkPrefix()
		c.crash(1)
		c.start(1)
		c.until(500, "stable again", func() bool { _, ok := c.stable(); return ok })
		if e := c.nodes[1].Epoch(); e != 2 {
			t.Fatalf("observers %v: epoch %d after a restart, want 2", observers, e)
		}
		zs = c.propose(1, 2)
		c.until(500, "applied after the restart", func() bool { return c.appliedUpTo(zs[1]) })
		c.checkPrefix()
	}
}
