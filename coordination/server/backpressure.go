package server

import (
	"net/netip"
	"sync"
	"sync/atomic"

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
//
// Openings and closes wake the loop. Written bytes wake it only while the
// core has a connection waiting for its output to drain (wanted, which the
// loop sets after each event); otherwise they wait for the loop's next event,
// which takes the notes before it runs anything. A fan-out to a thousand
// watchers would otherwise wake the loop once for each of the thousand
// writes it caused, for nothing.
//
// Written bytes are summed per connection in a map, and the connections
// that have some are listed in writers, so that the loop visits and deletes
// only those: the map keeps the room it grew to, and ranging over it or
// clearing it would cost that room at every take, though most takes carry
// one or two writers.
type connNotes struct {
	mu      sync.Mutex
	opened  []*clientconn.Conn // mu guards opened, bytes, writers and gone
	bytes   map[zkcore.ConnID]int
	writers []zkcore.ConnID // the keys of bytes, in the order first written
	gone    []zkcore.ConnID
	wake    chan struct{}
	wanted  atomic.Bool // written bytes wake the loop

	// The loop's, swapped with bytes and writers at each take and emptied
	// before the next.
	spareBytes   map[zkcore.ConnID]int
	spareWriters []zkcore.ConnID
}

func newConnNotes() connNotes {
	return connNotes{
		bytes:      make(map[zkcore.ConnID]int),
		spareBytes: make(map[zkcore.ConnID]int),
		wake:       make(chan struct{}, 1),
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
	if _, ok := n.bytes[id]; !ok {
		n.writers = append(n.writers, id)
	}
	n.bytes[id] += bytes
	n.mu.Unlock()
	// Read after the unlock: if the loop set wanted after this read, its
	// take (after the poke that follows setting it) sees these bytes.
	if n.wanted.Load() {
		n.poke()
	}
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
	opened, bytes, writers, gone := n.opened, n.bytes, n.writers, n.gone
	n.opened, n.bytes, n.writers, n.gone = nil, n.spareBytes, n.spareWriters, nil
	n.mu.Unlock()
	now := s.now()
	for _, c := range opened {
		s.conns[c.ID()] = c
		s.core.NewConn(c.ID(), c.Remote(), now)
	}
	for _, id := range writers {
		b := bytes[id]
		delete(bytes, id)
		if _, ok := s.conns[id]; ok {
			s.core.Written(id, b, now)
		}
	}
	n.spareBytes, n.spareWriters = bytes, writers[:0]
	for _, id := range gone {
		delete(s.conns, id)
		s.core.Disconnect(id)
	}
}

// takeNotesFirst takes the pending notes before the loop runs work from its
// inbox: a connection's handshake or four-letter word was posted after the
// note of its opening, and must find it taken, and the core must count the
// bytes written so far before it decides whether a connection may run.
func (s *Server) takeNotesFirst() {
	select {
	case <-s.notes.wake:
	default:
	}
	s.takeNotes()
}

// wantWritten tells connection goroutines, after each event of the loop,
// whether written bytes must wake it: while some connection waits for its
// output to drain. When it starts to, the loop wakes itself, to take the
// bytes written before the writers could see it.
func (s *Server) wantWritten() {
	want := s.core.OutputWaiting()
	if want == s.notes.wanted.Load() {
		return
	}
	s.notes.wanted.Store(want)
	if want {
		s.notes.poke()
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
