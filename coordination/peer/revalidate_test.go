package peer

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/session"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
)

func TestRevalidateData(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		ask  *zkcore.Revalidate
		sid  int64
		ok   bool
	}{
		{name: "ask", b: EncodeRevalidate(zkcore.Revalidate{SessionID: 0x0201, TimeoutMs: 2000}),
			ask: &zkcore.Revalidate{SessionID: 0x0201, TimeoutMs: 2000}},
		{name: "valid", b: EncodeRevalidateAnswer(-5, true), sid: -5, ok: true},
		{name: "expired", b: EncodeRevalidateAnswer(7, false), sid: 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ask != nil {
				if len(tc.b) != 12 {
					t.Fatalf("%d bytes, want long+int", len(tc.b))
				}
				got, err := DecodeRevalidate(tc.b)
				if err != nil || got != *tc.ask {
					t.Fatalf("got %+v, %v", got, err)
				}
				if _, _, err := DecodeRevalidateAnswer(tc.b); err == nil {
					t.Fatal("a question decoded as an answer")
				}
				return
			}
			if len(tc.b) != 9 {
				t.Fatalf("%d bytes, want long+boolean", len(tc.b))
			}
			sid, ok, err := DecodeRevalidateAnswer(tc.b)
			if err != nil || sid != tc.sid || ok != tc.ok {
				t.Fatalf("got %d %v %v", sid, ok, err)
			}
			if _, err := DecodeRevalidate(tc.b); err == nil {
				t.Fatal("an answer decoded as a question")
			}
		})
	}
}

func FuzzDecodeRevalidate(f *testing.F) {
	f.Add(EncodeRevalidate(zkcore.Revalidate{SessionID: 1, TimeoutMs: 2}))
	f.Add(EncodeRevalidateAnswer(1, true))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeRevalidate(b); err == nil && !bytes.Equal(EncodeRevalidate(r), b) {
			t.Fatalf("%x does not round-trip", b)
		}
		if sid, ok, err := DecodeRevalidateAnswer(b); err == nil && (b[8] == 0 || b[8] == 1) &&
			!bytes.Equal(EncodeRevalidateAnswer(sid, ok), b) {
			t.Fatalf("%x does not round-trip", b)
		}
	})
}

// reattach sends a ConnectRequest for sid on conn of peer id.
func (e *ensemble) reattach(id zab.PeerID, conn zkcore.ConnID, sid int64) {
	pw := session.Password(sid)
	zk := e.peers[id].Core()
	zk.NewConn(conn, netip.MustParseAddrPort("127.0.0.1:41000"), e.now)
	zk.Connect(conn, &zkproto.ConnectRequest{TimeoutMs: 10000, SessionID: sid, Passwd: pw[:]}, e.now)
}

func (e *ensemble) handshake(id zab.PeerID, conn zkcore.ConnID) zkproto.ConnectResponse {
	e.t.Helper()
	var resp zkproto.ConnectResponse
	d := jute.NewDecoder(e.bodies[id][conn][0], 0)
	resp.Decode(d)
	if d.Err() != nil {
		e.t.Fatal(d.Err())
	}
	return resp
}

// A session resumed on another follower is re-established by the leader's
// REVALIDATE verdict; one the leader does not know is refused as expired.
func TestEnsembleRevalidate(t *testing.T) {
	e := newEnsemble(t, 3)
	e.until(2000, "serving", func() bool { _, ok := e.serving(); return ok })
	leader, _ := e.serving()
	var fs []zab.PeerID
	for _, id := range e.ids {
		if id != leader {
			fs = append(fs, id)
		}
	}
	e.connect(fs[0], 1)
	sid := e.handshake(fs[0], 1).SessionID

	e.reattach(fs[1], 2, sid)
	if err := e.peers[fs[1]].HandleReady(e.now); err != nil {
		t.Fatal(err)
	}
	asked := 0
	for _, m := range e.queue {
		if m.Type == zab.MsgRevalidate && m.From == fs[1] && m.To == leader {
			asked++
		}
	}
	if asked != 1 || len(e.frames[fs[1]][2]) != 0 {
		t.Fatalf("%d REVALIDATEs to the leader, %d frames to the client before its verdict", asked, len(e.frames[fs[1]][2]))
	}
	e.until(500, "re-established", func() bool { return len(e.frames[fs[1]][2]) > 0 })
	if r := e.handshake(fs[1], 2); r.SessionID != sid || r.TimeoutMs != 10000 || e.closed[fs[1]][2] {
		t.Fatalf("reattach %+v, closed %v", r, e.closed[fs[1]][2])
	}

	unknown := sid + 1000
	e.reattach(fs[1], 3, unknown)
	e.until(500, "refused", func() bool { return len(e.frames[fs[1]][3]) > 0 })
	if r := e.handshake(fs[1], 3); r.TimeoutMs != 0 || !e.closed[fs[1]][3] {
		t.Fatalf("reattach to an unknown session: %+v, closed %v", r, e.closed[fs[1]][3])
	}
}

// A follower whose log fails leaves the ensemble: its clients are cut off
// and refused, it ignores Zab traffic, and the others go on committing.
func TestStorageFailureTakesPeerOut(t *testing.T) {
	e := newEnsemble(t, 3)
	e.until(2000, "serving", func() bool { _, ok := e.serving(); return ok })
	leader, _ := e.serving()
	f, g := e.ids[0], e.ids[1]
	if f == leader {
		f = e.ids[2]
	} else if g == leader {
		g = e.ids[2]
	}
	e.connect(f, 1)
	e.connect(g, 1)
	errDisk := errors.New("disk gone")
	e.logs[f].failAppend = errDisk
	e.request(g, 1, 1, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/a", ACL: zkproto.OpenACLUnsafe})
	e.until(500, "the follower fails", func() bool { return e.peers[f].Err() != nil })
	if !errors.Is(e.peers[f].Err(), errDisk) || !errors.Is(e.peers[f].Core().WritesFailed(), errDisk) {
		t.Fatalf("errors %v / %v", e.peers[f].Err(), e.peers[f].Core().WritesFailed())
	}
	e.until(100, "its client cut off", func() bool { return e.closed[f][1] })
	zk := e.peers[f].Core()
	zk.NewConn(2, netip.MustParseAddrPort("127.0.0.1:42000"), e.now)
	zk.Connect(2, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, e.now)
	e.until(100, "a new client refused", func() bool { return e.closed[f][2] })
	for i := range 5 {
		e.request(g, 1, int32(i+2), zkproto.OpCreate, &zkproto.CreateRequest{Path: "/b" + string(rune('0'+i)), ACL: zkproto.OpenACLUnsafe})
	}
	e.until(2000, "writes without it", func() bool { _, ok := e.reply(g, 1, 6); return ok })
	if h, _ := e.reply(g, 1, 6); h.Err != 0 {
		t.Fatalf("write after the failure: %v", h.Err)
	}
	if zk.Mode() != zkcore.NotServing || len(e.frames[f][2]) != 0 {
		t.Fatalf("failed follower: mode %s, %d frames to a new client", zk.Mode(), len(e.frames[f][2]))
	}
}
