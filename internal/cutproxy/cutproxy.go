// Package cutproxy is a TCP proxy for tests that cut a client off from a
// server and let it back: while cut, the proxy drops the connections it
// forwards and holds new ones unanswered, so that a client's reconnect
// attempt waits (rather than failing and backing off) until Restore, and a
// cut that lasts lets the client's session expire.
package cutproxy

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"keeper/internal/testhost"
)

// Proxy forwards connections from a loopback listener to a target. Safe
// for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string
	dial   time.Duration

	mu      sync.Mutex
	cut     bool
	held    []net.Conn    // accepted while cut; mu guards
	active  [][2]net.Conn // forwarded pairs; mu guards
	accepts int           // connections accepted so far; mu guards
	wg      sync.WaitGroup
}

// New listens on a loopback port and forwards to target until the test
// ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, dial: testhost.Scale(10 * time.Second)}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.close)
	return p
}

// Addr is where clients connect.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepts returns how many connections the proxy has accepted.
func (p *Proxy) Accepts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepts
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepts++
		if p.cut {
			p.held = append(p.held, c)
			p.mu.Unlock()
			continue
		}
		p.mu.Unlock()
		p.forward(c)
	}
}

// forward connects c to the target and copies both ways until either side
// ends.
func (p *Proxy) forward(c net.Conn) {
	s, err := net.DialTimeout("tcp", p.target, p.dial)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.active = append(p.active, [2]net.Conn{c, s})
	p.mu.Unlock()
	p.wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer p.wg.Done()
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
	}
	go pipe(s, c)
	go pipe(c, s)
}

// Cut closes every forwarded connection and holds new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	active := p.active
	p.active = nil
	p.mu.Unlock()
	for _, pair := range active {
		pair[0].Close()
		pair[1].Close()
	}
}

// Restore forwards the held connections and every later one.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	held := p.held
	p.held = nil
	p.mu.Unlock()
	for _, c := range held {
		p.forward(c)
	}
}

func (p *Proxy) close() {
	p.ln.Close()
	p.Cut()
	p.mu.Lock()
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
	p.mu.Unlock()
	p.wg.Wait()
}
