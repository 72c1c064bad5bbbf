package sim

import (
	"fmt"
	"slices"
	"strings"

	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// End-of-run budgets, in ticks. The cluster must converge and every
// abandoned session expire within them; sessions time out after at most 40
// ticks, and an election takes a few.
const (
	drainTicks  = 300
	settleTicks = 1200
)

// finish ends the run: heal everything, let clients finish what they have
// in flight, have every client leave without closing its session, and wait
// until the servers agree and every session has expired. Then the final
// history is replayed for the checkers.
func (c *Cluster) finish() {
	c.tracef("healing: every server up, no partitions, no delays")
	c.net.healAll()
	for _, s := range c.servers[1:] {
		s.disk.disarm()
		c.resume(s, s.inc)
		if !s.up {
			c.start(s)
		}
	}
	for _, cl := range c.clients {
		cl.draining = true
	}
	c.runTicksUntil(drainTicks, c.drained)
	for _, cl := range c.clients {
		if !cl.gone {
			c.hangUp(cl, "leaving")
			cl.gone = true
		}
	}
	c.tracef("clients gone; waiting for convergence and session expiry")
	if !c.runTicksUntil(settleTicks, c.settled) {
		c.violate("liveness", "the healed cluster did not converge with every session expired within %d ticks: %s",
			settleTicks, c.describeServers())
		return
	}
	l := c.servingLeader()
	c.oracle.final = c.oracle.replay(c, slices.Clone(l.hist))
	if f := c.oracle.final; f != nil {
		for _, t := range f.txns {
			if t.Header.Type == zkproto.OpCloseSession && t.Header.Cxid == 0 {
				c.stats.Expired++
			}
		}
	}
}

// runTicksUntil runs whole ticks until cond has held at the end of two
// ticks in a row, at most max ticks. It reports whether cond held.
func (c *Cluster) runTicksUntil(max int, cond func() bool) bool {
	held := 0
	for range max {
		if c.halted != "" {
			return false
		}
		c.runUntil(c.nowMs + c.opts.TickMs)
		if !cond() {
			held = 0
			continue
		}
		if held++; held == 2 {
			return true
		}
	}
	return false
}

// drained reports whether no client waits for a reply.
func (c *Cluster) drained() bool {
	for _, cl := range c.clients {
		if cn := cl.conn; cn != nil && (cn.handshake || len(cn.pending) > 0) {
			return false
		}
	}
	return true
}

// settled reports whether every server is up and serves under one leader,
// has applied everything the leader logged, no session is left and no
// ephemeral znode.
func (c *Cluster) settled() bool {
	l := c.servingLeader()
	if l == nil {
		return false
	}
	if l.peer == nil {
		return l.standaloneSettled()
	}
	last := l.peer.Node().LastZxid()
	if l.peer.Node().Committed() != last || l.peer.Core().Sessions().Len() != 0 {
		return false
	}
	for _, s := range c.servers[1:] {
		if !s.up {
			return false
		}
		n, zk := s.peer.Node(), s.peer.Core()
		if !n.Serving() || n.Leader() != l.id || zk.LastZxid() != last || zk.Tree().EphemeralCount() != 0 {
			return false
		}
	}
	return true
}

// describeServers summarises every server's state for a message.
func (c *Cluster) describeServers() string {
	var b strings.Builder
	for _, s := range c.servers[1:] {
		if !s.up {
			fmt.Fprintf(&b, "[%d down] ", s.id)
			continue
		}
		if s.peer == nil {
			fmt.Fprintf(&b, "[%d standalone applied=%s batch=%v queued=%v ephemerals=%d sessions=%d] ", s.id, s.core.LastZxid(),
				s.soloBatch, s.member.Queued(), s.core.Tree().EphemeralCount(), s.core.Sessions().Len())
			continue
		}
		n, zk := s.peer.Node(), s.peer.Core()
		fmt.Fprintf(&b, "[%d %s leader=%d serving=%v epoch=%d log=%s committed=%s applied=%s ephemerals=%d sessions=",
			s.id, n.Role(), n.Leader(), n.Serving(), n.Epoch(), n.LastZxid(), n.Committed(), zk.LastZxid(),
			zk.Tree().EphemeralCount())
		for _, ss := range zk.Sessions().All() {
			fmt.Fprintf(&b, "%#x(closing=%v expires=%+dms) ", uint64(ss.ID), ss.Closing, ss.ExpiresAtMs-s.now().MonoMs)
		}
		b.WriteString("] ")
	}
	return b.String()
}

// firstDifference returns the first index where a and b differ.
func firstDifference(a, b []zxid.ID) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
