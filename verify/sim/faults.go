package sim

import (
	"math/rand/v2"

	"keeper/coordination/zab"
)

// faultPlan is how hard a run is hit. Rates are per tick, in thousandths;
// each run draws its own, so some seeds are calm and others brutal.
type faultPlan struct {
	off bool

	crashPerMille     int // crash a server (keeping a quorum up)
	quorumLossPercent int // chance a crash may take the quorum down
	failpointPerMille int // arm a crash at a storage operation
	restartPerMille   int // restart a down server (per down server)
	isolatePerMille   int // cut the leader off
	halvesPerMille    int // split the servers in two random groups
	cutPerMille       int // cut one link
	breakPerMille     int // fail one link once (a TCP reset)
	healPerMille      int // end every partition
	slowPerMille      int // slow a link for a while
	pausePerMille     int // stop a server's process for a while (SIGSTOP)
	dropPerMille      int // reset one client connection
}

func newFaultPlan(rng *rand.Rand, off bool) faultPlan {
	intensity := 1 + rng.IntN(4) // 1 calm .. 4 brutal
	p := func(base int) int { return base * intensity / 2 }
	return faultPlan{
		off:               off,
		crashPerMille:     p(12),
		quorumLossPercent: rng.IntN(30),
		failpointPerMille: p(8),
		restartPerMille:   60 + rng.IntN(80),
		isolatePerMille:   p(8),
		halvesPerMille:    p(5),
		cutPerMille:       p(8),
		breakPerMille:     p(10),
		healPerMille:      40 + rng.IntN(60),
		slowPerMille:      p(15),
		pausePerMille:     p(5),
		dropPerMille:      p(10),
	}
}

// injectFaults draws this tick's faults.
func (c *Cluster) injectFaults() {
	f := &c.faults
	if f.off {
		return
	}
	roll := func(perMille int) bool { return c.rng.IntN(1000) < perMille }
	if roll(f.crashPerMille) {
		c.faultCrash()
	}
	if roll(f.failpointPerMille) {
		c.faultFailpoint()
	}
	for _, s := range c.servers[1:] {
		if !s.up && roll(f.restartPerMille) {
			c.start(s)
		}
	}
	if !c.opts.Standalone { // one server: no links between servers to cut
		c.injectPartitions(roll)
	}
	if roll(f.pausePerMille) {
		s := c.servers[1+c.rng.IntN(len(c.ids))]
		if s.up && !s.paused {
			c.pause(s, (2+c.rng.Int64N(40))*c.opts.TickMs)
		}
	}
	if roll(f.dropPerMille) {
		if cl := c.clients[c.rng.IntN(len(c.clients))]; cl.conn != nil && !cl.gone {
			c.tracef("client %d: connection %d to server %d reset", cl.id, cl.conn.id, cl.conn.server)
			c.hangUp(cl, "reset")
		}
	}
	if c.rng.IntN(2000) == 0 {
		if cl := c.clients[c.rng.IntN(len(c.clients))]; !cl.gone && cl.session != 0 {
			c.tracef("client %d abandons session %#x", cl.id, cl.session)
			c.hangUp(cl, "abandon")
			cl.forgetSession()
		}
	}
}

// faultCrash crashes a random running server, keeping a quorum up unless
// this run allows losing it.
func (c *Cluster) faultCrash() {
	s := c.servers[1+c.rng.IntN(len(c.ids))]
	if !s.up {
		return
	}
	up := len(c.upServers())
	if up-1 <= len(c.ids)/2 && c.rng.IntN(100) >= c.faults.quorumLossPercent {
		return
	}
	c.crash(s, "fault")
}

// faultFailpoint arms a crash at a storage operation of a random server,
// often the leader, which writes most.
func (c *Cluster) faultFailpoint() {
	s := c.servers[1+c.rng.IntN(len(c.ids))]
	if l := c.servingLeader(); l != nil && c.rng.IntN(2) == 0 {
		s = l
	}
	if !s.up {
		return
	}
	s.disk.arm(fpFirst+failpoint(c.rng.IntN(int(failpointCount-fpFirst))), c.rng)
	c.tracef("server %d will crash at its next %s", s.id, s.disk.armed)
}

// injectPartitions draws partitions, link failures and delays.
func (c *Cluster) injectPartitions(roll func(int) bool) {
	f := &c.faults
	n := len(c.ids)
	switch {
	case roll(f.isolatePerMille):
		if l := c.servingLeader(); l != nil {
			c.isolate(l.id)
		}
	case roll(f.halvesPerMille):
		c.stats.Partitions++
		side := make([]bool, n+1)
		for i := 1; i <= n; i++ {
			side[i] = c.rng.IntN(2) == 0
		}
		for a := 1; a <= n; a++ {
			for b := a + 1; b <= n; b++ {
				if side[a] != side[b] {
					c.net.setCut(zab.PeerID(a), zab.PeerID(b), true)
				}
			}
		}
		c.tracef("partition: %v", side[1:])
	case roll(f.cutPerMille):
		a, b := zab.PeerID(1+c.rng.IntN(n)), zab.PeerID(1+c.rng.IntN(n))
		if a != b {
			c.stats.Partitions++
			c.net.setCut(a, b, true)
			c.tracef("link %d-%d cut", a, b)
		}
	case roll(f.breakPerMille):
		a, b := zab.PeerID(1+c.rng.IntN(n)), zab.PeerID(1+c.rng.IntN(n))
		if a != b {
			c.net.fail(a, b)
			c.tracef("link %d-%d reset", a, b)
		}
	case roll(f.healPerMille):
		c.net.healPartitions()
	}
	if roll(f.slowPerMille) {
		a, b := 1+c.rng.IntN(n), 1+c.rng.IntN(n)
		l := c.net.links[a][b]
		l.slowMs = 20 + c.rng.Int64N(400)
		l.slowTill = c.nowMs + (1+c.rng.Int64N(30))*c.opts.TickMs
	}
}

// isolate cuts server id off from every other server.
func (c *Cluster) isolate(id zab.PeerID) {
	c.stats.Partitions++
	for _, o := range c.ids {
		c.net.setCut(id, o, true)
	}
	c.tracef("server %d isolated", id)
}
