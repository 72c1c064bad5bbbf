package chaos

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// chunkBytes is the most one read takes from a socket.
	chunkBytes = 32 << 10
	// queueChunks bounds the chunks a direction holds (blackholed or
	// delayed): 2 MiB at most, after which the reader stops and TCP pushes
	// back on the sender, as a real cut link's send buffer fills.
	queueChunks = 64
	// proxyDialTimeout bounds the proxy's dial of its target; a refused or
	// silent target is a dead node, so the dialler's connection is reset.
	proxyDialTimeout = 2 * time.Second
)

// ProxyStats are a proxy's counters.
type ProxyStats struct {
	Conns  int64 // connections accepted
	Bytes  int64 // bytes delivered, both directions
	Resets int64 // connections reset by Reset
	Held   int64 // chunks that waited for a blackhole to lift
}

// Proxy forwards TCP connections from one node to another through the
// rules of its Network (see Rule). It is safe for concurrent use.
type Proxy struct {
	net      *Network
	from, to string
	target   string
	ln       net.Listener
	wg       sync.WaitGroup

	mu     sync.Mutex
	conns  map[*link]struct{}
	closed bool

	conns64, bytes, resets, held atomic.Int64
}

func newProxy(n *Network, from, to, target string, ln net.Listener) *Proxy {
	return &Proxy{net: n, from: from, to: to, target: target, ln: ln, conns: map[*link]struct{}{}}
}

// Addr is the address to dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Stats returns the proxy's counters.
func (p *Proxy) Stats() ProxyStats {
	return ProxyStats{Conns: p.conns64.Load(), Bytes: p.bytes.Load(), Resets: p.resets.Load(), Held: p.held.Load()}
}

func (p *Proxy) start() {
	p.wg.Add(1)
	go p.accept()
}

// Close stops accepting and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	links := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		links = append(links, l)
	}
	p.mu.Unlock()
	p.ln.Close()
	for _, l := range links {
		l.close(false)
	}
	p.wg.Wait()
}

// ResetAll resets every live connection and returns how many.
func (p *Proxy) ResetAll() int {
	p.mu.Lock()
	links := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close(true)
	}
	p.resets.Add(int64(len(links)))
	return len(links)
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		l := &link{p: p, down: c, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.conns[l] = struct{}{}
		p.mu.Unlock()
		p.conns64.Add(1)
		p.wg.Add(1)
		go l.serve()
	}
}

// chunk is bytes read from one side, or the end of its stream (err set).
type chunk struct {
	b   []byte
	at  time.Time
	err error
}

// link is one proxied connection: down is the dialler's side, up the
// target's.
type link struct {
	p    *Proxy
	down net.Conn

	mu       sync.Mutex
	up       net.Conn
	finished int // directions that delivered their end of stream
	done     chan struct{}
	isDone   bool
}

// serve waits until the link may carry a connection, dials the target and
// pumps both directions.
func (l *link) serve() {
	defer l.p.wg.Done()
	upCh := make(chan chunk, queueChunks)
	gone := make(chan struct{})
	l.p.wg.Add(1)
	go l.read(l.down, upCh, gone)
	if !l.waitPassable(gone) {
		l.close(false)
		return
	}
	up, err := net.DialTimeout("tcp", l.p.target, proxyDialTimeout)
	if err != nil {
		l.close(true) // the node is down: the dialler sees a reset
		return
	}
	l.mu.Lock()
	if l.isDone {
		l.mu.Unlock()
		up.Close()
		return
	}
	l.up = up
	l.mu.Unlock()
	downCh := make(chan chunk, queueChunks)
	l.p.wg.Add(3)
	go l.read(up, downCh, nil)
	go l.pump(downCh, l.down, l.p.to, l.p.from)
	go l.pump(upCh, up, l.p.from, l.p.to)
}

// waitPassable waits until neither direction is blackholed: a SYN and its
// answer must both get through. It gives up when the dialler closes or the
// link is closed.
func (l *link) waitPassable(gone <-chan struct{}) bool {
	for {
		r1, changed := l.p.net.watch(l.p.from, l.p.to)
		r2, _ := l.p.net.watch(l.p.to, l.p.from)
		if !r1.Blackhole && !r2.Blackhole {
			return true
		}
		select {
		case <-changed:
		case <-gone:
			return false
		case <-l.done:
			return false
		}
	}
}

// read reads src into ch until its stream ends; the last chunk carries
// the error. gone, if not nil, is closed then.
func (l *link) read(src net.Conn, ch chan<- chunk, gone chan struct{}) {
	defer l.p.wg.Done()
	if gone != nil {
		defer close(gone)
	}
	buf := make([]byte, chunkBytes)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			c := chunk{b: append([]byte(nil), buf[:n]...), at: time.Now()}
			select {
			case ch <- c:
			case <-l.done:
				return
			}
		}
		if err != nil {
			select {
			case ch <- chunk{err: err, at: time.Now()}:
			case <-l.done:
			}
			return
		}
	}
}

// pump delivers the chunks of one direction to dst under the rule for
// from->to, in order.
func (l *link) pump(ch <-chan chunk, dst net.Conn, from, to string) {
	defer l.p.wg.Done()
	var last time.Time
	for {
		var c chunk
		select {
		case c = <-ch:
		case <-l.done:
			return
		}
		r, _ := l.p.net.watch(from, to)
		at := c.at.Add(l.p.net.delay(r))
		if at.Before(last) {
			at = last
		}
		last = at
		if !l.sleepUntil(at) || !l.holdWhileCut(from, to) {
			return
		}
		if c.err != nil {
			l.endStream(dst, c.err)
			return
		}
		if _, err := dst.Write(c.b); err != nil {
			l.close(true)
			return
		}
		l.p.bytes.Add(int64(len(c.b)))
	}
}

// sleepUntil waits until t; false if the link closed first.
func (l *link) sleepUntil(t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-l.done:
		return false
	}
}

// holdWhileCut waits while from->to is blackholed; false if the link
// closed first.
func (l *link) holdWhileCut(from, to string) bool {
	counted := false
	for {
		r, changed := l.p.net.watch(from, to)
		if !r.Blackhole {
			return true
		}
		if !counted {
			l.p.held.Add(1)
			counted = true
		}
		select {
		case <-changed:
		case <-l.done:
			return false
		}
	}
}

// endStream passes on the end of one direction: a clean end as a
// half-close, anything else as a reset. When both directions have ended
// the link is closed.
func (l *link) endStream(dst net.Conn, err error) {
	if !errors.Is(err, io.EOF) {
		l.close(true)
		return
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	l.mu.Lock()
	l.finished++
	both := l.finished == 2
	l.mu.Unlock()
	if both {
		l.close(false)
	}
}

// close ends the link; with reset the sockets are closed with an RST.
func (l *link) close(reset bool) {
	l.mu.Lock()
	if l.isDone {
		l.mu.Unlock()
		return
	}
	l.isDone = true
	close(l.done)
	up := l.up
	l.mu.Unlock()
	for _, c := range []net.Conn{l.down, up} {
		if c == nil {
			continue
		}
		if tc, ok := c.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
	l.p.mu.Lock()
	delete(l.p.conns, l)
	l.p.mu.Unlock()
}
