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

// heldHandshake is a connection's handshake waiting for the member to
// serve, or to apply what the client has seen.
type heldHandshake struct {
	req     *zkproto.ConnectRequest
	reqs    []Request // requests that followed it, in order
	untilMs int64     // MonoMs after which the connection is closed
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
	held := *req // the driver may reuse req once Connect returns
	held.Passwd = append([]byte(nil), req.Passwd...)
	c.hold = &heldHandshake{req: &held, untilMs: until, ahead: ahead}
	c.heldAhead = c.heldAhead || behind
	s.held = append(s.held, c.id)
	return true
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
	h := c.hold
	c.hold = nil
	s.held = slices.DeleteFunc(s.held, func(x ConnID) bool { return x == id })
	s.Connect(id, h.req, now)
	for _, r := range h.reqs {
		s.Request(id, r, now)
	}
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
		h := c.hold
		c.hold = nil
		s.Connect(id, h.req, now)
		for _, r := range h.reqs {
			s.Request(id, r, now)
		}
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
