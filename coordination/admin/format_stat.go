package admin

import (
	"bytes"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"keeper/coordination/zkcore"
)

// srvr renders srvr, and stat when withClients is set (docs/zookeeper-protocol.md §8.2):
//
//	Zookeeper version: <version>
//	Clients:                          (stat only)
//	 /<ip:port>[<ops>](queued=N,recved=N,sent=N)
//	                                  (a blank line ends the list)
//	Latency min/avg/max: <min>/<avg as a Java double>/<max>
//	Received: N / Sent: N / Connections: N / Outstanding: N
//	Zxid: 0x<hex>
//	Mode: <state>
//	Node count: N
//
// Connections counts every open connection, the one asking included, as
// ZooKeeper does. self is the asking connection (0 for none).
func (a *Admin) srvr(withClients bool, self zkcore.ConnID) ([]byte, bool) {
	f, ok := a.facts()
	if !ok {
		return nil, false
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "Zookeeper version: %s\n", a.cfg.Version)
	state := a.state()
	if state == "read-only" {
		b.WriteString("READ-ONLY mode; serving only read-only clients\n")
	}
	if withClients {
		b.WriteString("Clients:\n")
		for _, c := range f.conns {
			writeConn(&b, c, self, true)
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	st := f.stats
	fmt.Fprintf(&b, "Latency min/avg/max: %d/%s/%d\n", st.MinLatencyMs, javaDouble(roundLatency(st.AvgLatencyMs)), st.MaxLatencyMs)
	fmt.Fprintf(&b, "Received: %d\nSent: %d\nConnections: %d\n", st.PacketsReceived, st.PacketsSent, len(f.conns))
	fmt.Fprintf(&b, "Outstanding: %d\nZxid: 0x%x\nMode: %s\n", f.outstanding, uint64(f.lastZxid), state)
	fmt.Fprintf(&b, "Node count: %d\n", f.nodeCount)
	return b.Bytes(), true
}

// cons renders one line per connection with a session, then a blank line
// (docs/zookeeper-protocol.md §8.2).
//
// Unlike ZooKeeper, connections without a session (the asking
// four-letter-word connection, others that have not finished their
// handshake or are closing) are left out: their short line is a shape
// go-zookeeper's FLWCons cannot parse, and it reports the whole answer as
// a failure. stat's Clients section still lists them.
func (a *Admin) cons() ([]byte, bool) {
	var conns []zkcore.ConnInfo
	if !a.core.Inspect(func(core *zkcore.Server) { conns = core.Conns() }) {
		return nil, false
	}
	var b bytes.Buffer
	for _, c := range conns {
		if c.SessionID == 0 {
			continue
		}
		writeConn(&b, c, 0, false)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes(), true
}

// writeConn writes one connection as ServerCnxn.dumpConnectionInfo does:
//
//	/ip:port[ops](queued=N,recved=N,sent=N[,sid=0x..,lop=OP,est=<wall ms>,to=N,
//	  lcxid=0x..,lzxid=0x..,lresp=<mono ms>,llat=N,minlat=N,avglat=N,maxlat=N])
//
// The part from sid on appears only when brief is false and the connection
// has a session. lcxid is left out while no request has been answered.
func writeConn(b *bytes.Buffer, c zkcore.ConnInfo, self zkcore.ConnID, brief bool) {
	fmt.Fprintf(b, " /%s[%s](queued=%d,recved=%d,sent=%d", remoteString(c.Remote), interestOps(c, self),
		c.Queued, c.Received, c.Sent)
	if !brief && c.SessionID != 0 {
		fmt.Fprintf(b, ",sid=0x%x,lop=%s,est=%d,to=%d", uint64(c.SessionID), c.LastOp.ShortName(),
			c.EstablishedMs, c.TimeoutMs)
		if c.LastCxid >= 0 {
			fmt.Fprintf(b, ",lcxid=0x%x", uint32(c.LastCxid))
		}
		fmt.Fprintf(b, ",lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d",
			uint64(c.LastZxid), c.LastRespMs, c.LastLatencyMs, c.MinLatencyMs, connAvgLatency(c), c.MaxLatencyMs)
	}
	b.WriteByte(')')
}

// interestOps stands in for the NIO interest set ZooKeeper prints: 1
// (reading) for a client connection, 0 for the four-letter-word connection
// that is being answered.
func interestOps(c zkcore.ConnInfo, self zkcore.ConnID) string {
	if c.ID == self {
		return "0"
	}
	return "1"
}

// connAvgLatency is a connection's average latency as ZooKeeper shows it:
// a whole number of ms, rounded down.
func connAvgLatency(c zkcore.ConnInfo) int64 { return int64(c.AvgLatencyMs) }

// remoteString formats a client address as ip:port, IPv4-mapped addresses
// as plain IPv4.
func remoteString(ap netip.AddrPort) string {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
}

// roundLatency rounds an average latency to 4 decimals, half up, as
// ZooKeeper's AvgMinMaxCounter does.
func roundLatency(v float64) float64 { return math.Floor(v*1e4+0.5) / 1e4 }

// javaDouble formats v as Java's Double.toString does: the shortest
// decimal that reads back as v, always with a fraction ("3.0"), and in
// computerized scientific notation ("1.0E-4") below 1e-3 and from 1e7 on.
func javaDouble(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	if abs := math.Abs(v); v == 0 || (abs >= 1e-3 && abs < 1e7) {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'E', -1, 64) // e.g. "1E-04", "1.5E+07"
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
