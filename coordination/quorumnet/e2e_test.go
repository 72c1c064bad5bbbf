package quorumnet

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zab"
	"keeper/coordination/zxid"
)

// e2eTick is the test's tick: short, so elections and syncs take a fraction
// of a second, yet long enough that a loaded machine running -race keeps
// up with the limits below.
const e2eTick = 10 * time.Millisecond

// e2eNode is one server: a zab.Node driven by a minimal loop over a real
// Transport, with an in-memory log and state machine (the list of applied
// entries).
type e2eNode struct {
	t     *testing.T
	id    zab.PeerID
	node  *zab.Node
	tr    *Transport
	calls chan func(*zab.Node) // run by the loop, which owns the node
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex // guards what follows: the loop writes, the test reads
	hard    zab.HardState
	log     []zab.Entry // durable
	snap    []zab.Entry // state of the last installed snapshot
	applied []zab.Entry // the state machine
	role    zab.RoleChange
	syncs   int // sync requests completed
}

// startNode starts server id from what it made durable before (none for a
// fresh one).
func startNode(t *testing.T, id zab.PeerID, voters []zab.PeerID, prev *e2eNode) *e2eNode {
	t.Helper()
	n := &e2eNode{t: t, id: id, calls: make(chan func(*zab.Node)), stop: make(chan struct{}), done: make(chan struct{})}
	if prev != nil {
		prev.mu.Lock()
		n.hard, n.log, n.snap = prev.hard, slices.Clone(prev.log), slices.Clone(prev.snap)
		prev.mu.Unlock()
	}
	// At start-up the state machine is the snapshot plus the whole log.
	n.applied = append(slices.Clone(n.snap), n.log...)
	var last zxid.ID
	if k := len(n.applied); k > 0 {
		last = n.applied[k-1].Zxid
	}
	node, err := zab.New(zab.Config{ID: id, Voters: voters, InitLimitTicks: 100, SyncLimitTicks: 50,
		ElectionMaxRetryTicks: 20, MaxRecentEntries: 5, HardState: n.hard, LastZxid: last,
		Recent: slices.Clone(n.log), Rand: rand.New(rand.NewPCG(uint64(id), 7))})
	if err != nil {
		t.Fatal(err)
	}
	n.node = node
	n.tr, err = New(Config{ID: id, ListenQuorum: "127.0.0.1:0", ListenElection: "127.0.0.1:0", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.tr.Start(); err != nil {
		t.Fatal(err)
	}
	return n
}

// run is the driver loop: one goroutine owns the node.
func (n *e2eNode) run() {
	defer close(n.done)
	ticker := time.NewTicker(e2eTick)
	defer ticker.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-ticker.C:
			n.node.Tick()
		case m := <-n.tr.Recv():
			_ = n.node.Step(m) // invalid messages are the sender's problem
		case f := <-n.calls:
			f(n.node)
		}
		for n.node.HasReady() {
			n.handle(n.node.Ready())
		}
	}
}

// handle carries out one Ready in the documented order.
func (n *e2eNode) handle(rd zab.Ready) {
	n.mu.Lock()
	if rd.Role != nil {
		n.role = *rd.Role
	}
	if rd.State != nil {
		n.hard = *rd.State
	}
	if rd.Truncate != nil {
		z := *rd.Truncate
		if i := slices.IndexFunc(n.log, func(e zab.Entry) bool { return e.Zxid > z }); i >= 0 {
			n.log = n.log[:i]
		}
		n.applied = append(slices.Clone(n.snap), n.log...)
	}
	if rd.InstallSnapshot {
		n.snap = decodeState(n.t, rd.Snapshot)
		n.applied, n.log = slices.Clone(n.snap), nil
	}
	n.log = append(n.log, rd.Entries...)
	msgs := slices.Concat(rd.Early, rd.Messages)
	for i, m := range msgs {
		if m.Type == zab.MsgSnap && slices.Contains(rd.SendSnapshots, m.To) {
			msgs[i].Data = encodeState(n.applied)
		}
	}
	n.applied = append(n.applied, rd.Committed...)
	n.syncs += len(rd.SyncsDone)
	n.mu.Unlock()
	for _, p := range rd.Disconnect {
		n.tr.Disconnect(p) // before Send: a FOLLOWERINFO below opens a new link
	}
	n.tr.Send(msgs)
	n.node.Advance(rd)
}

// halt stops the loop and closes the transport; what was durable stays.
func (n *e2eNode) halt() {
	close(n.stop)
	<-n.done
	n.tr.Close()
}

func (n *e2eNode) status() (zab.RoleChange, []zab.Entry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.role, slices.Clone(n.applied)
}

// encodeState is the test's snapshot: a body in ZooKeeper's layout (no
// sessions, no ACLs, the root and the end marker) whose root data lists
// the entries, so the transport can delimit it on the stream.
func encodeState(entries []zab.Entry) []byte {
	var inner jute.Encoder
	inner.Int(int32(len(entries)))
	for _, e := range entries {
		inner.Long(int64(e.Zxid))
		inner.Buffer(e.Data)
	}
	var e jute.Encoder
	e.Int(0) // sessions
	e.Int(0) // ACL cache
	e.String("")
	e.Buffer(inner.B)
	e.Long(-1)
	e.B = append(e.B, make([]byte, statPersistedBytes)...)
	e.String("/")
	return e.B
}

func decodeState(t *testing.T, body []byte) []zab.Entry {
	d := jute.NewDecoder(body, len(body))
	d.Int() // sessions
	d.Int() // ACL cache
	if root := d.String(); root != "" {
		t.Errorf("snapshot starts with node %q, not the root", root)
	}
	inner := jute.NewDecoder(d.Buffer(), len(body))
	var out []zab.Entry
	for k := inner.Int(); k > 0 && inner.Err() == nil; k-- {
		out = append(out, zab.Entry{Zxid: zxid.ID(inner.Long()), Data: inner.Buffer()})
	}
	if inner.Err() != nil || d.Err() != nil {
		t.Errorf("bad snapshot: %v %v", inner.Err(), d.Err())
	}
	return out
}

// ensemble is the test's view of the servers.
type ensemble struct {
	t     *testing.T
	nodes map[zab.PeerID]*e2eNode
}

// connect tells every transport every server's current addresses.
func (e *ensemble) connect() {
	for _, n := range e.nodes {
		for id, other := range e.nodes {
			n.tr.SetPeer(id, PeerAddrs{Quorum: other.tr.QuorumAddr(), Election: other.tr.ElectionAddr()})
		}
	}
}

// stable waits until every server serves under one leader and returns it.
func (e *ensemble) stable() zab.PeerID {
	var leader zab.PeerID
	eventually(e.t, "a serving leader followed by all", func() bool {
		leader = 0
		for _, n := range e.nodes {
			r, _ := n.status()
			if !r.Serving || (leader != 0 && r.Leader != leader) {
				return false
			}
			leader = r.Leader
		}
		return leader != 0
	})
	return leader
}

// call runs f on server id's node, in its loop, and returns f's error.
func (e *ensemble) call(id zab.PeerID, f func(*zab.Node) error) error {
	reply := make(chan error)
	e.nodes[id].calls <- func(n *zab.Node) { reply <- f(n) }
	return <-reply
}

// propose proposes data on the leader.
func (e *ensemble) propose(leader zab.PeerID, data string) {
	err := e.call(leader, func(n *zab.Node) error { return n.Propose(n.NextZxid(), []byte(data)) })
	if err != nil {
		e.t.Fatalf("propose %q on %d: %v", data, leader, err)
	}
}

// applied waits until every server applied the same want entries.
func (e *ensemble) applied(want []string) {
	e.t.Helper()
	eventually(e.t, fmt.Sprintf("%d entries applied everywhere", len(want)), func() bool {
		for _, n := range e.nodes {
			_, got := n.status()
			if len(got) != len(want) {
				return false
			}
			for i, entry := range got {
				if string(entry.Data) != want[i] {
					e.t.Fatalf("server %d applied %q at %d, want %q", n.id, entry.Data, i, want[i])
				}
			}
		}
		return true
	})
}

// TestEndToEnd runs three zab.Nodes over real sockets: they elect a
// leader, commit proposals, carry on without a follower, and bring it back
// up to date with a snapshot streamed after SNAP.
func TestEndToEnd(t *testing.T) {
	voters := []zab.PeerID{1, 2, 3}
	e := &ensemble{t: t, nodes: map[zab.PeerID]*e2eNode{}}
	for _, id := range voters {
		e.nodes[id] = startNode(t, id, voters, nil)
	}
	e.connect()
	for _, n := range e.nodes {
		go n.run()
	}
	t.Cleanup(func() {
		for _, n := range e.nodes {
			n.halt()
		}
	})

	leader := e.stable()
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("txn %d", i))
		e.propose(leader, want[i])
	}
	e.applied(want)

	// A follower's sync travels as a forwarded sync REQUEST; the leader
	// answers with SYNC once everything before it is committed.
	follower := voters[0]
	if follower == leader {
		follower = voters[1]
	}
	if err := e.call(follower, (*zab.Node).RequestSync); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the sync answered", func() bool {
		n := e.nodes[follower]
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.syncs == 1
	})

	// Stop a follower; the other two are a quorum and go on. The leader's
	// in-memory log keeps 5 entries, so the follower falls too far behind
	// for a DIFF.
	stopped := e.nodes[follower]
	stopped.halt()
	delete(e.nodes, follower)
	for i := 20; i < 40; i++ {
		want = append(want, fmt.Sprintf("txn %d", i))
		e.propose(leader, want[i])
	}
	e.applied(want)

	// Restart it on new ports: it rejoins and gets a snapshot.
	restarted := startNode(t, follower, voters, stopped)
	e.nodes[follower] = restarted
	e.connect()
	go restarted.run()
	if got := e.stable(); got != leader {
		t.Logf("leadership moved from %d to %d", leader, got)
		leader = got
	}
	for i := 40; i < 45; i++ {
		want = append(want, fmt.Sprintf("txn %d", i))
		e.propose(leader, want[i])
	}
	e.applied(want)
	restarted.mu.Lock()
	snapped := len(restarted.snap) > 0
	restarted.mu.Unlock()
	if !snapped {
		t.Errorf("the restarted follower caught up without a snapshot; the test meant to exercise SNAP")
	}
}
