package zkcore

import (
	"errors"
	"net/netip"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/session"
	"keeper/coordination/zkproto"
)

// learnerSession opens a session with an ephemeral /e on the pair's
// learner (connection 1) and returns its id.
func learnerSession(t *testing.T, p *pair) int64 {
	t.Helper()
	f := p.learner
	f.s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:1"), f.now)
	f.s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, f.now)
	p.settle()
	var resp zkproto.ConnectResponse
	fs := f.take(1)
	resp.Decode(jute.NewDecoder(fs[0].raw, 0))
	x := f.send(1, zkproto.OpCreate, create("/e", "", zkproto.FlagEphemeral))
	p.settle()
	f.expect(1, ok(x))
	return resp.SessionID
}

// reattach sends a ConnectRequest for sid on a new connection id.
func (h *harness) reattach(id ConnID, sid int64, passwd []byte) {
	h.s.NewConn(id, netip.MustParseAddrPort("127.0.0.1:2"), h.now)
	h.s.Connect(id, &zkproto.ConnectRequest{TimeoutMs: 10000, SessionID: sid, Passwd: passwd}, h.now)
	h.drive()
}

// connectAnswer decodes the handshake reply among frames.
func connectAnswer(t *testing.T, fs []frame) zkproto.ConnectResponse {
	t.Helper()
	if len(fs) == 0 {
		t.Fatal("no handshake reply")
	}
	var resp zkproto.ConnectResponse
	d := jute.NewDecoder(fs[0].raw, 0)
	resp.Decode(d)
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	return resp
}

// A learner answers a reattach only with the leader's verdict, which also
// touches the session on the leader; a session the leader is closing is
// refused even though the learner's own table still has it.
func TestLearnerRevalidatesReattach(t *testing.T) {
	tests := []struct {
		name     string
		leaderMs int64 // leader time passing before the reattach, with a tick
		passwd   func(sid int64) []byte
		asks     int  // REVALIDATEs the learner sends
		accepted bool // the handshake succeeds
	}{
		{name: "alive on the leader", leaderMs: 8000, asks: 1, accepted: true},
		{name: "expired on the leader", leaderMs: 30000, asks: 1},
		{name: "wrong password", leaderMs: 0, asks: 0,
			passwd: func(int64) []byte { return make([]byte, 16) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t)
			sid := learnerSession(t, p)
			f, l := p.learner, p.leader
			l.now.MonoMs += tc.leaderMs
			l.s.Tick(l.now)
			l.drive() // the leader may propose the closeSession; nobody applied it yet
			if _, ok := f.s.Sessions().Get(sid); !ok {
				t.Fatal("the learner's table lost the session")
			}
			pw := session.Password(sid)
			passwd := pw[:]
			if tc.passwd != nil {
				passwd = tc.passwd(sid)
			}
			f.reattach(2, sid, passwd)
			if len(f.revals) != tc.asks {
				t.Fatalf("%d REVALIDATEs, want %d", len(f.revals), tc.asks)
			}
			if tc.asks > 0 {
				if r := f.revals[0]; r.SessionID != sid || r.TimeoutMs != 10000 {
					t.Fatalf("REVALIDATE %+v", r)
				}
				if fs := f.take(2); len(fs) != 0 {
					t.Fatalf("answered before the leader did: %+v", headers(fs))
				}
				if !f.closed[1] {
					t.Fatal("the session's old connection stays open")
				}
				for _, r := range f.revals {
					f.s.Revalidated(r.SessionID, l.s.Revalidate(r.SessionID, r.TimeoutMs, l.now), f.now)
				}
				f.revals = nil
				f.drive()
			}
			resp := connectAnswer(t, f.take(2))
			if got := resp.TimeoutMs != 0 && resp.SessionID == sid; got != tc.accepted || f.closed[2] == tc.accepted {
				t.Fatalf("handshake %+v, closed %v; want accepted %v", resp, f.closed[2], tc.accepted)
			}
			if !tc.accepted {
				return
			}
			// The REVALIDATE touched the session: 16 s after it was
			// created (timeout 10 s), it is alive on the leader.
			l.now.MonoMs += 8000
			l.s.Tick(l.now)
			l.drive()
			if len(l.pending) != 0 {
				t.Fatalf("the leader expired a revalidated session: %d txns", len(l.pending))
			}
			x := f.send(2, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/e"})
			f.expect(2, ok(x))
		})
	}
}

// Requests pipelined behind a reattach wait for the leader's verdict.
func TestRevalidatePipelined(t *testing.T) {
	p := newPair(t)
	sid := learnerSession(t, p)
	f := p.learner
	pw := session.Password(sid)
	f.reattach(2, sid, pw[:])
	x := f.send(2, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/e"})
	if fs := f.take(2); len(fs) != 0 {
		t.Fatalf("frames before the verdict: %+v", headers(fs))
	}
	p.settle()
	fs := f.take(2)
	if len(fs) != 2 || connectAnswer(t, fs).SessionID != sid || fs[1].hdr.Xid != x || fs[1].hdr.Err != 0 {
		t.Fatalf("frames %+v", headers(fs))
	}
	// A late verdict for the same session changes nothing.
	f.s.Revalidated(sid, false, f.now)
	f.drive()
	if f.closed[2] || len(f.take(2)) != 0 {
		t.Fatal("a stale verdict reached an established connection")
	}
}

// A reattach waiting for a verdict from a leader that is gone is held
// again while the member has no leader (within the handshake hold), and
// asks the next leader once the member serves; a member that changes role
// long after it last lost a leader closes it, as ZooKeeper does. A verdict
// from the old leader is ignored either way.
func TestRevalidateLeaderLost(t *testing.T) {
	t.Run("held until a new leader", func(t *testing.T) {
		p := newPair(t)
		sid := learnerSession(t, p)
		f := p.learner
		pw := session.Password(sid)
		f.reattach(2, sid, pw[:])
		x := f.send(2, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/e"})
		f.revals = nil
		f.s.SetMode(NotServing, 0, f.now)
		f.drive()
		if f.closed[2] || len(f.take(2)) != 0 {
			t.Fatal("a reattach was refused or answered when the leader was lost")
		}
		f.s.Revalidated(sid, true, f.now) // the old leader's late verdict
		f.drive()
		if f.closed[2] || len(f.take(2)) != 0 {
			t.Fatal("the old leader's verdict answered a held reattach")
		}
		f.now.MonoMs += 100
		f.s.SetMode(Learner, 2, f.now)
		f.drive()
		if len(f.revals) != 1 || f.revals[0].SessionID != sid {
			t.Fatalf("REVALIDATEs to the new leader: %+v, want one for %#x", f.revals, sid)
		}
		f.s.Revalidated(sid, true, f.now)
		f.drive()
		fs := f.take(2)
		if len(fs) != 2 || connectAnswer(t, fs).SessionID != sid || fs[1].hdr.Xid != x || f.closed[2] {
			t.Fatalf("frames %+v, closed %v; want the handshake, then the read behind it", headers(fs), f.closed[2])
		}
	})
	t.Run("closed long after", func(t *testing.T) {
		p := newPair(t)
		sid := learnerSession(t, p)
		f := p.learner
		pw := session.Password(sid)
		f.now.MonoMs += 60000 // long after the learner last lost a leader
		f.reattach(2, sid, pw[:])
		f.s.SetMode(Leader, 2, f.now)
		f.drive()
		if !f.closed[2] || len(f.take(2)) != 0 {
			t.Fatal("a reattach waits for a verdict that will not come")
		}
		f.s.Revalidated(sid, true, f.now)
		f.drive()
		if len(f.take(2)) != 0 {
			t.Fatal("a verdict answered a closed connection")
		}
	})
}

// A member of an ensemble whose storage failed leaves the service for
// good: its connections close, new ones are refused, and a new role does
// not bring it back.
func TestFailWritesInEnsemble(t *testing.T) {
	for _, mode := range []Mode{Learner, Leader} {
		t.Run(mode.String(), func(t *testing.T) {
			p := newPair(t)
			h := p.learner
			if mode == Leader {
				h = p.leader
			}
			h.s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:1"), h.now)
			h.s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, h.now)
			p.settle()
			h.take(1)
			h.s.FailWrites(errors.New("disk full"))
			h.drive()
			if !h.closed[1] || h.s.Mode() != NotServing {
				t.Fatalf("mode %s, connection closed %v", h.s.Mode(), h.closed[1])
			}
			h.s.SetMode(mode, 3, h.now)
			h.s.NewConn(2, netip.MustParseAddrPort("127.0.0.1:2"), h.now)
			h.s.Connect(2, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, h.now)
			h.drive()
			if h.s.Mode() != NotServing || !h.closed[2] || len(h.take(2)) != 0 {
				t.Fatalf("mode %s after a storage failure; new connection closed %v", h.s.Mode(), h.closed[2])
			}
		})
	}
}

// A session the leader closes while a reattach waits for its verdict is
// refused as expired when the closeSession is applied.
func TestRevalidateSessionClosedMeanwhile(t *testing.T) {
	p := newPair(t)
	sid := learnerSession(t, p)
	f, l := p.learner, p.leader
	pw := session.Password(sid)
	f.reattach(2, sid, pw[:])
	l.now.MonoMs += 30000
	l.s.Tick(l.now)
	l.drive()
	for _, tx := range l.pending {
		l.s.Apply(tx, l.now)
		f.s.Apply(tx, f.now)
	}
	l.pending = nil
	f.drive()
	resp := connectAnswer(t, f.take(2))
	if resp.TimeoutMs != 0 || !f.closed[2] {
		t.Fatalf("handshake %+v after the session closed; closed %v", resp, f.closed[2])
	}
	f.s.Revalidated(sid, true, f.now) // the leader's late verdict
	f.drive()
	if len(f.take(2)) != 0 {
		t.Fatal("a late verdict answered again")
	}
}
