package zkcore

import (
	"slices"

	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// A member without a leader cannot answer a handshake. Apache ZooKeeper
// closes the connection at once; the client then tries the next member,
// and after a full round of refusals it backs off (go-zookeeper for a
// second, kazoo from 100 ms up, doubling), which makes a failover that
// takes the ensemble a few tens of milliseconds cost its clients a second
// or more. Keeper instead holds a handshake that arrives within
// Config.HoldHandshakeMs of the member losing its leader (or starting),
// and answers it as soon as the member serves again. It holds a handshake
// for at most a quarter of the session timeout the client asked for, well
// inside the time clients give a server to answer (a third of it with
// three servers for the Java client and kazoo, ten times two thirds for
// go-zookeeper); past either bound it closes the connection, as ZooKeeper
// would have at once. Requests that follow the handshake on the
// connection (the Java client sends its watches and auth right behind it)
// wait with it, counted in Outstanding.

//
// A learner holds, within the same bounds, the handshake of a client that
// has seen a newer state than it has applied (a client of a member that
// just left, or of the leader a reconfiguration removed): the commit that
// brings the learner there is on its way, and the handshake is answered
// once it is applied. ZooKeeper closes such a connection at once too.

//
// A handshake the member took but had not answered when it lost its leader
// (a reattach waiting for the old leader's verdict, a new session whose
// createSession the old leader never committed) is held again, within the
// same bounds counted from its arrival, rather than closed: a client
// reconnects exactly when the ensemble changes hands (its member left or
// lost the leader), and ZooKeeper's refusals then cost it a whole round of
// members, after which go-zookeeper fails its queued requests.

// heldHandshake is a connection's handshake waiting for the member to
// serve, or to apply what the client has seen.
type heldHandshake struct {
	req     *zkproto.ConnectRequest
	reqs    []Request // requests that followed it, in order
	untilMs int64     // MonoMs after which the connection is closed
	// arrivedMs is when the handshake arrived; counted is set once it was
	// counted in the statistics (it was taken, then held again).
	arrivedMs int64
	counted   bool
	// ahead is the state the client has seen, when the member serves but
	// is behind it; 0 when the member was not serving.
	ahead zxid.ID
}

// hold keeps c's handshake waiting if the member lost its leader recently
// enough, or is a learner behind what the client has seen; it reports
// whether it did. A connection is held behind a client's state once: a
// handshake released by its catching up and still unanswerable is not
// held again for it.
func (s *Server) hold(c *conn, req *zkproto.ConnectRequest, now Now) bool {
	ahead := zxid.ID(req.LastZxidSeen)
	behind := s.mode == Learner && ahead > s.LastZxid()
	if (s.mode != NotServing && !behind) || (behind && c.heldAhead) || s.writeErr != nil || s.cfg.HoldHandshakeMs <= 0 || req.TimeoutMs <= 0 {
		return false
	}
	since := s.notServingSinceMs
	if behind {
		since = now.MonoMs
	} else {
		ahead = 0
	}
	until := min(since+s.cfg.HoldHandshakeMs, now.MonoMs+int64(req.TimeoutMs)/4)
	if now.MonoMs >= until {
		return false
	}
	c.hold = &heldHandshake{req: copyConnect(req), untilMs: until, ahead: ahead, arrivedMs: now.MonoMs}
	c.heldAhead = c.heldAhead || behind
	s.held = append(s.held, c.id)
	return true
}

// copyConnect copies req: the driver may reuse it once Connect returns.
func copyConnect(req *zkproto.ConnectRequest) *zkproto.ConnectRequest {
	held := *req
	held.Passwd = append([]byte(nil), req.Passwd...)
	return &held
}

// rehold holds again the handshake c's member took but has not answered,
// now that the member lost its leader (see above); it reports whether it
// did. The requests queued behind the handshake stay queued, unrun, and the
// session it named or created is left to its fate: the client reattaches
// or starts over when the handshake is answered.
func (s *Server) rehold(c *conn, now Now) bool {
	if c.closing || c.hold != nil || len(c.queue) == 0 || s.writeErr != nil || s.cfg.HoldHandshakeMs <= 0 {
		return false
	}
	e := c.queue[0]
	if e.kind != kindConnect || e.done || e.connect == nil || e.connect.TimeoutMs <= 0 {
		return false
	}
	until := min(s.notServingSinceMs+s.cfg.HoldHandshakeMs, e.received+int64(e.connect.TimeoutMs)/4)
	if now.MonoMs >= until {
		return false
	}
	if c.session != 0 {
		if s.sessionConn[c.session] == c.id {
			delete(s.sessionConn, c.session)
		}
		c.session, c.timeoutMs = 0, 0
	}
	c.queue = slices.Delete(c.queue, 0, 1)
	c.hold = &heldHandshake{req: e.connect, untilMs: until, arrivedMs: e.received, counted: true}
	s.held = append(s.held, c.id)
	return true
}

// answer takes c's held handshake off hold and runs it, then the requests
// that arrived behind it while it was held.
func (s *Server) answer(c *conn, now Now) {
	h := c.hold
	c.hold = nil
	if c.closing {
		return
	}
	if s.hold(c, h.req, now) {
		// Serving, but behind what the client has seen: held once more.
		c.hold.reqs, c.hold.arrivedMs, c.hold.counted = h.reqs, h.arrivedMs, h.counted
		return
	}
	s.connect(c, h.req, now, h.arrivedMs, !h.counted)
	for _, r := range h.reqs {
		s.Request(c.id, r, now)
	}
}

// releaseCaughtUp answers the handshakes held for a state the member has
// now applied.
func (s *Server) releaseCaughtUp(now Now) {
	var ready []ConnID
	for _, id := range s.held {
		if c, ok := s.conns[id]; ok && c.hold != nil && c.hold.ahead != 0 && c.hold.ahead <= s.LastZxid() {
			ready = append(ready, id)
		}
	}
	for _, id := range ready {
		s.releaseOne(id, now)
	}
}

// releaseOne answers c's held handshake and runs the requests behind it.
func (s *Server) releaseOne(id ConnID, now Now) {
	c, ok := s.conns[id]
	if !ok || c.hold == nil {
		return
	}
	s.held = slices.DeleteFunc(s.held, func(x ConnID) bool { return x == id })
	s.answer(c, now)
}

// releaseHeld answers the held handshakes, and runs the requests behind
// them, now that the member serves (or serves reads).
func (s *Server) releaseHeld(now Now) {
	held := s.held
	s.held = nil
	for _, id := range held {
		c, ok := s.conns[id]
		if !ok || c.hold == nil {
			continue
		}
		s.answer(c, now)
	}
}

// expireHeld closes the connections whose handshake waited too long.
func (s *Server) expireHeld(now Now) {
	k := 0
	for _, id := range s.held {
		c, ok := s.conns[id]
		if !ok || c.hold == nil {
			continue
		}
		if now.MonoMs >= c.hold.untilMs {
			c.hold = nil
			s.closeConn(c)
			continue
		}
		s.held[k] = id
		k++
	}
	clear(s.held[k:])
	s.held = s.held[:k]
}

// heldRequests counts c's requests waiting behind its held handshake.
func (c *conn) heldRequests() int {
	if c.hold == nil {
		return 0
	}
	return len(c.hold.reqs)
}
