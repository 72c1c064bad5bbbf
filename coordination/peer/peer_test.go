package peer

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
)

// ensemble runs peers in memory: FIFO links, in-memory logs, client
// connections that record the frames they receive.
type ensemble struct {
	t      *testing.T
	ids    []zab.PeerID
	peers  map[zab.PeerID]*Peer
	logs   map[zab.PeerID]*memLog
	down   map[zab.PeerID]bool
	queue  []zab.Message
	now    zkcore.Now
	frames map[zab.PeerID]map[zkcore.ConnID][]zkproto.ReplyHeader
	bodies map[zab.PeerID]map[zkcore.ConnID][][]byte
	closed map[zab.PeerID]map[zkcore.ConnID]bool
	// sent counts the messages the peers sent, by type.
	sent map[zab.MsgType]int
	// configure, if set, adjusts a peer's core and node configurations
	// before start creates them; started, if set, sees the new peer.
	configure func(zab.PeerID, *zkcore.Config, *zab.Config)
	started   func(zab.PeerID, *Peer)
}

type netw struct {
	e    *ensemble
	from zab.PeerID
}

func (n netw) Send(ms []zab.Message) {
	for _, m := range ms {
		n.e.sent[m.Type]++
	}
	n.e.queue = append(n.e.queue, ms...)
}
func (n netw) Disconnect(p zab.PeerID) {
	n.e.queue = append(n.e.queue, zab.Message{Type: zab.MsgDisconnected, From: n.from, To: p})
}

type clients struct {
	e  *ensemble
	id zab.PeerID
}

func (c clients) Send(s zkcore.Send) {
	b := s.Data
	for len(b) >= 4 {
		n := int(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
		payload := b[4 : 4+n]
		b = b[4+n:]
		var h zkproto.ReplyHeader
		if len(payload) >= 16 {
			d := jute.NewDecoder(payload, 0)
			h.Xid, h.Zxid, h.Err = d.Int(), d.Long(), zkproto.Code(d.Int())
		}
		c.e.frames[c.id][s.Conn] = append(c.e.frames[c.id][s.Conn], h)
		c.e.bodies[c.id][s.Conn] = append(c.e.bodies[c.id][s.Conn], payload)
	}
	if s.Close {
		c.e.closed[c.id][s.Conn] = true
	}
}

func newEnsemble(t *testing.T, n int) *ensemble { return newEnsembleWith(t, n, nil, nil) }

func newEnsembleWith(t *testing.T, n int, configure func(zab.PeerID, *zkcore.Config, *zab.Config),
	started func(zab.PeerID, *Peer)) *ensemble {
	e := &ensemble{t: t, peers: map[zab.PeerID]*Peer{}, logs: map[zab.PeerID]*memLog{}, down: map[zab.PeerID]bool{},
		configure: configure, started: started,
		now:    zkcore.Now{WallMs: 1_700_000_000_000, MonoMs: 1},
		frames: map[zab.PeerID]map[zkcore.ConnID][]zkproto.ReplyHeader{},
		bodies: map[zab.PeerID]map[zkcore.ConnID][][]byte{},
		closed: map[zab.PeerID]map[zkcore.ConnID]bool{}, sent: map[zab.MsgType]int{}}
	for i := 1; i <= n; i++ {
		e.ids = append(e.ids, zab.PeerID(i))
		e.logs[zab.PeerID(i)] = &memLog{}
	}
	for _, id := range e.ids {
		e.start(id)
	}
	return e
}

// start (re)creates a peer from its durable log.
func (e *ensemble) start(id zab.PeerID) {
	log := e.logs[id]
	tree, sessions, err := log.Reload()
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := zkcore.DefaultConfig()
	cfg.ServerID = int64(id)
	cfg.TickMs = 100
	cfg.MinSessionTimeoutMs = 200
	cfg.StartWallMs = e.now.WallMs + int64(id)
	zcfg := zab.Config{ID: id, Voters: e.ids, InitLimitTicks: 10, SyncLimitTicks: 5,
		HardState: log.hard, LastZxid: log.lastZxid(), Recent: slices.Clone(log.entries),
		Rand: rand.New(rand.NewPCG(uint64(id), 7))}
	if e.configure != nil {
		e.configure(id, &cfg, &zcfg)
	}
	zk, err := zkcore.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	zk.Restore(tree, sessions, e.now)
	zk.SetMode(zkcore.NotServing, 0, e.now)
	node, err := zab.New(zcfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.peers[id] = New(node, zk, log, netw{e, id}, clients{e, id}, nil)
	if e.started != nil {
		e.started(id, e.peers[id])
	}
	e.down[id] = false
	e.frames[id] = map[zkcore.ConnID][]zkproto.ReplyHeader{}
	e.bodies[id] = map[zkcore.ConnID][][]byte{}
	e.closed[id] = map[zkcore.ConnID]bool{}
}

func (e *ensemble) crash(id zab.PeerID) {
	e.down[id] = true
	e.logs[id] = e.logs[id].crashed()
	e.queue = slices.DeleteFunc(e.queue, func(m zab.Message) bool { return m.To == id || m.From == id })
	for _, o := range e.ids {
		if o != id {
			e.queue = append(e.queue, zab.Message{Type: zab.MsgDisconnected, From: id, To: o})
		}
	}
}

func (e *ensemble) step() {
	for _, id := range e.ids {
		if !e.down[id] {
			if err := e.peers[id].HandleReady(e.now); err != nil && e.logs[id].failAppend == nil {
				e.t.Fatal(err)
			}
		}
	}
	if len(e.queue) == 0 {
		e.now.MonoMs += 50
		e.now.WallMs += 50
		for _, id := range e.ids {
			if !e.down[id] {
				e.peers[id].Tick(e.now)
			}
		}
		return
	}
	m := e.queue[0]
	e.queue = e.queue[1:]
	if !e.down[m.To] {
		_ = e.peers[m.To].Step(m, e.now)
	}
}

func (e *ensemble) until(max int, what string, cond func() bool) {
	e.t.Helper()
	for i := 0; i < max; i++ {
		if cond() {
			return
		}
		e.step()
	}
	e.t.Fatalf("not %s after %d steps", what, max)
}

func (e *ensemble) serving() (zab.PeerID, bool) {
	var leader zab.PeerID
	for _, id := range e.ids {
		if e.down[id] {
			continue
		}
		n := e.peers[id].Node()
		if !n.Serving() || e.peers[id].Core().Mode() == zkcore.NotServing || (leader != 0 && n.Leader() != leader) {
			return 0, false
		}
		leader = n.Leader()
	}
	return leader, leader != 0
}

// connect opens a client session on peer id and returns its conn id.
func (e *ensemble) connect(id zab.PeerID, conn zkcore.ConnID) {
	zk := e.peers[id].Core()
	zk.NewConn(conn, netip.MustParseAddrPort(fmt.Sprintf("127.0.0.1:%d", 40000+int(conn))), e.now)
	zk.Connect(conn, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, e.now)
	e.until(200, "session", func() bool { return len(e.frames[id][conn]) > 0 })
}

func (e *ensemble) request(id zab.PeerID, conn zkcore.ConnID, xid int32, op zkproto.Op, body jute.Record) {
	e.peers[id].Core().Request(conn, zkcore.Request{Header: zkproto.RequestHeader{Xid: xid, Op: op}, Body: body}, e.now)
}

func (e *ensemble) reply(id zab.PeerID, conn zkcore.ConnID, xid int32) (zkproto.ReplyHeader, bool) {
	for _, h := range e.frames[id][conn] {
		if h.Xid == xid {
			return h, true
		}
	}
	return zkproto.ReplyHeader{}, false
}

// Writes through a follower are committed by the leader and seen
// everywhere; after the leader crashes the ensemble elects another and
// keeps every acknowledged write.
func TestEnsembleWritesAndFailover(t *testing.T) {
	e := newEnsemble(t, 3)
	e.until(2000, "serving", func() bool { _, ok := e.serving(); return ok })
	leader, _ := e.serving()
	follower := e.ids[0]
	if follower == leader {
		follower = e.ids[1]
	}
	e.connect(follower, 1)
	for i := range 20 {
		e.request(follower, 1, int32(i+1), zkproto.OpCreate,
			&zkproto.CreateRequest{Path: fmt.Sprintf("/n%d", i), Data: []byte("v"), ACL: zkproto.OpenACLUnsafe})
	}
	e.until(2000, "20 creates acknowledged", func() bool { _, ok := e.reply(follower, 1, 20); return ok })
	for i := range 20 {
		if h, _ := e.reply(follower, 1, int32(i+1)); h.Err != 0 {
			t.Fatalf("create %d: %v", i, h.Err)
		}
	}
	for _, id := range e.ids {
		e.until(500, "replicated", func() bool { return e.peers[id].Core().Tree().Node("/n19") != nil })
	}
	e.crash(leader)
	e.until(3000, "new leader", func() bool { l, ok := e.serving(); return ok && l != leader })
	survivor := e.ids[0]
	if survivor == leader {
		survivor = e.ids[1]
	}
	e.connect(survivor, 2)
	e.request(survivor, 2, 1, zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: "/"})
	e.request(survivor, 2, 2, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/after", ACL: zkproto.OpenACLUnsafe})
	e.until(2000, "write after failover", func() bool { _, ok := e.reply(survivor, 2, 2); return ok })
	if h, _ := e.reply(survivor, 2, 2); h.Err != 0 || zxidEpoch(h.Zxid) < 2 {
		t.Fatalf("write after failover: %+v", h)
	}
	e.start(leader)
	e.until(3000, "old leader rejoined", func() bool {
		_, ok := e.serving()
		return ok && e.peers[leader].Core().Tree().Node("/after") != nil
	})
	for i := range 20 {
		if e.peers[leader].Core().Tree().Node(fmt.Sprintf("/n%d", i)) == nil {
			t.Fatalf("/n%d lost", i)
		}
	}
	digest := e.peers[e.ids[0]].Core().Tree().Digest()
	for _, id := range e.ids {
		if d := e.peers[id].Core().Tree().Digest(); d != digest {
			t.Fatalf("peer %d digest %d, peer %d %d", id, d, e.ids[0], digest)
		}
	}
}

func zxidEpoch(z int64) uint32 { return uint32(uint64(z) >> 32) }
