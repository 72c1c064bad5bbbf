package zkcore

import (
	"errors"
	"keeper/coordination/txn"
	"net/netip"
	"testing"

	"keeper/coordination/session"
	"keeper/coordination/zkproto"
)

func ok(xid int32) zkproto.ReplyHeader { return zkproto.ReplyHeader{Xid: xid} }

func fail(xid int32, c zkproto.Code) zkproto.ReplyHeader {
	return zkproto.ReplyHeader{Xid: xid, Err: c}
}

func event() zkproto.ReplyHeader { return zkproto.ReplyHeader{Xid: zkproto.XidNotification, Zxid: -1} }

// A read behind an unapplied write of its own connection waits for it, and
// replies leave in request order.
func TestReadWaitsForEarlierWrite(t *testing.T) {
	h := newHarness(t)
	h.open(1)
	h.autoApply = false
	x1 := h.send(1, zkproto.OpCreate, create("/a", "v", 0))
	x2 := h.send(1, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/a"})
	x3 := h.send(1, zkproto.OpPing, nil)
	if fs := h.take(1); len(fs) != 0 {
		t.Fatalf("replies before the write applied: %+v", headers(fs))
	}
	h.applyN(1)
	fs := h.expect(1, ok(x1), ok(x2), ok(x3))
	var gd zkproto.GetDataResponse
	h.decode(fs[1], &gd)
	if string(gd.Data) != "v" {
		t.Fatalf("read saw %q", gd.Data)
	}
}

// Writes pipelined on one connection are validated against the ones before
// them, before any is applied.
func TestPipelinedWritesSeeEachOther(t *testing.T) {
	h := newHarness(t)
	h.open(1)
	h.autoApply = false
	x1 := h.send(1, zkproto.OpCreate, create("/a", "", 0))
	x2 := h.send(1, zkproto.OpCreate, create("/a", "", 0))
	x3 := h.send(1, zkproto.OpCreate, create("/a/s-", "", zkproto.FlagPersistentSequential))
	x4 := h.send(1, zkproto.OpCreate, create("/a/s-", "", zkproto.FlagPersistentSequential))
	x5 := h.send(1, zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/a", Version: -1})
	if len(h.pending) != 5 {
		t.Fatalf("%d proposals, want 5", len(h.pending))
	}
	h.applyN(5)
	fs := h.expect(1, ok(x1), fail(x2, zkproto.CodeNodeExists), ok(x3), ok(x4), fail(x5, zkproto.CodeNotEmpty))
	for i, want := range map[int]string{2: "/a/s-0000000000", 3: "/a/s-0000000001"} {
		var cr zkproto.CreateResponse
		h.decode(fs[i], &cr)
		if cr.Path != want {
			t.Errorf("create %d: %q, want %q", i, cr.Path, want)
		}
	}
	// Every write, failed or not, consumed a zxid.
	if got := h.s.LastZxid(); got != 6 {
		t.Fatalf("last zxid %v, want 0x6 (1 session + 5 writes)", got)
	}
}

// The writer's own watch fires before the write's reply (docs/zookeeper-protocol.md §3.6).
func TestEventBeforeReply(t *testing.T) {
	h := newHarness(t)
	h.open(1)
	h.open(2)
	h.send(1, zkproto.OpCreate, create("/w", "", 0))
	h.take(1)
	xw := h.send(1, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/w", Watch: true})
	h.send(2, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/w", Watch: true})
	h.expect(1, ok(xw))
	h.take(2)
	xs := h.send(1, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/w", Data: []byte("x"), Version: -1})
	h.expect(1, event(), ok(xs))
	h.expect(2, event())
	// One-shot: a second change fires nothing.
	h.send(1, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/w", Data: []byte("y"), Version: -1})
	h.expect(2)
}

// A failed multi answers every op, commits nothing and still consumes a
// zxid (docs/zookeeper-protocol.md §2.3).
func TestFailedMulti(t *testing.T) {
	h := newHarness(t)
	h.open(1)
	before := h.s.LastZxid()
	x := h.send(1, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
		{Op: zkproto.OpCreate, Record: create("/m", "", 0)},
		{Op: zkproto.OpCheck, Record: &zkproto.CheckVersionRequest{Path: "/m", Version: 5}},
		{Op: zkproto.OpCreate, Record: create("/n", "", 0)},
		{Op: zkproto.OpDelete, Record: &zkproto.DeleteRequest{Path: "/m", Version: -1}},
	}})
	fs := h.expect(1, zkproto.ReplyHeader{Xid: x, Zxid: int64(before) + 1})
	var mr zkproto.MultiResponse
	h.decode(fs[0], &mr)
	want := []zkproto.Code{0, zkproto.CodeBadVersion, zkproto.CodeRuntimeInconsistency, zkproto.CodeRuntimeInconsistency}
	if len(mr.Results) != len(want) {
		t.Fatalf("results %+v", mr.Results)
	}
	for i, w := range want {
		if mr.Results[i].Op != zkproto.OpError || mr.Results[i].Err != w {
			t.Errorf("result %d: %+v, want error %v", i, mr.Results[i], w)
		}
	}
	if h.s.Tree().Node("/m") != nil {
		t.Fatal("failed multi created /m")
	}
}

// Closing a session deletes its ephemerals and tells their watchers; the
// closing connection gets its reply and is closed.
func TestCloseSessionDeletesEphemerals(t *testing.T) {
	h := newHarness(t)
	h.open(1)
	h.open(2)
	h.send(1, zkproto.OpCreate, create("/e", "", zkproto.FlagEphemeral))
	h.send(1, zkproto.OpCreate, create("/e2", "", zkproto.FlagEphemeral))
	h.take(1)
	h.send(2, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/e", Watch: true})
	h.take(2)
	xc := h.send(1, zkproto.OpCloseSession, nil)
	h.expect(1, ok(xc))
	if !h.closed[1] {
		t.Fatal("closing connection not closed")
	}
	h.expect(2, event())
	if h.s.Tree().Node("/e") != nil || h.s.Tree().Node("/e2") != nil {
		t.Fatal("ephemerals survived their session")
	}
}

// Session expiry closes the session through a txn and ends its connection.
func TestSessionExpiry(t *testing.T) {
	h := newHarness(t)
	sid := h.open(1)
	h.send(1, zkproto.OpCreate, create("/e", "", zkproto.FlagEphemeral))
	h.take(1)
	h.now.MonoMs += 4000 // less than the 10 s timeout
	h.s.Tick(h.now)
	h.drive()
	if _, ok := h.s.Sessions().Get(sid); !ok {
		t.Fatal("session expired early")
	}
	h.now.MonoMs += 20000
	h.s.Tick(h.now)
	h.drive()
	if _, ok := h.s.Sessions().Get(sid); ok {
		t.Fatal("session did not expire")
	}
	if !h.closed[1] || h.s.Tree().Node("/e") != nil {
		t.Fatalf("closed=%v node=%v", h.closed[1], h.s.Tree().Node("/e"))
	}
}

// Reattaching a session kicks the old connection even if the password is
// wrong; a wrong password gets the invalid response (docs/zookeeper-protocol.md §1.3).
func TestReattach(t *testing.T) {
	h := newHarness(t)
	sid := h.open(1)
	pw := session.Password(sid)

	h.s.NewConn(2, netip.MustParseAddrPort("127.0.0.1:40001"), h.now)
	h.s.Connect(2, &zkproto.ConnectRequest{TimeoutMs: 10000, SessionID: sid, Passwd: make([]byte, 16)}, h.now)
	h.drive()
	if !h.closed[1] || !h.closed[2] {
		t.Fatalf("closed: %v", h.closed)
	}
	fs := h.take(2)
	if len(fs) != 1 || len(fs[0].raw) != 36 {
		t.Fatalf("invalid response: %+v", fs)
	}
	var bad zkproto.ConnectResponse
	h.decode(frame{body: fs[0].raw}, &bad)
	if bad.TimeoutMs != 0 || bad.SessionID != 0 {
		t.Fatalf("invalid response %+v", bad)
	}

	h.s.NewConn(3, netip.MustParseAddrPort("127.0.0.1:40002"), h.now)
	h.s.Connect(3, &zkproto.ConnectRequest{TimeoutMs: 10000, SessionID: sid, Passwd: pw[:], HasReadOnly: true}, h.now)
	h.drive()
	fs = h.take(3)
	var good zkproto.ConnectResponse
	h.decode(frame{body: fs[0].raw}, &good)
	if good.SessionID != sid || good.TimeoutMs != 10000 || h.closed[3] {
		t.Fatalf("reattach: %+v closed=%v", good, h.closed[3])
	}
}

// A client that has seen a newer zxid is closed without a response.
func TestClientAheadRefused(t *testing.T) {
	h := newHarness(t)
	h.s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:40000"), h.now)
	h.s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, LastZxidSeen: 99, Passwd: make([]byte, 16)}, h.now)
	h.drive()
	if fs := h.take(1); len(fs) != 0 || !h.closed[1] {
		t.Fatalf("frames %+v closed %v", fs, h.closed[1])
	}
}

// Requests pipelined behind a ConnectRequest wait for the session.
func TestRequestsBehindHandshake(t *testing.T) {
	h := newHarness(t)
	h.autoApply = false
	h.s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:40000"), h.now)
	h.s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, h.now)
	h.drive()
	x1 := h.send(1, zkproto.OpCreate, create("/p", "", 0))
	x2 := h.send(1, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/p"})
	if len(h.pending) != 1 || len(h.take(1)) != 0 {
		t.Fatalf("ran before the session existed: %d proposals", len(h.pending))
	}
	h.applyN(1) // createSession
	h.applyN(1) // create /p
	fs := h.take(1)
	if len(fs) != 3 || fs[1].hdr.Xid != x1 || fs[2].hdr.Xid != x2 || fs[2].hdr.Err != 0 {
		t.Fatalf("frames %+v", headers(fs))
	}
}

// Unknown opcodes and a standalone check get Unimplemented with zxid -1,
// then the connection closes (docs/zookeeper-protocol.md §2.1, §2.4).
func TestUnimplementedCloses(t *testing.T) {
	for _, op := range []zkproto.Op{999, zkproto.OpCheck, zkproto.OpCreateSession} {
		h := newHarness(t)
		h.open(1)
		payload := zkproto.EncodeRequest(zkproto.RequestHeader{Xid: 7, Op: op}, &zkproto.CheckVersionRequest{Path: "/", Version: 0})
		r, err := DecodeRequest(payload, 0)
		if err != nil {
			t.Fatal(err)
		}
		h.s.Request(1, r, h.now)
		h.drive()
		h.expect(1, zkproto.ReplyHeader{Xid: 7, Zxid: -1, Err: zkproto.CodeUnimplemented})
		if !h.closed[1] {
			t.Fatalf("op %v: connection left open", op)
		}
	}
}

// A failed auth answers AuthFailed with zxid 0 and closes; a good one adds
// the identity that whoAmI reports.
func TestAuth(t *testing.T) {
	h := newHarness(t)
	h.open(1)
	x := h.send(1, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("user:pass")})
	h.expect(1, zkproto.ReplyHeader{Xid: x, Zxid: 0})
	xw := h.send(1, zkproto.OpWhoAmI, nil)
	fs := h.expect(1, ok(xw))
	var who zkproto.WhoAmIResponse
	h.decode(fs[0], &who)
	if len(who.ClientInfo) != 2 || who.ClientInfo[1] != (zkproto.ClientInfo{AuthScheme: "digest", User: "user"}) {
		t.Fatalf("whoAmI %+v", who)
	}
	xb := h.send(1, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "nosuch", Auth: []byte("x")})
	h.expect(1, fail(xb, zkproto.CodeAuthFailed))
	if !h.closed[1] {
		t.Fatal("connection open after AuthFailed")
	}
}

// Expired containers and TTL nodes are reaped by the server's own txns.
func TestReaper(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ContainerCheckMs = 1000 })
	h.open(1)
	h.send(1, zkproto.OpCreateContainer, create("/c", "", zkproto.FlagContainer))
	h.send(1, zkproto.OpCreate, create("/c/x", "", 0))
	h.send(1, zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/c/x", Version: -1})
	h.send(1, zkproto.OpCreateContainer, create("/unused", "", zkproto.FlagContainer))
	h.send(1, zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{Path: "/t", ACL: zkproto.OpenACLUnsafe,
		Flags: zkproto.FlagPersistentWithTTL, TTLMs: 500})
	h.take(1)
	h.s.Tick(h.now)
	h.now.MonoMs += 1000
	h.now.WallMs += 1000
	h.s.Tick(h.now)
	h.drive()
	tree := h.s.Tree()
	if tree.Node("/c") != nil || tree.Node("/t") != nil || tree.Node("/unused") == nil {
		t.Fatalf("after reaping: /c %v /t %v /unused %v", tree.Node("/c") != nil, tree.Node("/t") != nil, tree.Node("/unused") != nil)
	}
}

// A watcher without READ on the node gets no event (CVE-2024-23944, fixed
// in Apache ZooKeeper 3.8.4 and 3.9.2); its watch is consumed anyway.
func TestEventNeedsRead(t *testing.T) {
	h := newHarness(t)
	h.open(1)
	h.open(2)
	h.send(2, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/s", Watch: true})
	h.take(2)
	xa := h.send(1, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")})
	x := h.send(1, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/s", ACL: zkproto.CreatorAllACL})
	h.expect(1, ok(xa), ok(x))
	h.expect(2)
	if h.s.Watches().Count() != 0 {
		t.Fatalf("watch not consumed: %d left", h.s.Watches().Count())
	}
}

// After a storage failure, writes whose outcome is unknown close their
// connection, later writes are refused, and reads go on.
func TestFailWrites(t *testing.T) {
	h := newHarness(t)
	h.open(1)
	h.open(2)
	h.send(1, zkproto.OpCreate, create("/a", "v", 0))
	h.take(1)
	h.autoApply = false
	h.send(1, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/a", Data: []byte("lost"), Version: -1})
	h.s.FailWrites(errors.New("fsync: input/output error"))
	h.pending = nil
	h.drive()
	if !h.closed[1] {
		t.Fatal("connection with a write of unknown outcome left open")
	}
	xw := h.send(2, zkproto.OpCreate, create("/b", "", 0))
	xr := h.send(2, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/a"})
	fs := h.expect(2, fail(xw, zkproto.CodeNotReadOnly), ok(xr))
	var gd zkproto.GetDataResponse
	h.decode(fs[1], &gd)
	if string(gd.Data) != "v" || len(h.pending) != 0 {
		t.Fatalf("read %q, %d proposals after failure", gd.Data, len(h.pending))
	}
	h.now.MonoMs += 60000
	h.s.Tick(h.now)
	h.drive()
	if len(h.pending) != 0 {
		t.Fatal("expiry proposed a txn after the failure")
	}
}

// TestCreateTTLWithoutTTLMode: a createTTL whose flags are not a TTL mode
// is refused before it becomes a txn, whatever its ttl (ZooKeeper 3.8 logs
// it and then cannot apply it).
func TestCreateTTLWithoutTTLMode(t *testing.T) {
	for _, ttl := range []int64{-1, -5} {
		for _, flags := range []int32{zkproto.FlagPersistent, zkproto.FlagEphemeral, zkproto.FlagPersistentSequential} {
			h := newHarness(t)
			h.open(1)
			h.autoApply = false
			x := h.send(1, zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{Path: "/t", ACL: zkproto.OpenACLUnsafe, Flags: flags, TTLMs: ttl})
			if len(h.pending) != 1 {
				t.Fatalf("flags %d ttl %d: %d txns, want 1", flags, ttl, len(h.pending))
			}
			if _, ok := h.pending[0].Record.(*txn.Error); !ok {
				t.Errorf("flags %d ttl %d: logged as %T, want an error txn", flags, ttl, h.pending[0].Record)
			}
			h.applyN(1)
			got := h.take(1)
			if len(got) != 1 || got[0].hdr.Xid != x || got[0].hdr.Err != zkproto.CodeBadArguments {
				t.Errorf("flags %d ttl %d: replies %+v, want BadArguments", flags, ttl, headers(got))
			}
			if h.s.Tree().Node("/t") != nil {
				t.Errorf("flags %d ttl %d: /t exists", flags, ttl)
			}
		}
	}
}
