package zkcore

import (
	"math"
	"net/netip"
	"slices"

	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// latency accumulates request latencies in ms.
type latency struct {
	count, sum int64
	min, max   int64
}

func (l *latency) add(ms int64) {
	if l.count == 0 || ms < l.min {
		l.min = ms
	}
	if ms > l.max {
		l.max = ms
	}
	l.count++
	l.sum += ms
}

func (l *latency) avg() float64 {
	if l.count == 0 {
		return 0
	}
	return float64(l.sum) / float64(l.count)
}

// connStats are the per-connection figures of the cons 4lw.
type connStats struct {
	received, sent int64
	lastOp         zkproto.Op
	lastCxid       int32
	lastZxid       zxid.ID
	lastRespMs     int64
	lastLatencyMs  int64
	lat            latency
}

// Stats are the server-wide counters of srvr, stat and mntr.
type Stats struct {
	PacketsReceived int64
	PacketsSent     int64
	MinLatencyMs    int64
	AvgLatencyMs    float64
	MaxLatencyMs    int64
	Txns            int64
	ExpiredSessions int64
	AuthFailed      int64
	// OutputThrottled counts the times a connection's requests stopped
	// running because its output, or all output, was over budget.
	OutputThrottled int64
	// HeldOutputBytes is the output emitted and not yet written.
	HeldOutputBytes int64
	// LastResponseBytes, MinResponseBytes and MaxResponseBytes are the
	// sizes of the replies and notifications sent since the last stat
	// reset, without length prefixes; -1 before the first.
	LastResponseBytes, MinResponseBytes, MaxResponseBytes int64
	// LocalSessions counts the sessions a read-only server created.
	LocalSessions int64
}

type serverStats struct {
	packetsReceived, packetsSent int64
	txns, expiredSessions        int64
	authFailed                   int64
	throttled                    int64
	lat                          latency
}

func (st *serverStats) reset() {
	*st = serverStats{txns: st.txns, expiredSessions: st.expiredSessions, authFailed: st.authFailed}
	st.lat.min = math.MaxInt64
}

// recordLatency notes a reply leaving the head of c's queue, and returns
// its latency; ok is false for pings and handshakes, which count for none.
func (st *serverStats) recordLatency(c *conn, e *entry) (ms int64, ok bool) {
	if e.op == zkproto.OpPing || e.kind == kindConnect {
		return 0, false
	}
	ms = c.stats.lastRespMs - e.received
	if ms < 0 {
		ms = 0
	}
	st.lat.add(ms)
	c.stats.lat.add(ms)
	c.stats.lastLatencyMs = ms
	c.stats.lastCxid = e.xid
	if e.zxid > 0 {
		c.stats.lastZxid = e.zxid
	}
	return ms, true
}

// Stats returns the server-wide counters.
func (s *Server) Stats() Stats {
	st := Stats{
		PacketsReceived: s.stats.packetsReceived,
		PacketsSent:     s.stats.packetsSent,
		AvgLatencyMs:    s.stats.lat.avg(),
		MaxLatencyMs:    s.stats.lat.max,
		Txns:            s.stats.txns,
		ExpiredSessions: s.stats.expiredSessions,
		AuthFailed:      s.stats.authFailed,
		OutputThrottled: s.stats.throttled,
		HeldOutputBytes: int64(s.heldBytes),
		LocalSessions:   int64(len(s.localSessions)),
	}
	st.LastResponseBytes, st.MinResponseBytes, st.MaxResponseBytes = s.metrics.responseSize.Get()
	if s.stats.lat.count > 0 {
		st.MinLatencyMs = s.stats.lat.min
	}
	return st
}

// ResetStats clears the latency and packet counters and the response
// sizes (srst).
func (s *Server) ResetStats() {
	s.stats.reset()
	s.metrics.responseSize.Reset()
}

// ConnInfo describes one connection for cons, stat and dump.
type ConnInfo struct {
	ID            ConnID
	Remote        netip.AddrPort
	EstablishedMs int64 // wall time of accept
	Queued        int
	Received      int64
	Sent          int64
	SessionID     int64 // 0 before the handshake
	TimeoutMs     int32
	LastOp        zkproto.Op
	LastCxid      int32
	LastZxid      zxid.ID
	LastRespMs    int64
	LastLatencyMs int64
	MinLatencyMs  int64
	AvgLatencyMs  float64
	MaxLatencyMs  int64
}

// Conns describes every connection, in ConnID order.
func (s *Server) Conns() []ConnInfo {
	out := make([]ConnInfo, 0, len(s.conns))
	for _, c := range s.conns {
		out = append(out, ConnInfo{
			ID: c.id, Remote: c.remote, EstablishedMs: c.establishedMs, Queued: len(c.queue),
			Received: c.stats.received, Sent: c.stats.sent,
			SessionID: c.session, TimeoutMs: c.timeoutMs,
			LastOp: c.stats.lastOp, LastCxid: c.stats.lastCxid, LastZxid: c.stats.lastZxid,
			LastRespMs: c.stats.lastRespMs, LastLatencyMs: c.stats.lastLatencyMs,
			MinLatencyMs: c.stats.lat.min, AvgLatencyMs: c.stats.lat.avg(), MaxLatencyMs: c.stats.lat.max,
		})
	}
	slices.SortFunc(out, func(a, b ConnInfo) int {
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

// ResetConnStats clears every connection's counters (crst).
func (s *Server) ResetConnStats() {
	for _, c := range s.conns {
		c.stats = connStats{lastOp: c.stats.lastOp}
	}
}

// OutstandingRequests is the number of requests queued on all connections.
func (s *Server) OutstandingRequests() int {
	n := 0
	for _, c := range s.conns {
		n += len(c.queue)
	}
	return n
}
