package server

import (
	"net/netip"
	"sync"

	"keeper/coordination/clientconn"
	"keeper/coordination/zkcore"
)

// connNotes carries what connection goroutines tell the loop — connections
// opened, bytes written, connections closed — without waiting for it. The loop sends to
// connections and may close them (clientconn calls Closed from whichever
// goroutine closes), so a report that waited for room in the loop's inbox
// could wait for the loop itself: the loop would block on its own inbox.
// Notes are merged under a mutex and the loop is woken through a channel
// of capacity one; their memory is bounded by the number of connections.
type connNotes struct {
	mu        sync.Mutex
	opened    []*clientconn.Conn // mu guards opened, bytes and gone
	bytes     map[zkcore.ConnID]int
	gone      []zkcore.ConnID
	wake      chan struct{}
	spareByte map[zkcore.ConnID]int // the loop's, reused between takes
}

func newConnNotes() connNotes {
	return connNotes{
		bytes:     make(map[zkcore.ConnID]int),
		spareByte: make(map[zkcore.ConnID]int),
		wake:      make(chan struct{}, 1),
	}
}

func (n *connNotes) open(c *clientconn.Conn) {
	n.mu.Lock()
	n.opened = append(n.opened, c)
	n.mu.Unlock()
	n.poke()
}

func (n *connNotes) written(id zkcore.ConnID, bytes int) {
	n.mu.Lock()
	n.bytes[id] += bytes
	n.mu.Unlock()
	n.poke()
}

func (n *connNotes) closed(id zkcore.ConnID) {
	n.mu.Lock()
	n.gone = append(n.gone, id)
	n.mu.Unlock()
	n.poke()
}

func (n *connNotes) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// takeNotes hands the notes to the core, on the loop: opened connections
// first, then written bytes (they may let blocked connections run), then
// closed connections. A connection's notes are taken in the order it made
// them, since its close comes after its open.
func (s *Server) takeNotes() {
	n := &s.notes
	n.mu.Lock()
	opened, bytes, gone := n.opened, n.bytes, n.gone
	n.opened, n.bytes, n.gone = nil, n.spareByte, nil
	n.mu.Unlock()
	now := s.now()
	for _, c := range opened {
		s.conns[c.ID()] = c
		s.core.NewConn(c.ID(), c.Remote(), now)
	}
	for id, b := range bytes {
		if _, ok := s.conns[id]; ok {
			s.core.Written(id, b, now)
		}
	}
	clear(bytes)
	n.spareByte = bytes
	for _, id := range gone {
		delete(s.conns, id)
		s.core.Disconnect(id)
	}
}

// takeNotesFirst takes the pending notes, if any, before the loop runs
// work from its inbox: a connection's handshake or four-letter word was
// posted after the note of its opening, and must find it taken.
func (s *Server) takeNotesFirst() {
	select {
	case <-s.notes.wake:
		s.takeNotes()
	default:
	}
}

// takeSlot admits a connection from ap under maxClientCnxns (per IP) and
// maxCnxns (in all). It returns false, and logs why, if either is full.
func (s *Server) takeSlot(ap netip.AddrPort) bool {
	ip := ap.Addr().Unmap()
	s.ipMu.Lock()
	defer s.ipMu.Unlock()
	if s.cfg.MaxClientCnxns > 0 && s.perIP[ip] >= s.cfg.MaxClientCnxns {
		s.log.Warn("too many connections from client", "ip", ip.String(), "max", s.cfg.MaxClientCnxns)
		s.stm.rejected()
		return false
	}
	if s.cfg.MaxCnxns > 0 && s.totalConns >= s.cfg.MaxCnxns {
		s.log.Warn("too many connections", "max", s.cfg.MaxCnxns)
		s.stm.rejected()
		return false
	}
	s.perIP[ip]++
	s.totalConns++
	return true
}

// releaseSlot gives back what takeSlot took.
func (s *Server) releaseSlot(ap netip.AddrPort) {
	ip := ap.Addr().Unmap()
	s.ipMu.Lock()
	defer s.ipMu.Unlock()
	if s.perIP[ip]--; s.perIP[ip] <= 0 {
		delete(s.perIP, ip)
	}
	s.totalConns--
}

// newLimiter builds the server-wide bound on requests in flight from
// globalOutstandingLimit, the request throttle and the byte bound.
func newLimiter(cfg *Config) *clientconn.Limiter {
	limit := cfg.GlobalOutstandingLimit
	switch {
	case limit == 0:
		limit = DefaultGlobalOutstandingLimit
	case limit < 0:
		limit = 0
	}
	if m := cfg.RequestThrottleMaxRequests; m > 0 && (limit == 0 || m < limit) {
		limit = m
	}
	bytes := cfg.MaxInflightRequestBytes
	if bytes == 0 {
		bytes = DefaultMaxInflightRequestBytes
	}
	return clientconn.NewLimiter(limit, bytes, cfg.RequestThrottleStall)
}

// addLive records an accepted connection until it closes, so that Close
// can close those the loop has not heard of. It returns false once the
// server is closing.
func (s *Server) addLive(c *clientconn.Conn) bool {
	s.ipMu.Lock()
	defer s.ipMu.Unlock()
	if s.live == nil {
		return false
	}
	s.live[c.ID()] = c
	return true
}

func (s *Server) dropLive(id zkcore.ConnID) {
	s.ipMu.Lock()
	delete(s.live, id)
	s.ipMu.Unlock()
}

// liveConns takes the connections still open and stops admitting new ones.
func (s *Server) liveConns() []*clientconn.Conn {
	s.ipMu.Lock()
	defer s.ipMu.Unlock()
	conns := make([]*clientconn.Conn, 0, len(s.live))
	for _, c := range s.live {
		conns = append(conns, c)
	}
	s.live = nil
	return conns
}
