package zkcore

// Output budget. A client that pipelines large reads and never reads the
// replies would otherwise make the server hold every reply it asked for.
// The core counts the bytes it emitted for each connection until the driver
// reports them written to the socket (Written), and stops running a
// connection's requests while they are over budget: its queue waits, its
// reader runs out of credits (Config.MaxOutstanding) and stops reading, and
// nothing more is produced for it until the client reads. The budget is
// checked before each request runs, so a connection holds at most
// MaxConnOutputBytes plus one reply plus the watch events that fire for it.
//
// All connections together are held to MaxOutputBytes the same way, except
// that a connection holding nothing may always run a request: one client
// that does not read slows the others down to one reply in flight each,
// never to none.

// DefaultMaxConnOutputBytes is the output budget of one connection: enough
// for a client that reads its replies to keep many replies of ordinary
// size in flight (a megabyte node's reply is one), while a client that
// stops reading holds a few megabytes, not gigabytes.
const DefaultMaxConnOutputBytes = 4 << 20

// DefaultMaxOutputBytes is the output budget of all connections together.
const DefaultMaxOutputBytes = 256 << 20

// outputBlocked reports whether c may not run another request while its
// replies so far (heldBytes, plus produced bytes not yet emitted) wait to be
// written.
func (s *Server) outputBlocked(c *conn, produced int) bool {
	held := c.heldBytes + produced
	if held == 0 {
		return false // a connection holding nothing always makes progress
	}
	if s.cfg.MaxConnOutputBytes > 0 && held >= s.cfg.MaxConnOutputBytes {
		return true
	}
	return s.cfg.MaxOutputBytes > 0 && s.heldBytes+produced >= s.cfg.MaxOutputBytes
}

// block notes that c waits for output to drain.
func (s *Server) block(c *conn) {
	if !c.blocked {
		c.blocked = true
		s.blocked = append(s.blocked, c.id)
		s.stats.throttled++
	}
}

// Written tells the core that n bytes of connection id's output, handed out
// in Ready.Sends, were written to its socket. Connections that waited for
// output to drain run their queued requests again. Bytes of a connection
// the core no longer knows (closed) are ignored: dropping it released them.
func (s *Server) Written(id ConnID, n int, now Now) {
	c, ok := s.conns[id]
	if !ok || n <= 0 {
		return
	}
	n = min(n, c.heldBytes)
	c.heldBytes -= n
	s.heldBytes -= n
	s.resume(now)
}

// OutputWaiting reports whether some connection waits for its output to be
// written before its requests run again: only then does the core need to
// hear of written bytes (Written) at once. Otherwise the driver may report
// them with its next event, as long as it does so before the core runs
// more requests.
func (s *Server) OutputWaiting() bool { return len(s.blocked) > 0 }

// resume pumps the connections that were blocked and no longer are, in
// the order they blocked.
func (s *Server) resume(now Now) {
	if len(s.blocked) == 0 {
		return
	}
	waiting := s.blocked
	s.blocked = nil
	for i, id := range waiting {
		c, ok := s.conns[id]
		if !ok || !c.blocked {
			continue
		}
		if s.outputBlocked(c, 0) {
			s.blocked = append(s.blocked, id)
			continue
		}
		s.pump(c, now) // clears c.blocked, or blocks it again at the tail
		if s.cfg.MaxOutputBytes > 0 && s.heldBytes >= s.cfg.MaxOutputBytes {
			// The budget is spent again: the rest keep waiting, in order.
			for _, rest := range waiting[i+1:] {
				if rc, ok := s.conns[rest]; ok && rc.blocked {
					s.blocked = append(s.blocked, rest)
				}
			}
			return
		}
	}
}

// HeldOutputBytes returns the output the core has emitted and the driver
// has not reported written, over all connections.
func (s *Server) HeldOutputBytes() int { return s.heldBytes }

// releaseOutput forgets c's held output when c goes away.
func (s *Server) releaseOutput(c *conn) {
	s.heldBytes -= c.heldBytes
	c.heldBytes = 0
	c.blocked = false
}
