package zkcore

import (
	"slices"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// Mode is the server's part in the service.
type Mode uint8

// Modes.
const (
	// Standalone prepares, logs and applies its own writes.
	Standalone Mode = iota
	// Leader prepares every write, its own clients' and those its learners
	// forward, and expires sessions.
	Leader
	// Learner (a follower or an observer) serves reads, forwards writes to
	// the leader and applies what the leader commits.
	Learner
	// NotServing has no leader: it closes connections and refuses new
	// ones.
	NotServing
	// ReadOnly has no leader either, but serves reads to clients that
	// accept a read-only server (readonlymode.enabled, docs/zookeeper-protocol.md §6.4): their
	// sessions are local to this server, writes get NotReadOnly.
	ReadOnly
)

func (m Mode) String() string {
	switch m {
	case Standalone:
		return "standalone"
	case Leader:
		return "leader"
	case Learner:
		return "learner"
	case ReadOnly:
		return "read-only"
	}
	return "not serving"
}

// Forward is a write a learner's client asked for, for the leader to
// prepare (Zab's REQUEST).
type Forward struct {
	SessionID int64
	Cxid      int32
	Op        zkproto.Op
	// Body is the request record; for createSession, a
	// *txn.CreateSession with the negotiated timeout.
	Body jute.Record
	// Raw is the body as the client sent it, when the learner has it
	// (zkcore.Request.Raw): what goes to the leader.
	Raw []byte
	// Bad is set when the client's body did not decode: the leader
	// answers MarshallingError.
	Bad bool
	// IDs are the connection's auth identities, for the leader's ACL
	// checks.
	IDs []zkproto.ID
}

// SessionTouch says a session was active on a learner; learners report
// them to the leader in their PING replies.
type SessionTouch struct {
	ID        int64
	TimeoutMs int32
}

// syncWait is a client's sync waiting for the leader's commit point.
type syncWait struct {
	conn ConnID
	e    *entry
}

// Mode returns the server's mode.
func (s *Server) Mode() Mode { return s.mode }

// SetMode changes the server's part. Becoming the leader of epoch e makes
// its next zxid e<<32|1. Any change of leader voids what was prepared or
// forwarded and not yet committed; losing the leader (NotServing) also
// closes every connection, since the fate of their writes in flight is
// unknown to the clients (ConnectionLoss), as Apache ZooKeeper does.
//
// A member whose storage failed (FailWrites) stays NotServing: it cannot
// make anything durable, so it must not serve reads as if it were current.
func (s *Server) SetMode(m Mode, epoch zxid.Epoch, now Now) {
	old := s.mode
	if s.writeErr != nil && old != Standalone {
		m = NotServing
	}
	s.mode = m
	if m == NotServing && old != NotServing {
		s.notServingSinceMs = now.MonoMs
	}
	if old != m {
		// A reattach waiting for the old leader's verdict will not get
		// it: the client reconnects.
		s.dropRevalidations(now)
		// Whoever leads now expires sessions from a fresh start: closes
		// the old leader began went with it, and a follower only saw its
		// own clients' activity (Apache ZooKeeper rebuilds its session
		// tracker when it becomes leader).
		s.sessions.Renew(now.MonoMs)
	}
	if old != m && old != Standalone {
		s.view = newView(s.tree)
		s.lastProposed = s.tree.LastZxid()
		s.outbox, s.proposals = nil, nil
		s.reconfigPending = 0
	}
	if m == Leader {
		s.lastProposed = max(s.lastProposed, zxid.Make(epoch, 0))
	}
	if old != m && (m == NotServing || m == ReadOnly || old == ReadOnly) {
		for _, id := range s.sortedConns() {
			c := s.conns[id]
			if c.hold != nil || (m == NotServing && s.rehold(c, now)) {
				// Unanswered: the client has nothing in flight, and is
				// answered once the member serves (hold.go).
				continue
			}
			s.closeConn(c)
		}
		s.syncs = nil
	}
	if old == ReadOnly && m != ReadOnly {
		// Read-only sessions were never committed anywhere: they end here.
		for id := range s.localSessions {
			s.sessions.Remove(id)
		}
		clear(s.localSessions)
	}
	if m != NotServing && len(s.held) > 0 {
		s.releaseHeld(now)
	}
}

func (s *Server) sortedConns() []ConnID {
	out := make([]ConnID, 0, len(s.conns))
	for id := range s.conns {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// forward hands a client's write to the leader; its reply comes when the
// committed txn is applied here.
func (s *Server) forward(c *conn, e *entry) {
	s.outbox = append(s.outbox, Out{Forward: &Forward{SessionID: c.session, Cxid: e.xid, Op: e.op,
		Body: e.body, Raw: e.raw, Bad: e.badBody, IDs: slices.Clone(c.ids)}})
	e.executed = true
	e.zxid = 0 // decided by the leader
}

// queueSync makes a client's sync wait for the leader's commit point.
func (s *Server) queueSync(c *conn, e *entry) {
	e.executed = true
	s.syncs = append(s.syncs, syncWait{conn: c.id, e: e})
	s.outbox = append(s.outbox, Out{Sync: true})
}

// SyncDone completes the oldest sync waiting for the leader: everything
// the leader had committed when it saw the sync has been applied here.
func (s *Server) SyncDone(now Now) {
	if len(s.syncs) == 0 {
		return
	}
	w := s.syncs[0]
	s.syncs = s.syncs[1:]
	c, ok := s.conns[w.conn]
	if !ok || w.e.done {
		return
	}
	s.finish(w.e, s.LastZxid(), zkproto.CodeOK, &zkproto.SyncResponse{Path: w.e.body.(*zkproto.SyncRequest).Path})
	s.pump(c, now)
}

// Remote prepares a write forwarded by a learner (leader only).
func (s *Server) Remote(f Forward, now Now) {
	if s.mode != Leader {
		return
	}
	if f.Op == zkproto.OpCreateSession {
		cs, ok := f.Body.(*txn.CreateSession)
		if !ok {
			return
		}
		s.sessions.Add(f.SessionID, cs.TimeoutMs, now.MonoMs)
		z := s.nextZxid()
		s.propose(&txn.Txn{
			Header: txn.Header{ClientID: f.SessionID, Zxid: z, Time: now.WallMs, Type: zkproto.OpCreateSession},
			Record: &txn.CreateSession{TimeoutMs: cs.TimeoutMs},
		})
		return
	}
	s.sessions.Touch(f.SessionID, now.MonoMs)
	s.prepare(f.SessionID, f.IDs, f.Cxid, f.Op, f.Body, f.Bad, now)
}

// TouchSessions extends the sessions a learner reports active (leader).
func (s *Server) TouchSessions(touches []SessionTouch, now Now) {
	for _, t := range touches {
		s.sessions.Touch(t.ID, now.MonoMs)
	}
}

// HasTouches reports whether sessions were active here since the last
// TakeTouches (learner).
func (s *Server) HasTouches() bool { return len(s.touched) > 0 }

// TakeTouches returns, in id order, the sessions touched here since the
// last call (learner), for the next PING reply to the leader.
func (s *Server) TakeTouches() []SessionTouch {
	out := make([]SessionTouch, 0, len(s.touched))
	for id, to := range s.touched {
		out = append(out, SessionTouch{ID: id, TimeoutMs: to})
	}
	clear(s.touched)
	slices.SortFunc(out, func(a, b SessionTouch) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// touch records activity on a session: directly in the table, and, on a
// learner, for the leader.
func (s *Server) touch(c *conn, now Now) {
	if c.session == 0 {
		return
	}
	s.sessions.Touch(c.session, now.MonoMs)
	if s.mode == Learner {
		s.touched[c.session] = c.timeoutMs
	}
}
