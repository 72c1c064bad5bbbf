package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/clientconn"
	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// Tests of bad input (docs/zookeeper-protocol.md §1.1, §1.6, §2.1; docs/fault-model.md): each kind
// of garbage gets Apache ZooKeeper's answer, and only the connection that
// sent it suffers.

// smallBuffer runs the server with jute.maxbuffer 4096, so oversized
// frames are cheap to send.
func smallBuffer(c *Config) { c.Core.MaxBuffer = 4096 }

// lengthPrefix is a frame length as it goes on the wire.
func lengthPrefix(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// stillServing checks that an unrelated session works, and that the watch
// it set before the trouble still fires.
func stillServing(t *testing.T, c *zk.Conn, watch <-chan zk.Event, path string) {
	t.Helper()
	mustCreate(t, c, path, nil, 0, openACL)
	if e := waitEvent(t, watch); e.Type != zk.EventNodeCreated || e.Path != path {
		t.Fatalf("bystander's watch: %+v", e)
	}
}

func TestFrameLengthLimits(t *testing.T) {
	s := startServer(t, smallBuffer)
	bystander := zkOpen(t, s)
	tests := []struct {
		name      string
		handshake bool
		prefix    []byte
	}{
		{"maxbuffer+1 after the handshake", true, lengthPrefix(4097)},
		{"negative length after the handshake", true, lengthPrefix(-1)},
		{"huge length after the handshake", true, lengthPrefix(0x7fffffff)},
		{"a four-letter word after the handshake", true, []byte("ruok")},
		{"oversized ConnectRequest", false, lengthPrefix(4097)},
		{"negative ConnectRequest length", false, lengthPrefix(-2)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fmt.Sprintf("/bystander-%d", i)
			_, _, watch, err := bystander.ExistsW(path)
			if err != nil {
				t.Fatal(err)
			}
			var c *rawClient
			if tt.handshake {
				c = rawSession(t, s.Addr().String())
			} else {
				c = rawDial(t, s.Addr().String())
			}
			c.writeRaw(tt.prefix)
			c.expectClosed()
			stillServing(t, bystander, watch, path)
		})
	}

	// A frame of exactly maxbuffer bytes is accepted (the check is
	// len > maxbuffer).
	c := rawSession(t, s.Addr().String())
	c.mustCreate("/big", 0)
	req := &zkproto.SetDataRequest{Path: "/big", Version: -1}
	overhead := zkproto.RequestHeaderLen + len(jute.Marshal(req))
	req.Data = make([]byte, 4096-overhead)
	frame := zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: 77, Op: zkproto.OpSetData}, req)
	if got := binary.BigEndian.Uint32(frame); got != 4096 {
		t.Fatalf("test frame is %d bytes", got)
	}
	c.writeRaw(frame)
	if f, _ := c.await(77, zkproto.OpSetData); f.Header.Err != zkproto.CodeOK {
		t.Fatalf("frame of exactly maxbuffer: %v", f.Header.Err)
	}
}

// TestUnknownOpcodes: an opcode the server does not serve gets
// Unimplemented with zxid -1, then the connection closes; requests
// pipelined behind it get nothing. check(13) outside a multi and the
// internal opcodes are refused the same way and change nothing.
func TestUnknownOpcodes(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		observer := rawSession(t, srv.Addr)
		observer.mustCreate("/victim", 0)
		tests := []struct {
			name string
			op   zkproto.Op
			body jute.Record
			// recommended is set where docs/zookeeper-protocol.md recommends refusing what
			// 3.8.0 mishandles (§2.1, §2.4).
			recommended string
		}{
			{"999", 999, nil, ""},
			{"notification(0)", zkproto.OpNotification, nil, ""},
			{"10 (unassigned)", 10, nil, "it answers Unimplemented but keeps the connection"},
			{"check(13) outside multi", zkproto.OpCheck, &zkproto.CheckVersionRequest{Path: "/victim", Version: -1},
				"it never answers, and logs a txn it cannot replay"},
			{"deleteContainer(20)", zkproto.OpDeleteContainer, &zkproto.DeleteContainerRequest{Path: []byte("/victim")},
				"it runs the request, without ACL or session checks"},
			{"createSession(-10)", zkproto.OpCreateSession, nil, "it answers MarshallingError"},
			{"error(-1)", zkproto.OpError, nil, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if tt.recommended != "" {
					srv.keeperOnly(t, tt.recommended)
				}
				c := rawSession(t, srv.Addr)
				before := lastZxid(t, observer)
				buf := zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: 41, Op: tt.op}, tt.body)
				buf = zkproto.AppendRequestFrame(buf, zkproto.RequestHeader{Xid: 42, Op: zkproto.OpGetData},
					&zkproto.GetDataRequest{Path: "/victim"})
				c.writeRaw(buf)
				f := c.next(zkproto.OpPing) // any op: an error reply has no body
				want := zkproto.ReplyHeader{Xid: 41, Zxid: -1, Err: zkproto.CodeUnimplemented}
				if f.Header != want || f.Len != zkproto.ReplyHeaderLen {
					t.Fatalf("reply %+v (%d bytes), want %+v", f.Header, f.Len, want)
				}
				c.expectClosed()
				if after := lastZxid(t, observer); after != before {
					t.Errorf("zxid moved %#x -> %#x: the refused request became a txn", before, after)
				}
				if code := observer.code(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/victim"}); code != zkproto.CodeOK {
					t.Errorf("/victim: %v", code)
				}
			})
		}
	})
}

// TestMalformedBodies: a body that does not decode gets MarshallingError
// and the connection stays open, its replies still in order.
func TestMalformedBodies(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := rawSession(t, srv.Addr)
		c.mustCreate("/m", 0)
		type raw struct {
			name string
			op   zkproto.Op
			body []byte
		}
		str := func(s string) []byte { return append(lengthPrefix(int32(len(s))), s...) }
		cat := func(parts ...[]byte) []byte {
			var out []byte
			for _, p := range parts {
				out = append(out, p...)
			}
			return out
		}
		multiHeader := func(op zkproto.Op) []byte {
			return jute.Marshal(&zkproto.MultiHeader{Type: op, Err: -1})
		}
		end := jute.Marshal(&zkproto.MultiHeader{Type: -1, Done: true, Err: -1})
		tests := []raw{
			{"getData with no body", zkproto.OpGetData, nil},
			{"getData with a truncated path", zkproto.OpGetData, cat(lengthPrefix(100), []byte("/m"))},
			{"getData with a negative path length", zkproto.OpGetData, cat(lengthPrefix(-2), []byte{0})},
			{"exists missing its watch byte", zkproto.OpExists, str("/m")},
			{"create with a truncated ACL", zkproto.OpCreate, cat(str("/m/x"), lengthPrefix(-1), lengthPrefix(1))},
			{"create with a huge ACL count", zkproto.OpCreate, cat(str("/m/x"), lengthPrefix(-1), lengthPrefix(0x7fffffff), lengthPrefix(0))},
			{"setData with a data length past the end", zkproto.OpSetData, cat(str("/m"), lengthPrefix(50), []byte("abc"))},
			{"setWatches with a huge vector", zkproto.OpSetWatches, cat(make([]byte, 8), lengthPrefix(0x7fffffff))},
			{"multi with an unknown op", zkproto.OpMulti, cat(multiHeader(99), str("/m"), end)},
			{"multi mixing a read", zkproto.OpMulti, cat(
				multiHeader(zkproto.OpSetData), jute.Marshal(&zkproto.SetDataRequest{Path: "/m", Version: -1}),
				multiHeader(zkproto.OpGetData), jute.Marshal(&zkproto.GetDataRequest{Path: "/m"}), end)},
			{"multiRead with a write", zkproto.OpMultiRead, cat(
				multiHeader(zkproto.OpGetData), jute.Marshal(&zkproto.GetDataRequest{Path: "/m"}),
				multiHeader(zkproto.OpDelete), jute.Marshal(&zkproto.DeleteRequest{Path: "/m", Version: -1}), end)},
			{"multi without its terminator", zkproto.OpMulti, cat(
				multiHeader(zkproto.OpDelete), jute.Marshal(&zkproto.DeleteRequest{Path: "/m", Version: -1}))},
		}
		if !srv.Real {
			// 3.8.0 closes the connection instead: it decodes auth
			// packets outside the request pipeline.
			tests = append(tests, raw{"auth with a truncated scheme", zkproto.OpAuth, cat(lengthPrefix(0), lengthPrefix(10), []byte("dig"))})
		}
		// Pipeline every bad request, each followed by a good one, in one
		// write: all must be answered, in order.
		var buf []byte
		xid := int32(100)
		for _, tt := range tests {
			payload := cat(jute.Marshal(&zkproto.RequestHeader{Xid: xid, Op: tt.op}), tt.body)
			buf = zkproto.AppendFrame(buf, payload)
			buf = zkproto.AppendRequestFrame(buf, zkproto.RequestHeader{Xid: xid + 1, Op: zkproto.OpExists},
				&zkproto.ExistsRequest{Path: "/m"})
			xid += 2
		}
		c.writeRaw(buf)
		xid = 100
		for _, tt := range tests {
			f := c.next(zkproto.OpPing)
			if f.Header.Xid != xid || f.Header.Err != zkproto.CodeMarshallingError || f.Len != zkproto.ReplyHeaderLen {
				t.Errorf("%s: reply %+v (%d bytes), want xid %d MarshallingError", tt.name, f.Header, f.Len, xid)
			}
			g := c.next(zkproto.OpExists)
			if g.Header.Xid != xid+1 || g.Header.Err != zkproto.CodeOK {
				t.Errorf("%s: the request after it got %+v", tt.name, g.Header)
			}
			xid += 2
		}
		// Nothing was changed by the bad writes.
		body := c.mustOK(zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: "/m"}).(*zkproto.GetChildren2Response)
		if len(body.Children) != 0 || body.Stat.Version != 0 {
			t.Errorf("/m changed: %+v", body)
		}
	})
}

func TestShortFrames(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		for _, n := range []int{0, 4, 7} {
			c := rawSession(t, srv.Addr)
			c.writeFrame(make([]byte, n))
			c.expectClosed()
		}
		// A ConnectRequest too short to decode.
		c := rawDial(t, srv.Addr)
		c.writeFrame([]byte{0, 0, 0, 0, 1})
		c.expectClosed()
	})
}

// TestClientAheadOfServer: a client that has seen a later zxid than the
// server's is closed without a response (docs/zookeeper-protocol.md §1.3 step 2).
func TestClientAheadOfServer(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		r := rawSession(t, srv.Addr)
		last := lastZxid(t, r)
		c := rawDial(t, srv.Addr)
		req := newSessionRequest(30000)
		req.LastZxidSeen = last + 1000
		c.writeFrame(jute.Marshal(req))
		c.expectClosed()
		// Reattaching a live session from the future is refused the same way,
		// and does not disturb the session.
		c = rawDial(t, srv.Addr)
		c.writeFrame(jute.Marshal(&zkproto.ConnectRequest{
			LastZxidSeen: last + 1000, TimeoutMs: 30000, SessionID: r.SessionID, Passwd: r.Passwd, HasReadOnly: true,
		}))
		c.expectClosed()
		r.mustCreate("/still-here", 0)
	})
}

// TestReattachWithBadPassword: the response is the invalid-session frame
// and a close. Like Apache ZooKeeper, the holder's connection is closed
// first (docs/zookeeper-protocol.md §1.3 quirk), but the session survives for the real owner.
func TestReattachWithBadPassword(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		holder := rawSession(t, srv.Addr)
		holder.mustCreate("/held", zkproto.FlagEphemeral)
		bad := make([]byte, 16)
		copy(bad, holder.Passwd)
		bad[0] ^= 0xff
		tests := []struct {
			name      string
			sessionID int64
			passwd    []byte
		}{
			{"wrong password", holder.SessionID, bad},
			{"short password", holder.SessionID, holder.Passwd[:8]},
			{"unknown session", holder.SessionID + 12345, holder.Passwd},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c := rawDial(t, srv.Addr)
				c.writeFrame(jute.Marshal(&zkproto.ConnectRequest{
					TimeoutMs: 30000, SessionID: tt.sessionID, Passwd: tt.passwd, HasReadOnly: true,
				}))
				expectInvalidSession(t, c)
			})
		}
		holder.expectClosed()
		owner := rawDial(t, srv.Addr)
		resp, err := owner.connect(&zkproto.ConnectRequest{
			TimeoutMs: 30000, SessionID: holder.SessionID, Passwd: holder.Passwd, HasReadOnly: true,
		})
		if err != nil || resp.SessionID != holder.SessionID {
			t.Fatalf("the owner's reattach: %+v %v", resp, err)
		}
		if code := owner.code(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/held"}); code != zkproto.CodeOK {
			t.Errorf("ephemeral after the bad reattach: %v", code)
		}

		// Without the readOnly byte the refusal is 36 bytes.
		c := rawDial(t, srv.Addr)
		c.writeFrame(jute.Marshal(&zkproto.ConnectRequest{TimeoutMs: 30000, SessionID: 42, Passwd: make([]byte, 16)}))
		payload, err := c.readFrame()
		if err != nil || len(payload) != zkproto.ConnectResponseLen-1 {
			t.Fatalf("refusal without the readOnly byte: %d bytes, %v", len(payload), err)
		}
		if resp, _ := zkproto.DecodeConnectResponse(payload, 0); resp.TimeoutMs != 0 || resp.SessionID != 0 {
			t.Errorf("refusal %+v", resp)
		}
		c.expectClosed()
	})
}

// TestSlowClientsDoNotBlockOthers opens connections that stall part-way
// through a frame, before and after the handshake, and checks that another
// client is served meanwhile. Connections that never finish their
// handshake are closed after Conn.HandshakeTimeout (keeper's own bound).
func TestSlowClientsDoNotBlockOthers(t *testing.T) {
	s := startServer(t, func(c *Config) {
		c.Conn = clientconn.DefaultConfig()
		c.Conn.MaxBuffer = c.Core.MaxBuffer
		c.Conn.MaxOutstanding = c.Core.MaxOutstanding
		c.Conn.HandshakeTimeout = 500 * time.Millisecond
	})
	var preHandshake, postHandshake []*rawClient
	for i := range 10 {
		c := rawDial(t, s.Addr().String())
		switch i % 3 {
		case 0:
			c.writeRaw([]byte{0, 0}) // half a length prefix
		case 1:
			c.writeRaw(append(lengthPrefix(45), 0, 0, 0, 0, 0)) // part of a ConnectRequest
		default:
			c.writeRaw(lengthPrefix(45))
		}
		preHandshake = append(preHandshake, c)
		d := rawSession(t, s.Addr().String())
		d.writeRaw(append(lengthPrefix(100), 0, 0, 0, 1, 0, 0, 0, 4)) // a getData, cut short
		postHandshake = append(postHandshake, d)
	}
	c := zkOpen(t, s)
	start := time.Now()
	for i := range 50 {
		mustCreate(t, c, fmt.Sprintf("/fast-%d", i), nil, 0, openACL)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("50 creates took %v next to stalled connections", elapsed)
	}
	for _, p := range preHandshake {
		p.expectClosed()
	}
	// Stalled connections that finished their handshake stay open (their
	// session timeout, 30 s, governs them): they are merely slow.
	for _, p := range postHandshake {
		p.nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := p.r.ReadByte(); err == nil || isClosedErr(err) {
			t.Fatalf("a stalled session's connection: %v", err)
		}
	}
}

func TestMaxClientCnxns(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxClientCnxns = 3 })
	var open []*rawClient
	for range 3 {
		open = append(open, rawSession(t, s.Addr().String()))
	}
	// The fourth from the same address is closed before its handshake.
	extra := rawDial(t, s.Addr().String())
	extra.writeFrame(jute.Marshal(newSessionRequest(30000)))
	extra.expectClosed()
	for i, c := range open {
		c.mustCreate("/ok-"+string(rune('a'+i)), 0)
	}
	// Once one closes, a new connection is admitted.
	open[0].nc.Close()
	eventually(t, waitTimeout, func() bool {
		nc, err := net.DialTimeout("tcp", s.Addr().String(), waitTimeout)
		if err != nil {
			return false
		}
		defer nc.Close()
		c := &rawClient{t: t, nc: nc, r: bufio.NewReader(nc)}
		resp, err := c.connect(newSessionRequest(30000))
		return err == nil && resp.SessionID != 0
	}, "a free connection slot")
}

// TestReadPathValidation: reads look the path up without validating it,
// so a malformed path is just NoNode; exists rejects only NUL (docs/zookeeper-protocol.md §2.5).
func TestReadPathValidation(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		r := rawSession(t, srv.Addr)
		tests := []struct {
			op   zkproto.Op
			body jute.Record
			want zkproto.Code
		}{
			{zkproto.OpGetData, &zkproto.GetDataRequest{Path: "noslash"}, zkproto.CodeNoNode},
			{zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/zookeeper/"}, zkproto.CodeNoNode},
			{zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: "//"}, zkproto.CodeNoNode},
			{zkproto.OpExists, &zkproto.ExistsRequest{Path: "noslash"}, zkproto.CodeNoNode},
			{zkproto.OpExists, &zkproto.ExistsRequest{Path: "/a\x00b"}, zkproto.CodeBadArguments},
			{zkproto.OpGetACL, &zkproto.GetACLRequest{Path: "noslash"}, zkproto.CodeNoNode},
		}
		for _, tt := range tests {
			if got := r.code(tt.op, tt.body); got != tt.want {
				t.Errorf("%v %+v: %v, want %v", tt.op, tt.body, got, tt.want)
			}
		}
	})
}
