package zkcore

import (
	"net/netip"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// pair is a leader core and a learner core wired by hand: forwards go to
// the leader, its proposals are applied on both, in order.
type pair struct {
	leader, learner *harness
}

func newPair(t *testing.T) *pair {
	p := &pair{leader: newHarness(t, func(c *Config) { c.ServerID = 1 }),
		learner: newHarness(t, func(c *Config) { c.ServerID = 2 })}
	p.leader.s.SetMode(Leader, 1, p.leader.now)
	p.learner.s.SetMode(Learner, 1, p.learner.now)
	p.leader.autoApply, p.learner.autoApply = false, false
	return p
}

// settle moves forwards to the leader and commits everything on both.
func (p *pair) settle() {
	for i := 0; i < 10; i++ {
		p.learner.drive()
		fw := p.learner.forwards
		p.learner.forwards = nil
		for _, f := range fw {
			p.leader.s.Remote(f, p.leader.now)
		}
		rv := p.learner.revals
		p.learner.revals = nil
		for _, r := range rv {
			p.learner.s.Revalidated(r.SessionID, p.leader.s.Revalidate(r.SessionID, r.TimeoutMs, p.leader.now), p.learner.now)
		}
		p.leader.drive()
		props := p.leader.pending
		p.leader.pending = nil
		for _, t := range props {
			p.leader.s.Apply(t, p.leader.now)
			p.learner.s.Apply(t, p.learner.now)
		}
		p.leader.drive()
		p.learner.drive()
		if len(p.learner.forwards) == 0 && len(p.leader.pending) == 0 && len(p.learner.revals) == 0 {
			return
		}
	}
}

// A learner forwards writes and new sessions; the reply comes when the
// leader's txn is applied, and reads see it after that.
func TestLearnerForwards(t *testing.T) {
	p := newPair(t)
	f := p.learner
	f.s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:1"), f.now)
	f.s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, f.now)
	x1 := f.send(1, zkproto.OpCreate, create("/f", "v", zkproto.FlagEphemeral))
	x2 := f.send(1, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/f"})
	p.settle()
	fs := f.take(1)
	if len(fs) != 3 || fs[1].hdr.Xid != x1 || fs[1].hdr.Err != 0 || fs[2].hdr.Xid != x2 || fs[2].hdr.Err != 0 {
		t.Fatalf("learner frames %+v", headers(fs))
	}
	if fs[1].hdr.Zxid != int64(zxid.Make(1, 2)) {
		t.Fatalf("create zxid %#x, want the leader's 0x100000002", fs[1].hdr.Zxid)
	}
	n := p.leader.s.Tree().Node("/f")
	if n == nil || n.Owner() == 0 || n.Owner()>>56 != 2 {
		t.Fatalf("leader's /f %+v: owner should be a session of server 2", n)
	}
	// A failed write comes back as an error txn.
	x3 := f.send(1, zkproto.OpCreate, create("/f", "", 0))
	p.settle()
	f.expect(1, fail(x3, zkproto.CodeNodeExists))
}

// The leader expires a learner's session unless the learner reports it
// active; the learner then closes the connection.
func TestLeaderExpiresLearnerSessions(t *testing.T) {
	p := newPair(t)
	f := p.learner
	f.s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:1"), f.now)
	f.s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, f.now)
	p.settle()
	f.take(1)
	for range 3 {
		p.leader.now.MonoMs += 6000
		f.send(1, zkproto.OpPing, nil)
		p.leader.s.TouchSessions(f.s.TakeTouches(), p.leader.now)
		p.leader.s.Tick(p.leader.now)
		p.settle()
	}
	if f.closed[1] {
		t.Fatal("an active session expired")
	}
	p.leader.now.MonoMs += 30000
	p.leader.s.Tick(p.leader.now)
	f.s.Tick(f.now) // learners never expire sessions themselves
	p.settle()
	if !f.closed[1] {
		t.Fatal("the learner kept the connection of an expired session")
	}
}

// A sync on a learner waits for the leader; losing the leader closes the
// connections.
func TestLearnerSyncAndLeaderLoss(t *testing.T) {
	p := newPair(t)
	f := p.learner
	f.s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:1"), f.now)
	f.s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, f.now)
	p.settle()
	f.take(1)
	x := f.send(1, zkproto.OpSync, &zkproto.SyncRequest{Path: "/"})
	if f.syncReqs != 1 {
		t.Fatalf("sync requests %d", f.syncReqs)
	}
	f.expect(1)
	f.s.SyncDone(f.now)
	f.drive()
	f.expect(1, ok(x))
	f.s.SetMode(NotServing, 0, f.now)
	f.drive()
	if !f.closed[1] {
		t.Fatal("connection open without a leader")
	}
}

// Without a leader, a read-only server serves reads to clients that accept
// it, refuses writes with NotReadOnly and refuses other clients.
func TestReadOnlyMode(t *testing.T) {
	h := newHarness(t)
	h.open(1)
	x := h.send(1, zkproto.OpCreate, create("/r", "v", 0))
	h.expect(1, ok(x))
	h.s.SetMode(ReadOnly, 0, h.now)
	h.drive()
	if !h.closed[1] {
		t.Fatal("connection survived the switch to read-only")
	}
	h.s.NewConn(2, netip.MustParseAddrPort("127.0.0.1:2"), h.now)
	h.s.Connect(2, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16), HasReadOnly: true}, h.now)
	h.drive()
	if !h.closed[2] {
		t.Fatal("a client that needs a read-write server was accepted")
	}
	h.s.NewConn(3, netip.MustParseAddrPort("127.0.0.1:3"), h.now)
	h.s.Connect(3, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16), ReadOnly: true, HasReadOnly: true}, h.now)
	h.drive()
	fs := h.take(3)
	var resp zkproto.ConnectResponse
	h.decode(frame{body: fs[0].raw}, &resp)
	if resp.SessionID == 0 || !resp.ReadOnly || len(h.pending) != 0 {
		t.Fatalf("read-only handshake %+v, %d txns", resp, len(h.pending))
	}
	xr := h.send(3, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/r"})
	xw := h.send(3, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/r", Data: []byte("x"), Version: -1})
	h.expect(3, ok(xr), fail(xw, zkproto.CodeNotReadOnly))
	h.now.MonoMs += 60000
	h.s.Tick(h.now)
	h.drive()
	if !h.closed[3] {
		t.Fatal("a local session outlived its timeout")
	}
}

// Apache ZooKeeper's leader writes a failed multi with the real sub-txns of
// the ops before the failing one (keeper's leader writes error sub-txns for
// all); a learner answers those ops OK and the ops after the failure
// RuntimeInconsistency, and changes nothing.
func TestLearnerFailedMultiFromZooKeeperLeader(t *testing.T) {
	p := newPair(t)
	f := p.learner
	f.s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:1"), f.now)
	f.s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, f.now)
	p.settle()
	f.take(1)
	x := f.send(1, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
		{Op: zkproto.OpCheck, Record: &zkproto.CheckVersionRequest{Path: "/", Version: -1}},
		{Op: zkproto.OpCreate, Record: create("/a", "", 0)},
		{Op: zkproto.OpCreate, Record: create("/no/b", "", 0)},
		{Op: zkproto.OpCreate, Record: create("/c", "", 0)},
	}})
	for _, fw := range f.forwards {
		p.leader.s.Remote(fw, p.leader.now)
	}
	f.forwards = nil
	p.leader.drive()
	props := p.leader.pending
	p.leader.pending = nil
	if len(props) != 1 {
		t.Fatalf("leader proposed %d txns, want the multi", len(props))
	}
	m, isMulti := props[0].Record.(*txn.Multi)
	if !isMulti || len(m.Ops) != 4 {
		t.Fatalf("leader proposed %+v, want a multi of 4", props[0].Record)
	}
	// Rewrite it as ZooKeeper's leader writes it.
	java := *props[0]
	java.Record = &txn.Multi{Ops: []txn.Op{
		{Type: zkproto.OpCheck, Record: &txn.CheckVersion{Path: "/", Version: 1}},
		{Type: zkproto.OpCreate, Record: &txn.Create{Path: "/a", Data: []byte{}, ACL: zkproto.OpenACLUnsafe, ParentCversion: 1}},
		m.Ops[2], m.Ops[3],
	}}
	f.s.Apply(&java, f.now)
	f.drive()
	fs := f.expect(1, ok(x))
	var resp zkproto.MultiResponse
	f.decode(fs[0], &resp)
	want := []zkproto.Code{zkproto.CodeOK, zkproto.CodeOK, zkproto.CodeNoNode, zkproto.CodeRuntimeInconsistency}
	if len(resp.Results) != len(want) {
		t.Fatalf("results %+v, want %v", resp.Results, want)
	}
	for i, r := range resp.Results {
		if r.Op != zkproto.OpError || r.Err != want[i] {
			t.Errorf("result %d: %v/%v, want error/%v", i, r.Op, r.Err, want[i])
		}
	}
	if f.s.Tree().Node("/a") != nil {
		t.Error("the learner created /a of a failed multi")
	}
}

// A create2 op of a multi is logged as a create sub-txn, which ZooKeeper
// 3.8 followers can replay (they know no create2 sub-txn), and still
// answered with a create2 result.
func TestMultiCreate2LoggedAsCreate(t *testing.T) {
	p := newPair(t)
	l := p.leader
	l.s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:1"), l.now)
	l.s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, l.now)
	p.settle()
	l.take(1)
	x := l.send(1, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
		{Op: zkproto.OpCreate2, Record: create("/a", "v", 0)},
		{Op: zkproto.OpCreate2, Record: create("/b", "", zkproto.FlagEphemeralSequential)},
	}})
	if len(l.pending) != 1 {
		t.Fatalf("leader proposed %d txns, want the multi", len(l.pending))
	}
	m, isMulti := l.pending[0].Record.(*txn.Multi)
	if !isMulti || len(m.Ops) != 2 {
		t.Fatalf("leader proposed %+v, want a multi of 2", l.pending[0].Record)
	}
	if m.Ops[0].Type != zkproto.OpCreate || m.Ops[1].Type != zkproto.OpCreate {
		t.Fatalf("sub-txn types %v, %v; want create twice", m.Ops[0].Type, m.Ops[1].Type)
	}
	l.applyN(1)
	fs := l.expect(1, ok(x))
	var resp zkproto.MultiResponse
	l.decode(fs[0], &resp)
	if len(resp.Results) != 2 || resp.Results[0].Op != zkproto.OpCreate2 || resp.Results[1].Op != zkproto.OpCreate2 {
		t.Fatalf("results %+v, want two create2 results", resp.Results)
	}
}
