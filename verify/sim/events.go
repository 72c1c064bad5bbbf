package sim

import (
	"container/heap"

	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
)

// eventKind says what an event does when its time comes.
type eventKind uint8

const (
	// evPeerMsg delivers msg to server `server` over a quorum link.
	evPeerMsg eventKind = iota
	// evElectionMsg delivers an election notification (lossy, unordered).
	evElectionMsg
	// evTick lets a tick pass on server `server`.
	evTick
	// evClientWake lets client `client` act: time out, ping, issue an op.
	evClientWake
	// evToServer carries a client frame to the server of connection conn.
	evToServer
	// evToClient carries server bytes to the client of connection conn.
	evToClient
	// evResume ends the pause of server `server`.
	evResume
	// evPersisted hands server `server`'s batch back from its disk.
	evPersisted
	// evSnapshot makes the next hand-off of server `server`'s snapshot job.
	evSnapshot
	// evPurge starts an autopurge pass on server `server`.
	evPurge
	// evPurgeStep takes the next step of server `server`'s autopurge pass.
	evPurgeStep
)

// frameKind is what a client sent on its connection.
type frameKind uint8

const (
	frameConnect frameKind = iota
	frameRequest
	frameClose // the client closed the socket
	// frameWritten is not from the client: the server's socket took
	// `written` bytes of its output (a real server's writer reports it).
	frameWritten
)

// event is one thing that happens at a virtual time. Events at the same
// time happen in the order they were scheduled (seq), so a run is a pure
// function of its seed.
type event struct {
	atMs int64
	seq  uint64
	kind eventKind

	server int    // target server (peer and tick events, client frames)
	inc    int    // the server incarnation the event belongs to
	gen    uint64 // the link generation a peer message was sent on
	msg    zab.Message

	client  int
	conn    zkcore.ConnID
	frame   frameKind
	connect zkproto.ConnectRequest
	payload []byte // a request frame (client to server) or reply frames (server to client)
	close   bool   // server to client: the server closed the connection after payload
	lost    bool   // server to client: the connection broke (server crash, refused connect)
	written int    // frameWritten: bytes the server's socket took

	held bool // kept by a paused server; not to be recycled
}

// eventQueue is a min-heap of events by (atMs, seq).
type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].atMs != q[j].atMs {
		return q[i].atMs < q[j].atMs
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	*q = old[:n-1]
	return e
}

// schedule queues ev at time atMs. Events are recycled once handled.
func (c *Cluster) schedule(atMs int64, ev event) {
	var e *event
	if k := len(c.free); k > 0 {
		e = c.free[k-1]
		c.free = c.free[:k-1]
	} else {
		e = new(event)
	}
	*e = ev
	c.seq++
	e.atMs, e.seq = atMs, c.seq
	heap.Push(&c.events, e)
}

// hold keeps e for a paused server: it is handled later and must not be
// recycled now.
func (s *server) hold(e *event) {
	e.held = true
	s.held = append(s.held, e)
}

// runUntil handles every event due before endMs, in time order, then sets
// the clock to endMs.
func (c *Cluster) runUntil(endMs int64) {
	for len(c.events) > 0 && c.events[0].atMs < endMs && c.halted == "" {
		e := heap.Pop(&c.events).(*event)
		c.nowMs = max(c.nowMs, e.atMs)
		c.dispatch(e)
		if !e.held {
			*e = event{}
			c.free = append(c.free, e)
		}
	}
	c.nowMs = max(c.nowMs, endMs)
}

func (c *Cluster) dispatch(e *event) {
	switch e.kind {
	case evPeerMsg, evElectionMsg:
		c.deliverPeer(e)
	case evTick:
		c.tick(e)
	case evClientWake:
		c.clientWake(c.clients[e.client])
	case evToServer:
		c.deliverToServer(e)
	case evToClient:
		c.deliverToClient(e)
	case evPersisted:
		c.persisted(e)
	case evSnapshot:
		c.snapshotWork(e)
	case evPurge:
		c.purge(e)
	case evPurgeStep:
		c.purgeStep(e)
	case evResume:
		if s := c.servers[e.server]; s.pauseGen == e.gen {
			c.resume(s, e.inc)
		}
	}
}
