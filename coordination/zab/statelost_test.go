package zab

import (
	"math/rand/v2"
	"testing"

	"keeper/coordination/zxid"
)

// A voter whose data was lost restarts empty with StateLost. It must not
// help a member that lacks txns it acknowledged to win an election, and it
// rejoins only through a SNAP, after which it votes again.
func TestStateLostMemberRejoinsBySnapshot(t *testing.T) {
	tests := []struct {
		name string
		// observer makes the member that loses its state an observer.
		observer bool
	}{
		{name: "voter"},
		{name: "observer", observer: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var observers []PeerID
			if tc.observer {
				observers = []PeerID{4}
			}
			c := newCluster(t, three, observers, nil)
			c.until(1000, "stable", func() bool { _, ok := c.stable(); return ok })
			l, _ := c.stable()
			var others []PeerID
			for _, id := range three {
				if id != l {
					others = append(others, id)
				}
			}
			lost, lagging := others[0], others[1]
			if tc.observer {
				lost = 4
			}
			first := c.propose(l, 3)
			c.until(500, "first txns applied", func() bool { return c.appliedUpTo(first[2]) })

			// The lagging voter misses w, which the leader and the member
			// about to lose its data acknowledge.
			c.crash(lagging)
			w := c.propose(l, 2)
			c.until(500, "w applied", func() bool { return c.appliedUpTo(w[1]) })
			c.crash(l)
			c.crash(lost)
			c.logs[lost], c.snaps[lost] = nil, nil // the epoch files stay
			cfg := c.cfgs[lost]
			cfg.StateLost = true
			c.cfgs[lost] = cfg
			c.start(lost)
			c.start(lagging)
			if !tc.observer {
				// Without the leader, the lagging voter has no one to
				// elect it: the member that lost its state takes no part.
				for i := 0; i < 3000; i++ {
					c.step()
					for _, id := range []PeerID{lost, lagging} {
						if c.nodes[id].Role() != Looking {
							t.Fatalf("step %d: node %d is %s while the only voter with w is down\nroles: %s",
								i, id, c.nodes[id].Role(), c.roles())
						}
					}
				}
			}
			c.start(l)
			c.until(5000, "everyone serves w", func() bool { _, ok := c.stable(); return ok && c.appliedUpTo(w[1]) })
			if len(c.snaps[lost]) == 0 {
				t.Fatalf("node %d rejoined without a snapshot", lost)
			}
			c.checkPrefix()
			if tc.observer {
				return
			}
			// With the leader's state installed it is a voter again: it
			// and the lagging voter elect a leader without the old one.
			c.crash(l)
			c.until(5000, "a leader without the old one", func() bool { nl, ok := c.stable(); return ok && nl != l })
			nl, _ := c.stable()
			more := c.propose(nl, 1)
			c.until(500, "a new txn applied", func() bool { return c.appliedUpTo(more[0]) })
			c.checkPrefix()
		})
	}
}

// A member that lost its state cannot claim a log.
func TestStateLostValidate(t *testing.T) {
	tests := []struct {
		name    string
		last    zxid.ID
		recent  []Entry
		wantErr bool
	}{
		{name: "empty", last: 0},
		{name: "a last zxid", last: zxid.Make(1, 3), wantErr: true},
		{name: "a recent tail", last: zxid.Make(1, 1), recent: entries(1, 1), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ID: 1, Voters: three, InitLimitTicks: 10, SyncLimitTicks: 5, LastZxid: tc.last,
				Recent: tc.recent, StateLost: true, Rand: rand.New(rand.NewPCG(1, 1))}
			if err := cfg.Validate(); (err != nil) != tc.wantErr {
				t.Fatalf("Validate: %v, want an error: %v", err, tc.wantErr)
			}
		})
	}
}
