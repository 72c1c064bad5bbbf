package zkcore

import (
	"net/netip"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// A member that just lost its leader holds a handshake, and the requests
// behind it, until it serves again: the client is answered then, in order,
// without being refused.
func TestHandshakeHeldUntilServing(t *testing.T) {
	h := newHarness(t)
	h.s.SetMode(Leader, 1, h.now)
	h.s.SetMode(NotServing, 0, h.now)
	h.s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:1"), h.now)
	h.s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, h.now)
	x := h.send(1, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
	h.drive()
	if fs := h.take(1); len(fs) != 0 || h.closed[1] {
		t.Fatalf("while not serving: %d frames, closed %v; want the handshake held", len(fs), h.closed[1])
	}
	if got := h.s.Outstanding(1); got != 1 {
		t.Fatalf("Outstanding = %d, want the request held behind the handshake", got)
	}
	h.now.MonoMs += 300
	h.s.Tick(h.now)
	h.s.SetMode(Leader, 2, h.now)
	h.drive()
	fs := h.take(1)
	if len(fs) != 2 || h.closed[1] {
		t.Fatalf("after serving: %d frames %+v, closed %v; want the handshake and the reply", len(fs), headers(fs), h.closed[1])
	}
	var resp zkproto.ConnectResponse
	resp.Decode(jute.NewDecoder(fs[0].raw, 0))
	if resp.SessionID == 0 || fs[1].hdr.Xid != x || fs[1].hdr.Err != zkproto.CodeOK {
		t.Fatalf("session %#x, reply %+v", resp.SessionID, fs[1].hdr)
	}
}

// A handshake is held no longer than HoldHandshakeMs after the leader was
// lost, nor a quarter of the session timeout asked for; one that arrives
// later is refused at once, as Apache ZooKeeper refuses it.
func TestHandshakeHoldBounded(t *testing.T) {
	connect := func(h *harness, id ConnID, timeoutMs int32) {
		h.s.NewConn(id, netip.MustParseAddrPort("127.0.0.1:1"), h.now)
		h.s.Connect(id, &zkproto.ConnectRequest{TimeoutMs: timeoutMs, Passwd: make([]byte, 16)}, h.now)
		h.drive()
	}
	h := newHarness(t, func(c *Config) { c.HoldHandshakeMs = 1000 })
	h.s.SetMode(NotServing, 0, h.now)
	connect(h, 1, 10000) // held until the window ends, 1000 ms on
	connect(h, 2, 2000)  // held a quarter of its timeout, 500 ms
	h.now.MonoMs += 499
	h.s.Tick(h.now)
	h.drive()
	if h.closed[1] || h.closed[2] {
		t.Fatalf("closed early: %v", h.closed)
	}
	h.now.MonoMs++
	h.s.Tick(h.now)
	h.drive()
	if h.closed[1] || !h.closed[2] {
		t.Fatalf("at 500 ms: closed %v, want only conn 2", h.closed)
	}
	h.now.MonoMs += 500
	h.s.Tick(h.now)
	h.drive()
	if !h.closed[1] {
		t.Fatal("conn 1 still held after the window")
	}
	connect(h, 3, 10000)
	if !h.closed[3] {
		t.Fatal("a handshake after the window was held, want it refused at once")
	}
	for id := ConnID(1); id <= 3; id++ {
		if fs := h.take(id); len(fs) != 0 {
			t.Fatalf("conn %d got %d frames, want none", id, len(fs))
		}
	}
}

// A session expires within a bucket of its timeout: a twentieth of the
// tick, where Apache ZooKeeper's whole-tick buckets let it live up to a
// tick longer.
func TestSessionExpiresWithinABucket(t *testing.T) {
	h := newHarness(t) // tickTime 2000: buckets of 100 ms
	h.s.SetMode(Standalone, 0, h.now)
	start := h.now.MonoMs
	sid := h.open(1)
	h.s.Disconnect(1)
	var expiredAt int64
	for h.now.MonoMs < start+12000 && expiredAt == 0 {
		h.now.MonoMs += 10
		h.s.Tick(h.now)
		h.drive()
		if _, ok := h.s.Sessions().Get(sid); !ok {
			expiredAt = h.now.MonoMs
		}
	}
	if got := expiredAt - start; got <= 10000 || got > 10000+ExpiryBucketMs(2000) {
		t.Fatalf("a 10 s session expired %d ms after its last touch, want within (10000, %d]", got, 10000+ExpiryBucketMs(2000))
	}
}

// A learner behind what a client has seen (the client comes from a member
// that applied a commit this one has not yet) holds its handshake until
// it applies that state, then answers it; one still behind when the hold
// ends is refused, as Apache ZooKeeper refuses it at once.
func TestHandshakeHeldUntilCaughtUp(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HoldHandshakeMs = 1000 })
	h.s.SetMode(Learner, 1, h.now)
	seen := zxid.Make(1, 1)
	for id := ConnID(1); id <= 2; id++ {
		h.s.NewConn(id, netip.MustParseAddrPort("127.0.0.1:1"), h.now)
		h.s.Connect(id, &zkproto.ConnectRequest{TimeoutMs: 10000, LastZxidSeen: int64(seen), Passwd: make([]byte, 16)}, h.now)
	}
	h.drive()
	for id := ConnID(1); id <= 2; id++ {
		if fs := h.take(id); len(fs) != 0 || h.closed[id] {
			t.Fatalf("conn %d behind the client: %d frames, closed %v; want the handshake held", id, len(fs), h.closed[id])
		}
	}
	h.s.Disconnect(2)
	h.s.Apply(&txn.Txn{Header: txn.Header{ClientID: 77, Zxid: seen, Type: zkproto.OpCreate},
		Record: &txn.Create{Path: "/caught-up", ACL: zkproto.OpenACLUnsafe, ParentCversion: -1}}, h.now)
	// Released: a learner forwards the new session to its leader, and
	// answers once that commits.
	if c := h.s.conns[1]; c == nil || c.hold != nil || len(c.queue) != 1 || c.queue[0].kind != kindConnect || h.closed[1] {
		t.Fatalf("after applying %s: handshake not released (closed %v)", seen, h.closed[1])
	}
	// A client further ahead than the learner gets within the hold is
	// refused when it ends.
	h.s.NewConn(3, netip.MustParseAddrPort("127.0.0.1:1"), h.now)
	h.s.Connect(3, &zkproto.ConnectRequest{TimeoutMs: 10000, LastZxidSeen: int64(zxid.Make(1, 9)), Passwd: make([]byte, 16)}, h.now)
	h.drive()
	h.now.MonoMs += 1000
	h.s.Tick(h.now)
	h.drive()
	if !h.closed[3] || len(h.take(3)) != 0 {
		t.Fatalf("conn 3 still held after the hold, or answered")
	}
	// Held while the learner has no leader, then again, once it serves,
	// until it catches up with the client.
	h.s.SetMode(NotServing, 0, h.now)
	next := zxid.Make(1, 2)
	h.s.NewConn(4, netip.MustParseAddrPort("127.0.0.1:1"), h.now)
	h.s.Connect(4, &zkproto.ConnectRequest{TimeoutMs: 10000, LastZxidSeen: int64(next), Passwd: make([]byte, 16)}, h.now)
	h.drive()
	h.s.SetMode(Learner, 1, h.now)
	h.drive()
	if c := h.s.conns[4]; c == nil || c.hold == nil || h.closed[4] {
		t.Fatalf("conn 4 not held behind the client once serving (closed %v)", h.closed[4])
	}
	h.s.Apply(&txn.Txn{Header: txn.Header{ClientID: 77, Zxid: next, Type: zkproto.OpCreate},
		Record: &txn.Create{Path: "/caught-up-2", ACL: zkproto.OpenACLUnsafe, ParentCversion: -1}}, h.now)
	h.drive()
	if c := h.s.conns[4]; c == nil || c.hold != nil || h.closed[4] {
		t.Fatalf("conn 4 not released after applying %s (closed %v)", next, h.closed[4])
	}
}

// A handshake the member took but had not answered when it lost its
// leader (here a new session forwarded to that leader, with an auth and a
// read pipelined behind it) is held again rather than refused: once the
// member serves, the session is asked of the new leader, and the client
// gets the handshake and then its replies, in order. Held again, it is
// still bounded by a quarter of its timeout from its arrival.
func TestHandshakeHeldThroughRoleChange(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HoldHandshakeMs = 1000 })
	h.s.SetMode(Learner, 1, h.now)
	for id, timeout := range map[ConnID]int32{1: 10000, 2: 1000} {
		h.s.NewConn(id, netip.MustParseAddrPort("127.0.0.1:1"), h.now)
		h.s.Connect(id, &zkproto.ConnectRequest{TimeoutMs: timeout, Passwd: make([]byte, 16)}, h.now)
	}
	xa := h.send(1, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")})
	xe := h.send(1, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
	h.drive()
	if len(h.forwards) != 2 {
		t.Fatalf("%d forwards, want both createSessions", len(h.forwards))
	}
	h.forwards = nil
	h.now.MonoMs += 200
	h.s.SetMode(NotServing, 0, h.now)
	h.drive()
	if h.closed[1] || h.closed[2] || len(h.take(1)) != 0 {
		t.Fatalf("handshakes refused or answered on losing the leader: closed %v", h.closed)
	}
	if got := h.s.Outstanding(1); got != 2 {
		t.Fatalf("Outstanding = %d, want the auth and the read behind the held handshake", got)
	}
	h.now.MonoMs += 100 // 300 ms after conn 2 arrived: past a quarter of its 1 s
	h.s.Tick(h.now)
	h.drive()
	if h.closed[1] || !h.closed[2] {
		t.Fatalf("closed %v, want conn 2 only, its hold over", h.closed)
	}
	h.s.SetMode(Learner, 2, h.now)
	h.drive()
	if len(h.forwards) != 1 || h.forwards[0].Op != zkproto.OpCreateSession {
		t.Fatalf("forwards to the new leader: %+v, want one createSession", h.forwards)
	}
	sid := h.forwards[0].SessionID
	h.s.Apply(&txn.Txn{Header: txn.Header{ClientID: sid, Zxid: zxid.Make(2, 1), Type: zkproto.OpCreateSession},
		Record: &txn.CreateSession{TimeoutMs: 10000}}, h.now)
	h.drive()
	fs := h.take(1)
	if len(fs) != 3 || h.closed[1] {
		t.Fatalf("%d frames %+v, closed %v; want the handshake, the auth reply, the read", len(fs), headers(fs), h.closed[1])
	}
	var resp zkproto.ConnectResponse
	resp.Decode(jute.NewDecoder(fs[0].raw, 0))
	if resp.SessionID != sid || fs[1].hdr.Xid != xa || fs[2].hdr.Xid != xe || fs[2].hdr.Err != zkproto.CodeOK {
		t.Fatalf("session %#x (want %#x), replies %+v", resp.SessionID, sid, headers(fs[1:]))
	}
	if st := h.s.Stats(); st.PacketsReceived != 4 {
		t.Fatalf("%d packets counted, want 4: a handshake held again counts once", st.PacketsReceived)
	}
}
