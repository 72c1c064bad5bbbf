package zkcore

import "keeper/coordination/zkproto"

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

// heldHandshake is a connection's handshake waiting for the member to
// serve.
type heldHandshake struct {
	req     *zkproto.ConnectRequest
	reqs    []Request // requests that followed it, in order
	untilMs int64     // MonoMs after which the connection is closed
}

// hold keeps c's handshake waiting if the member lost its leader recently
// enough; it reports whether it did.
func (s *Server) hold(c *conn, req *zkproto.ConnectRequest, now Now) bool {
	if s.mode != NotServing || s.writeErr != nil || s.cfg.HoldHandshakeMs <= 0 || req.TimeoutMs <= 0 {
		return false
	}
	until := min(s.notServingSinceMs+s.cfg.HoldHandshakeMs, now.MonoMs+int64(req.TimeoutMs)/4)
	if now.MonoMs >= until {
		return false
	}
	held := *req // the driver may reuse req once Connect returns
	held.Passwd = append([]byte(nil), req.Passwd...)
	c.hold = &heldHandshake{req: &held, untilMs: until}
	s.held = append(s.held, c.id)
	return true
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
