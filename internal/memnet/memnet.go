// Package memnet is an in-memory TCP-like network for tests: listeners
// whose Accept returns one end of a net.Pipe and a Dial that returns the
// other. It uses channels and sync only, never a socket, so goroutines
// blocked on it are durably blocked in a testing/synctest bubble: a server
// whose client listener comes from a Network (server.Config.Listen) runs
// whole in a bubble, on the bubble's fake clock.
//
// Addresses look like TCP ones (127.0.0.1:port, as *net.TCPAddr), so code
// that parses a peer's address (per-IP connection limits) works unchanged.
// Close behaves as TCP's does where the code under test can tell: Accept
// after Close returns net.ErrClosed, a dial to an address nothing listens
// on is refused (ECONNREFUSED), reads from a connection whose peer closed
// return io.EOF and writes to it io.ErrClosedPipe. Deadlines are
// net.Pipe's (os.ErrDeadlineExceeded). Unlike TCP a connection has no
// buffer: a write returns once the peer has read all of it.
package memnet

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// firstPort is where ports for address ":0" and for dialers start: above
// any port a test names, so that the two never meet.
const firstPort = 40000

// backlogConns bounds the connections dialled and not yet accepted on one
// listener, as a listen backlog does; a dial beyond it waits.
const backlogConns = 128

// Network is a set of listeners and the connections dialled to them. The
// zero value is not usable; call New.
type Network struct {
	mu        sync.Mutex
	listeners map[string]*Listener // by address, host:port
	nextPort  int
}

// New returns an empty network.
func New() *Network {
	return &Network{listeners: map[string]*Listener{}, nextPort: firstPort}
}

// Listen listens on address (host:port; port 0 picks a free one). network
// must be "tcp", "tcp4" or "tcp6". Its signature is net.Listen's, so that
// it can be a server's Config.Listen.
func (n *Network) Listen(network, address string) (net.Listener, error) {
	l, err := n.listen(network, address)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (n *Network) listen(network, address string) (*Listener, error) {
	fail := func(err error) error {
		return &net.OpError{Op: "listen", Net: network, Err: err}
	}
	if err := checkNetwork(network); err != nil {
		return nil, fail(err)
	}
	ap, err := parseAddr(address)
	if err != nil {
		return nil, fail(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if ap.Port() == 0 {
		ap = netip.AddrPortFrom(ap.Addr(), n.portLocked())
	}
	key := ap.String()
	if _, ok := n.listeners[key]; ok {
		return nil, fail(os.NewSyscallError("bind", syscall.EADDRINUSE))
	}
	l := &Listener{
		net:     n,
		addr:    net.TCPAddrFromAddrPort(ap),
		backlog: make(chan *Conn, backlogConns),
		done:    make(chan struct{}),
		conns:   map[*Conn]bool{},
	}
	n.listeners[key] = l
	return l, nil
}

// portLocked hands out the next free port.
func (n *Network) portLocked() uint16 {
	for {
		p := n.nextPort
		n.nextPort++
		if n.nextPort > 65535 {
			n.nextPort = firstPort
		}
		if !n.inUseLocked(uint16(p)) {
			return uint16(p)
		}
	}
}

func (n *Network) inUseLocked(port uint16) bool {
	for _, l := range n.listeners {
		if l.addr.Port == int(port) {
			return true
		}
	}
	return false
}

// Dial connects to the listener on address. Its signature is
// net.Dialer.DialContext's. It is refused with ECONNREFUSED when nothing
// listens there, and waits (for ctx) while the listener's backlog is full.
func (n *Network) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	return n.dial(ctx, network, address, nil)
}

// dial is Dial from host from (nil: no host).
func (n *Network) dial(ctx context.Context, network, address string, from *Host) (net.Conn, error) {
	fail := func(err error) error {
		return &net.OpError{Op: "dial", Net: network, Addr: tcpAddrOrNil(address), Err: err}
	}
	if err := checkNetwork(network); err != nil {
		return nil, fail(err)
	}
	ap, err := parseAddr(address)
	if err != nil {
		return nil, fail(err)
	}
	n.mu.Lock()
	l := n.listeners[ap.String()]
	var local *net.TCPAddr
	if l != nil {
		local = net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), n.portLocked()))
	}
	n.mu.Unlock()
	refused := fail(os.NewSyscallError("connect", syscall.ECONNREFUSED))
	if l == nil {
		return nil, refused
	}
	a, b := net.Pipe()
	client := &Conn{Conn: a, local: local, remote: l.addr, host: from}
	server := &Conn{Conn: b, local: l.addr, remote: local, listener: l}
	if !l.track(server) {
		return nil, refused
	}
	if from != nil && !from.track(client) {
		server.Close()
		return nil, fail(net.ErrClosed)
	}
	select {
	case l.backlog <- server:
		return client, nil
	case <-l.done:
		server.Close()
		return nil, refused
	case <-ctx.Done():
		server.Close()
		return nil, fail(ctx.Err())
	}
}

// Crash closes the listener on address and every connection it accepted
// or has queued (the server ends), as a process that dies takes its
// sockets with it: the dialers read io.EOF. It reports whether anything listened there.
func (n *Network) Crash(address string) bool {
	ap, err := parseAddr(address)
	if err != nil {
		return false
	}
	n.mu.Lock()
	l := n.listeners[ap.String()]
	n.mu.Unlock()
	if l == nil {
		return false
	}
	l.Close()
	for _, c := range l.live() {
		c.Close()
	}
	return true
}

func checkNetwork(network string) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
		return nil
	}
	return net.UnknownNetworkError(network)
}

// parseAddr parses host:port, where host is an IP address ("" and
// "localhost" mean 127.0.0.1).
func parseAddr(address string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("memnet: host %q is not an IP address", host)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("memnet: bad port %q", port)
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), nil
}

func tcpAddrOrNil(address string) net.Addr {
	ap, err := parseAddr(address)
	if err != nil {
		return nil
	}
	return net.TCPAddrFromAddrPort(ap)
}

// Listener is a listening address of a Network.
type Listener struct {
	net     *Network
	addr    *net.TCPAddr
	backlog chan *Conn    // dialled, not yet accepted
	done    chan struct{} // closed by Close

	mu     sync.Mutex
	closed bool
	conns  map[*Conn]bool // the server ends not yet closed
}

// Accept waits for the next connection; after Close it returns an error
// wrapping net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	default:
	}
	select {
	case c := <-l.backlog:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Close stops listening: the address is free again, connections dialled
// and not accepted are closed, and those accepted stay open.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return &net.OpError{Op: "close", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
	l.closed = true
	close(l.done)
	l.mu.Unlock()
	l.net.mu.Lock()
	if l.net.listeners[l.addr.AddrPort().String()] == l {
		delete(l.net.listeners, l.addr.AddrPort().String())
	}
	l.net.mu.Unlock()
	for {
		select {
		case c := <-l.backlog:
			c.Close()
		default:
			return nil
		}
	}
}

// Addr is the address listened on, a *net.TCPAddr.
func (l *Listener) Addr() net.Addr { return l.addr }

// track records c as a connection of l, unless l is closed.
func (l *Listener) track(c *Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[c] = true
	return true
}

func (l *Listener) forget(c *Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

func (l *Listener) live() []*Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*Conn, 0, len(l.conns))
	for c := range l.conns {
		out = append(out, c)
	}
	return out
}

// Conn is one end of a connection: a net.Pipe end with TCP addresses.
type Conn struct {
	net.Conn
	local, remote *net.TCPAddr
	listener      *Listener // set on the server end
	host          *Host     // the host that dialled it, on the client end
	closeOnce     sync.Once
	closeErr      error
}

// LocalAddr is this end's address, a *net.TCPAddr.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr is the peer's address, a *net.TCPAddr.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// Close closes this end: the peer's reads return io.EOF and its writes
// io.ErrClosedPipe. Closing again returns an error wrapping net.ErrClosed.
func (c *Conn) Close() error {
	first := false
	c.closeOnce.Do(func() {
		first = true
		c.closeErr = c.Conn.Close()
		if c.listener != nil {
			c.listener.forget(c)
		}
		if c.host != nil {
			c.host.forget(c)
		}
	})
	if !first {
		return &net.OpError{Op: "close", Net: "tcp", Source: c.local, Addr: c.remote, Err: net.ErrClosed}
	}
	return c.closeErr
}

// Host is one process on a Network: what it listens on and dials is
// recorded, so that Crash can take all of its sockets down at once, as
// the death of a process does. A restarted process is a new Host.
type Host struct {
	net *Network

	mu        sync.Mutex
	crashed   bool
	listeners []*Listener
	dialed    map[*Conn]bool // client ends not yet closed
}

// Host returns a new host on n.
func (n *Network) Host() *Host { return &Host{net: n, dialed: map[*Conn]bool{}} }

// Listen is Network.Listen, recorded for Crash; after Crash it fails.
func (h *Host) Listen(network, address string) (net.Listener, error) {
	l, err := h.net.listen(network, address)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.crashed {
		l.Close()
		return nil, &net.OpError{Op: "listen", Net: network, Err: net.ErrClosed}
	}
	h.listeners = append(h.listeners, l)
	return l, nil
}

// Dial is Network.Dial, recorded for Crash; after Crash it fails.
func (h *Host) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	return h.net.dial(ctx, network, address, h)
}

// Crash closes every listener of the host, every connection they
// accepted and every connection it dialled: its peers read io.EOF, and
// nothing the host still writes reaches them.
func (h *Host) Crash() {
	h.mu.Lock()
	h.crashed = true
	ls := h.listeners
	dialed := make([]*Conn, 0, len(h.dialed))
	for c := range h.dialed {
		dialed = append(dialed, c)
	}
	h.mu.Unlock()
	for _, l := range ls {
		l.Close()
		for _, c := range l.live() {
			c.Close()
		}
	}
	for _, c := range dialed {
		c.Close()
	}
}

func (h *Host) track(c *Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.crashed {
		return false
	}
	h.dialed[c] = true
	return true
}

func (h *Host) forget(c *Conn) {
	h.mu.Lock()
	delete(h.dialed, c)
	h.mu.Unlock()
}
