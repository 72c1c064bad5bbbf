package ensemble

import (
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// expiryTrials is how many dying sessions TestSessionExpiryProduction
// attaches to the leader and as many to a follower (bench/failover.sh runs
// 20 of each, side by side with ZooKeeper).
const expiryTrials = 3

// TestSessionExpiryProduction runs an ensemble with ZooKeeper's sample
// timing (tickTime 2000, initLimit 10, syncLimit 5) and lets go-zookeeper
// sessions attached to the leader and to a follower die: each holds an
// ephemeral and sends a request every 50 ms until its connection is cut
// (a proxy closes both ends and refuses the client from then on, as the
// death of its process would). Every ephemeral must go, and none before
// the session timeout has passed since the last request its client sent:
// the server may not expire a session sooner. How long after the death
// each went is reported (the target: within the timeout and tickTime/2).
func TestSessionExpiryProduction(t *testing.T) {
	e := NewEnsemble(t, Options{TickMs: 2000, InitLimit: 10, SyncLimit: 5})
	leader := e.WaitServing(electTimeout)
	follower := e.Members[leader.ID%len(e.Members)]
	watcher := dialZK(t, e.Addrs())
	ensurePath(t, watcher, "/expiry")

	var dying []*dyingSession
	for _, target := range []struct {
		name string
		m    *Member
	}{{"leader", leader}, {"follower", follower}} {
		for i := range expiryTrials {
			dying = append(dying, startDying(t, target.m.Addr, fmt.Sprintf("%s-%d", target.name, i)))
		}
	}
	died := time.Now()
	for _, d := range dying {
		d.die()
	}

	gone := map[string]time.Time{}
	deadline := died.Add(clientSessionTimeout + 60*time.Second)
	for len(gone) < len(dying) {
		if time.Now().After(deadline) {
			t.Fatalf("ephemerals still there %v after the clients died; gone: %v", time.Since(died), gone)
		}
		kids, _, err := watcher.Children("/expiry")
		if err == nil {
			now := time.Now()
			for _, d := range dying {
				if _, ok := gone[d.name]; !ok && !slices.Contains(kids, d.name) {
					gone[d.name] = now
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	byTarget := map[string][]time.Duration{}
	for _, d := range dying {
		g := gone[d.name]
		if early := d.lastSent.Add(d.timeout).Sub(g); early > 0 {
			t.Errorf("%s: session %#x (timeout %v) expired %v before its timeout after the last request answered",
				d.name, d.id, d.timeout, early)
		}
		target := d.name[:len(d.name)-2]
		byTarget[target] = append(byTarget[target], g.Sub(died))
	}
	for _, target := range []string{"leader", "follower"} {
		v := byTarget[target]
		slices.Sort(v)
		within := 0
		for _, x := range v {
			if x <= clientSessionTimeout+time.Second {
				within++
			}
		}
		t.Logf("expiry: attached to the %s: gone after median %v, worst %v (timeout %v); %d/%d within timeout+tickTime/2",
			target, median(v).Round(time.Millisecond), worst(v).Round(time.Millisecond), clientSessionTimeout, within, len(v))
	}
}

// dyingSession is a go-zookeeper session through a proxy the test cuts.
type dyingSession struct {
	name    string
	id      int64
	timeout time.Duration
	conn    *zk.Conn
	proxy   *cutProxy
	stop    chan struct{}
	done    chan struct{}
	// lastSent is when the last request that was answered was sent (read
	// after done): the server had it, so its last touch of the session
	// was no earlier.
	lastSent time.Time
}

func startDying(t *testing.T, addr, name string) *dyingSession {
	t.Helper()
	p := newCutProxy(t, addr)
	c := dialZK(t, []string{p.addr()})
	if _, err := c.Create("/expiry/"+name, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	d := &dyingSession{name: name, id: c.SessionID(), timeout: clientSessionTimeout, conn: c, proxy: p,
		stop: make(chan struct{}), done: make(chan struct{})}
	go d.busy()
	return d
}

// busy sends a request every 50 ms until the cut, noting when it sent the
// last one answered.
func (d *dyingSession) busy() {
	defer close(d.done)
	for {
		select {
		case <-d.stop:
			return
		default:
		}
		sent := time.Now()
		if _, _, err := d.conn.Exists("/expiry"); err == nil {
			d.lastSent = sent
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// die cuts the session's connection for good.
func (d *dyingSession) die() {
	d.proxy.cut()
	close(d.stop)
	<-d.done
}

// cutProxy forwards connections to a server until cut, then closes them
// all and refuses new ones.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	isDown bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	go p.accept()
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.isDown {
			p.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { io.Copy(s, c); s.Close(); c.Close() }()
		go func() { io.Copy(c, s); c.Close(); s.Close() }()
	}
}

// cut closes the listener and every connection; safe to call twice.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isDown {
		return
	}
	p.isDown = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}
