package zkcore

import (
	"crypto/subtle"
	"slices"

	"keeper/coordination/jute"
	"keeper/coordination/session"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// Connect handles the ConnectRequest that opens connection id, in the
// order of checks of docs/zookeeper-protocol.md §1.3. A new session is a createSession txn: its
// response, and every request pipelined behind it, wait until the txn is
// applied.
func (s *Server) Connect(id ConnID, req *zkproto.ConnectRequest, now Now) {
	c, ok := s.conns[id]
	if !ok || c.closing || c.session != 0 || c.hold != nil {
		return
	}
	if s.hold(c, req, now) {
		return
	}
	s.connect(c, req, now, now.MonoMs, true)
}

// connect runs c's handshake, which arrived at arrivedMs; count is false
// for one counted already, before a role change held it again.
func (s *Server) connect(c *conn, req *zkproto.ConnectRequest, now Now, arrivedMs int64, count bool) {
	id := c.id
	if count {
		s.stats.packetsReceived++
		s.metrics.connectionRequests.Inc()
		var enc jute.Encoder
		req.Encode(&enc)
		s.metrics.bytesReceived.Add(int64(len(enc.B) + frameHeaderBytes))
		c.stats.received++
		c.stats.lastOp = zkproto.OpCreateSession
	}
	c.readOnlyByte = req.HasReadOnly
	if s.mode == NotServing || (s.mode == ReadOnly && !req.ReadOnly) {
		// No leader: Apache ZooKeeper is not serving either, or serves
		// only clients that accept a read-only server.
		s.closeConn(c)
		return
	}
	if zxid.ID(req.LastZxidSeen) > s.LastZxid() {
		// The client has seen a newer state than ours: it must try another
		// server. Apache ZooKeeper closes without a response.
		s.log.Info("refused client ahead of server",
			"conn", id, "client_zxid", zxid.ID(req.LastZxidSeen), "server_zxid", s.LastZxid())
		s.closeConn(c)
		return
	}
	timeout := session.Negotiate(req.TimeoutMs, s.cfg.MinSessionTimeoutMs, s.cfg.MaxSessionTimeoutMs)
	e := &entry{kind: kindConnect, executed: true, received: arrivedMs, connect: copyConnect(req)}
	// First in the queue: requests left behind a handshake held again
	// (rehold) wait in it for this answer.
	c.queue = slices.Insert(c.queue, 0, e)
	if req.SessionID == 0 && s.mode == ReadOnly {
		s.localSession(c, e, timeout, now)
		s.pump(c, now)
		return
	}
	if req.SessionID == 0 {
		if s.writeErr != nil {
			s.closeConn(c) // a new session needs a txn
			return
		}
		s.newSession(c, e, timeout, now)
		return
	}
	s.reattach(c, e, req, timeout, now)
	s.pump(c, now)
}

// newSession registers a session and proposes its createSession txn.
func (s *Server) newSession(c *conn, e *entry, timeoutMs int32, now Now) {
	sid := s.sessions.Create(timeoutMs, now.MonoMs)
	c.session, c.timeoutMs = sid, timeoutMs
	s.sessionConn[sid] = c.id
	if s.mode == Learner {
		s.outbox = append(s.outbox, Out{Forward: &Forward{SessionID: sid, Op: zkproto.OpCreateSession,
			Body: &txn.CreateSession{TimeoutMs: timeoutMs}}})
		e.zxid = 0
		return
	}
	z := s.nextZxid()
	e.zxid = z
	s.propose(&txn.Txn{
		Header: txn.Header{ClientID: sid, Zxid: z, Time: now.WallMs, Type: zkproto.OpCreateSession},
		Record: &txn.CreateSession{TimeoutMs: timeoutMs},
	})
}

// reattach moves an existing session to connection c. Like Apache
// ZooKeeper, it first closes any other connection holding the session, even
// if the password turns out wrong (docs/zookeeper-protocol.md §1.3). A learner does not answer
// from its own session table: only the leader expires sessions, so it asks
// the leader (Out.Revalidate, Zab's REVALIDATE) and completes the handshake
// with the leader's verdict in Revalidated.
func (s *Server) reattach(c *conn, e *entry, req *zkproto.ConnectRequest, timeoutMs int32, now Now) {
	sid := req.SessionID
	s.metrics.connectionRevalidate.Inc()
	if oldID, ok := s.sessionConn[sid]; ok && oldID != c.id {
		if old, ok := s.conns[oldID]; ok {
			s.closeConn(old)
			old.session = 0
		}
		delete(s.sessionConn, sid)
	}
	want := session.Password(sid)
	if subtle.ConstantTimeCompare(req.Passwd, want[:]) != 1 {
		s.refuseSession(c, e)
		return
	}
	if s.mode == Learner {
		c.session, c.timeoutMs = sid, timeoutMs
		s.sessionConn[sid] = c.id
		e.revalidating = true
		s.outbox = append(s.outbox, Out{Revalidate: &Revalidate{SessionID: sid, TimeoutMs: timeoutMs}})
		return
	}
	if sess, ok := s.sessions.Get(sid); !ok || sess.Closing {
		s.refuseSession(c, e)
		return
	}
	s.sessions.SetTimeout(sid, timeoutMs, now.MonoMs)
	c.session, c.timeoutMs = sid, timeoutMs
	s.sessionConn[sid] = c.id
	s.acceptSession(c, e)
}

// acceptSession answers c's handshake: its session is re-established.
func (s *Server) acceptSession(c *conn, e *entry) {
	pw := session.Password(c.session)
	e.reply = s.connectFrame(c, &zkproto.ConnectResponse{TimeoutMs: c.timeoutMs, SessionID: c.session, Passwd: pw[:]})
	e.done = true
}

// refuseSession answers c's handshake with an expired session (timeout 0,
// the client reports SessionExpired) and closes the connection.
func (s *Server) refuseSession(c *conn, e *entry) {
	e.reply = s.connectFrame(c, &zkproto.ConnectResponse{Passwd: make([]byte, 16)})
	e.done, e.close = true, true
	c.closing = true
}

// Revalidate checks a session a learner's client reattaches to (leader):
// it reports whether the session is alive and, if so, touches it with the
// timeout the learner negotiated, as a reconnect here would.
func (s *Server) Revalidate(sid int64, timeoutMs int32, now Now) bool {
	if s.mode != Leader {
		return false
	}
	return s.sessions.SetTimeout(sid, timeoutMs, now.MonoMs)
}

// Revalidated completes the handshake of the connection waiting for the
// leader's verdict on session sid (learner): re-established if valid, else
// refused as expired. An answer nobody waits for (the connection closed, or
// a newer reattach of the session took its place and is answered by a
// later verdict) is ignored.
func (s *Server) Revalidated(sid int64, valid bool, now Now) {
	c := s.connOf(sid)
	if c == nil || len(c.queue) == 0 {
		return
	}
	e := c.queue[0]
	if e.kind != kindConnect || e.done || !e.revalidating {
		return
	}
	e.revalidating = false
	if !valid || s.mode != Learner {
		delete(s.sessionConn, sid)
		c.session = 0
		s.refuseSession(c, e)
	} else {
		s.sessions.SetTimeout(sid, c.timeoutMs, now.MonoMs)
		s.acceptSession(c, e)
	}
	s.pump(c, now)
}

// dropRevalidations holds again, or else closes, the connections waiting
// for a leader's verdict that will not come (the leader changed, or the
// member stopped serving).
func (s *Server) dropRevalidations(now Now) {
	for _, id := range s.sortedConns() {
		c := s.conns[id]
		if len(c.queue) > 0 && c.queue[0].revalidating {
			c.queue[0].revalidating = false
			if !s.rehold(c, now) {
				s.closeConn(c)
			}
		}
	}
}

// sessionCreated completes the handshake of the connection waiting for the
// createSession txn of sid, if it is still there.
func (s *Server) sessionCreated(sid int64, z zxid.ID) *conn {
	c := s.connOf(sid)
	if c == nil || len(c.queue) == 0 {
		return nil
	}
	e := c.queue[0]
	if e.kind != kindConnect || e.done || e.revalidating || (e.zxid != z && e.zxid != 0) {
		return nil
	}
	pw := session.Password(sid)
	e.reply = s.connectFrame(c, &zkproto.ConnectResponse{TimeoutMs: c.timeoutMs, SessionID: sid, Passwd: pw[:]})
	e.done = true
	return c
}

// localSession opens a session a read-only server keeps to itself.
func (s *Server) localSession(c *conn, e *entry, timeoutMs int32, now Now) {
	sid := s.sessions.Create(timeoutMs, now.MonoMs)
	s.localSessions[sid] = true
	c.session, c.timeoutMs = sid, timeoutMs
	s.sessionConn[sid] = c.id
	pw := session.Password(sid)
	e.reply = s.connectFrame(c, &zkproto.ConnectResponse{TimeoutMs: timeoutMs, SessionID: sid, Passwd: pw[:]})
	e.done = true
}

// connectFrame encodes a ConnectResponse, with the readOnly byte only if
// the request had one (docs/zookeeper-protocol.md §1.2); it says whether this server is
// read-only.
func (s *Server) connectFrame(c *conn, r *zkproto.ConnectResponse) []byte {
	r.HasReadOnly = c.readOnlyByte
	r.ReadOnly = r.TimeoutMs != 0 && s.mode == ReadOnly
	e := jute.Encoder{B: make([]byte, 4, 48)}
	r.Encode(&e)
	putLength(e.B)
	return e.B
}

// connOf returns the connection a session is attached to, or nil.
func (s *Server) connOf(sid int64) *conn {
	id, ok := s.sessionConn[sid]
	if !ok {
		return nil
	}
	return s.conns[id]
}
