package sim

import (
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
)

// link is one direction, from -> to, of the quorum connection between two
// servers. It behaves like TCP: FIFO while up. When the connection fails,
// whatever is in flight is lost and each end is told (MsgDisconnected,
// queued on the link so that it arrives before anything sent later). Until
// an end has been told, it is still writing to the dead connection: what it
// sends is lost. Only after that does it reach the other end again, on a
// new connection.
type link struct {
	gen      uint64 // bumped on every failure; messages of older generations are lost
	lastAtMs int64  // delivery time of the newest message, to keep FIFO
	// unaware counts the failures the sending end has not been told of yet;
	// while it is positive, its messages go to a dead connection.
	unaware  int
	cut      bool  // partitioned: nothing crosses
	slowMs   int64 // extra latency while a delay fault lasts
	slowTill int64
}

// network is the servers' mesh: quorum links and the (lossy, unordered)
// election channel.
type network struct {
	c     *Cluster
	links [][]*link // [from][to]
	// electionLossPerMille is the chance an election notification is lost.
	electionLossPerMille int
}

func (n *network) init(c *Cluster, servers int) {
	n.c = c
	n.links = make([][]*link, servers+1)
	for i := range n.links {
		n.links[i] = make([]*link, servers+1)
		for j := range n.links[i] {
			n.links[i][j] = &link{}
		}
	}
	n.electionLossPerMille = c.rng.IntN(60)
}

// latencyMs draws one message's latency on l (nil: a client connection).
func (n *network) latencyMs(l *link) int64 {
	d := 1 + n.c.rng.Int64N(8)
	if n.c.rng.IntN(50) == 0 {
		d += n.c.rng.Int64N(60) // an occasional straggler
	}
	if l != nil && l.slowTill > n.c.nowMs {
		d += n.c.rng.Int64N(l.slowMs + 1)
	}
	return d
}

// transport is one server incarnation's peer.Transport.
type transport struct {
	c   *Cluster
	id  zab.PeerID
	inc int
}

// Send puts messages on the wire. Notifications go on the lossy election
// channel; everything else on the FIFO quorum link, where a message for a
// peer that is down or cut off fails the link.
func (t transport) Send(ms []zab.Message) {
	c := t.c
	if s := c.servers[t.id]; !s.up || s.inc != t.inc {
		return
	}
	for _, m := range ms {
		m.From = t.id
		c.net.send(m)
	}
}

// Disconnect closes the quorum connection to p: what is in flight is lost
// and p is told. The closing end knows at once.
func (t transport) Disconnect(p zab.PeerID) {
	c := t.c
	if s := c.servers[t.id]; !s.up || s.inc != t.inc {
		return
	}
	c.net.bump(t.id, p)
	c.net.tell(t.id, p)
}

func (n *network) send(m zab.Message) {
	c := n.c
	to := c.servers[m.To]
	l := n.links[m.From][m.To]
	if m.Type == zab.MsgNotification {
		if l.cut || !to.up || c.rng.IntN(1000) < n.electionLossPerMille {
			return
		}
		c.schedule(c.nowMs+n.latencyMs(l), event{kind: evElectionMsg, server: int(m.To), inc: to.inc, msg: m})
		return
	}
	switch {
	case l.unaware > 0:
		if c.tracing() {
			c.debugf("lost on a dead connection: %s", m)
		}
		return // written to a connection that is already dead
	case l.cut || !to.up:
		n.fail(m.From, m.To) // the connection attempt fails
		return
	}
	at := max(c.nowMs+n.latencyMs(l), l.lastAtMs)
	l.lastAtMs = at
	c.schedule(at, event{kind: evPeerMsg, server: int(m.To), inc: to.inc, gen: l.gen, msg: m})
}

// bump loses everything in flight between a and b, both ways.
func (n *network) bump(a, b zab.PeerID) {
	n.links[a][b].gen++
	n.links[b][a].gen++
}

// tell queues, for server `to`, the news that its connection to `from`
// failed: on the link from `from`, so that it arrives before anything sent
// later. Until it arrives, what `to` sends to `from` is lost.
func (n *network) tell(from, to zab.PeerID) {
	c := n.c
	s := c.servers[to]
	if !s.up {
		return
	}
	n.links[to][from].unaware++
	l := n.links[from][to]
	at := max(c.nowMs+1+c.rng.Int64N(5), l.lastAtMs)
	l.lastAtMs = at
	m := zab.Message{Type: zab.MsgDisconnected, From: from, To: to}
	c.schedule(at, event{kind: evPeerMsg, server: int(to), inc: s.inc, gen: l.gen, msg: m})
}

// fail breaks the connection between a and b: in-flight messages are lost
// and both ends hear of it.
func (n *network) fail(a, b zab.PeerID) {
	n.bump(a, b)
	n.tell(b, a)
	n.tell(a, b)
}

// restarted forgets a server's old connections: a new process has none.
func (n *network) restarted(id zab.PeerID) {
	for o := range n.links {
		n.links[id][o].unaware = 0
	}
}

// setCut partitions (or heals) the link between a and b; a cut fails it.
func (n *network) setCut(a, b zab.PeerID, cut bool) {
	if a == b {
		return
	}
	was := n.links[a][b].cut
	n.links[a][b].cut, n.links[b][a].cut = cut, cut
	if cut && !was {
		n.fail(a, b)
	}
}

// healPartitions ends every partition.
func (n *network) healPartitions() {
	healed := false
	for a := 1; a < len(n.links); a++ {
		for b := 1; b < len(n.links); b++ {
			healed = healed || n.links[a][b].cut
			n.links[a][b].cut = false
		}
	}
	if healed {
		n.c.tracef("partitions healed")
	}
}

// healAll ends every partition and delay.
func (n *network) healAll() {
	n.healPartitions()
	for a := 1; a < len(n.links); a++ {
		for b := 1; b < len(n.links); b++ {
			n.links[a][b].slowTill = 0
		}
	}
}

// deliverPeer hands a message to its server, unless the server is gone or
// the connection failed since it was sent. News of a failure is local to
// the server and always arrives.
func (c *Cluster) deliverPeer(e *event) {
	s := c.servers[e.server]
	if !s.up || s.inc != e.inc {
		return
	}
	news := e.kind == evPeerMsg && e.msg.Type == zab.MsgDisconnected
	if e.kind == evPeerMsg && !news && c.net.links[e.msg.From][e.msg.To].gen != e.gen {
		return
	}
	if s.paused {
		s.hold(e)
		return
	}
	if news {
		c.net.links[e.msg.To][e.msg.From].unaware--
	}
	if e.kind == evPeerMsg {
		if c.tracing() {
			c.debugf("deliver %s", e.msg)
		}
	}
	c.drive(s, "step", func(now zkcore.Now) {
		_ = s.peer.Step(e.msg, now) // errors are stale or unexpected messages; Zab ignores them too
	})
}
