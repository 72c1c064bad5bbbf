package chaos

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// In a Reconfig cluster the members share one configuration text, so a
// server's line must name one address for every viewer. That address is
// a front the harness listens on; the server itself listens elsewhere
// (KEEPER_PEER_LISTEN, a chaos build's override). The front tells which
// member dialled it from the socket's owner (as the bookies' fronts do)
// and passes the connection through the Network's proxy from that member
// to the server, so partitions and delays apply between members exactly
// as in a cluster whose members each have their own view.

// peerFront is one listening front: a server's quorum or election port.
type peerFront struct {
	c        *Cluster
	s        *Server
	ln       net.Listener
	target   string // the server's real address behind the front
	election bool   // an election port: the dialler names itself first

	mu      sync.Mutex
	proxies map[string]*Proxy // by dialling node
	links   map[string]int    // connections passed, by dialling node
}

// startFronts opens s's quorum and election fronts on the ports its
// configuration line names.
func (c *Cluster) startFronts(s *Server) error {
	for _, p := range []struct {
		front, real int
		election    bool
	}{{s.FrontQuorum, s.QuorumPort, false}, {s.FrontElection, s.ElecPort, true}} {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.front)))
		if err != nil {
			return err
		}
		f := &peerFront{c: c, s: s, ln: ln, target: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.real)), election: p.election,
			proxies: map[string]*Proxy{}, links: map[string]int{}}
		c.fronts = append(c.fronts, f)
		c.frontWG.Go(f.serve)
	}
	return nil
}

func (f *peerFront) serve() {
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.c.frontWG.Go(func() { f.pass(conn) })
	}
}

// pass joins conn to a connection through the proxy from its dialler's
// node to the front's server.
func (f *peerFront) pass(conn net.Conn) {
	var from io.Reader = conn
	owner := harnessNode
	if f.election {
		// A member with the smaller id sends its handshake and closes at
		// once (the other dials back), often before its socket could be
		// looked up: the handshake's sid names it.
		var head []byte
		owner, head = f.c.electionDialler(conn)
		from = io.MultiReader(bytes.NewReader(head), conn)
	} else {
		owner = f.c.ownerOf(conn)
		for try := 0; owner == harnessNode && try < 3; try++ {
			time.Sleep(5 * time.Millisecond) // the dialler's socket may not be listed yet
			owner = f.c.ownerOf(conn)
		}
	}
	if owner == harnessNode {
		// A connection whose dialler went away, or one no member made:
		// refused, so that nothing crosses a partition unseen.
		f.mu.Lock()
		f.links[owner]++
		f.mu.Unlock()
		resetConn(conn)
		return
	}
	p, err := f.proxy(owner)
	if err != nil {
		conn.Close()
		return
	}
	up, err := net.DialTimeout("tcp", p.Addr(), proxyDialTimeout)
	if err != nil {
		resetConn(conn)
		return
	}
	splice(conn, up, from)
}

// electionDialler reads the first 16 bytes of an election connection —
// the protocol version and the dialler's sid, or a pre-3.5 peer's sid
// first — and returns the member they name (harnessNode when none) and
// the bytes read, which are passed on.
func (c *Cluster) electionDialler(conn net.Conn) (string, []byte) {
	head := make([]byte, 16)
	_ = conn.SetReadDeadline(time.Now().Add(proxyDialTimeout))
	n, err := io.ReadFull(conn, head)
	_ = conn.SetReadDeadline(time.Time{})
	head = head[:n]
	if err != nil && n < 8 {
		return harnessNode, head
	}
	sid := int64(binary.BigEndian.Uint64(head[:8]))
	if sid < 0 && n == 16 {
		sid = int64(binary.BigEndian.Uint64(head[8:16]))
	}
	for _, s := range c.Servers {
		if int64(s.ID) == sid {
			return s.Name, head
		}
	}
	return harnessNode, head
}

func (f *peerFront) proxy(owner string) (*Proxy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.links[owner]++
	if p, ok := f.proxies[owner]; ok {
		return p, nil
	}
	p, err := f.c.Net.Proxy(owner, f.s.Name, f.target)
	if err != nil {
		return nil, err
	}
	f.proxies[owner] = p
	return p, nil
}

// ownerOf returns the member whose process dialled conn, or the
// harness's node when no member did.
func (c *Cluster) ownerOf(conn net.Conn) string {
	owners := map[int]string{}
	for _, s := range c.Servers {
		if p := s.Proc(); p != nil && p.Running() {
			owners[p.Pid()] = s.Name
		}
	}
	if name, ok := socketOwner(conn, owners); ok {
		return name
	}
	return harnessNode
}

// closeFronts stops every front; the proxies behind them close with the
// Network.
func (c *Cluster) closeFronts() {
	for _, f := range c.fronts {
		f.ln.Close()
	}
	c.frontWG.Wait()
}

// FrontLinks returns how many connections the fronts passed on, by the
// member that dialled them, and under "h" how many they refused because
// no member's process owned the socket (a dialler already gone).
func (c *Cluster) FrontLinks() map[string]int {
	out := map[string]int{}
	for _, f := range c.fronts {
		f.mu.Lock()
		for k, v := range f.links {
			out[k] += v
		}
		f.mu.Unlock()
	}
	return out
}
