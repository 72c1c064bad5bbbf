package chaos

import (
	"context"
	"errors"
	"sync"
	"time"

	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// pickClient returns a random client named with prefix that holds a
// connected session, or nil.
func pickClient(r *Run, prefix string) *Client {
	var live []*Client
	for _, c := range r.ClientsNamed(prefix) {
		if c.Connected() && c.SessionID() != 0 && !c.Paused() {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[r.IntN(len(live))]
}

// PausedSessions remembers the sessions whose clients were paused for
// longer than their timeout: each must have expired.
type PausedSessions struct {
	mu       sync.Mutex
	sessions map[int64]time.Duration // session -> pause
}

func (p *PausedSessions) add(session int64, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions == nil {
		p.sessions = map[int64]time.Duration{}
	}
	p.sessions[session] = d
}

// Check reports paused sessions that the committed history never closed.
func (p *PausedSessions) Check(r *Run, c *Committed) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s, d := range p.sessions {
		if _, ok := c.SessionClosed(s); !ok {
			r.Report.Violate("sessions", "session %#x outlived a client pause of %v, longer than its timeout %v", s, d, r.Scenario.SessionTimeout)
		}
	}
	r.Report.Figure("paused-sessions", "%d", len(p.sessions))
}

// PauseClient stands for SIGSTOP of a client process (a client named with
// prefix): it stops pinging for hold, then goes on. With hold longer than
// the session timeout the session must expire, the ephemerals go, and the
// client must be told SESSION_EXPIRED.
func PauseClient(prefix string, hold time.Duration, ps *PausedSessions) Fault {
	return func(ctx context.Context, r *Run) {
		c := pickClient(r, prefix)
		if c == nil {
			sleepCtx(ctx, hold)
			return
		}
		sid := c.SessionID()
		c.Pause()
		r.Fault("pause client %s (session %#x) for %v", c.Name, sid, hold)
		if sleepCtx(ctx, hold) && hold > r.Scenario.SessionTimeout+time.Second {
			ps.add(sid, hold)
		}
		c.Resume()
	}
}

// PauseClientServer stops, with SIGSTOP, the server a client named with
// prefix is connected to, for hold.
func PauseClientServer(prefix string, hold time.Duration) Fault {
	return func(ctx context.Context, r *Run) {
		c := pickClient(r, prefix)
		var s *Server
		if c != nil {
			s = c.Server()
		}
		if s == nil {
			sleepCtx(ctx, hold)
			return
		}
		r.Cluster.Pause(s)
		r.Fault("SIGSTOP %s (serving %s) for %v", s.Name, c.Name, hold)
		sleepCtx(ctx, hold)
		r.Cluster.Resume(s)
	}
}

// CutClientServer cuts the server a client named with prefix is
// connected to off from the other servers (not from its clients) for
// hold.
func CutClientServer(prefix string, hold time.Duration) Fault {
	return func(ctx context.Context, r *Run) {
		c := pickClient(r, prefix)
		var s *Server
		if c != nil {
			s = c.Server()
		}
		if s == nil {
			sleepCtx(ctx, hold)
			return
		}
		r.Cluster.Net.Partition([]string{s.Name}, names(r.Cluster.Others(s)))
		r.Fault("cut %s (serving %s) off the quorum for %v", s.Name, c.Name, hold)
		holdThenHeal(ctx, r, hold)
	}
}

// SlowClientLink delays both directions of a client's link to its server
// by latency for hold: a slow but live link, over which the session must
// survive.
func SlowClientLink(prefix string, latency, hold time.Duration) Fault {
	return func(ctx context.Context, r *Run) {
		c := pickClient(r, prefix)
		var s *Server
		if c != nil {
			s = c.Server()
		}
		if s == nil {
			sleepCtx(ctx, hold)
			return
		}
		r.Cluster.Net.SetBoth(c.Name, s.Name, Rule{Latency: latency, Jitter: latency / 4})
		r.Fault("delay %s<->%s by %v for %v", c.Name, s.Name, latency, hold)
		holdThenHeal(ctx, r, hold)
	}
}

// Probes counts the handshakes LagFollower tried on a lagging server with
// a last seen zxid ahead of it.
type Probes struct {
	mu                 sync.Mutex
	refused, accepted  int
	maxLag             int64
	moveRefused, moves int
}

// Figure reports the probe counts and the session moves.
func (p *Probes) Figure(r *Run) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range r.History.Connects() {
		if c.Session != 0 {
			p.moves++
			if c.Result == "refused" {
				p.moveRefused++
			}
		}
	}
	r.Report.Figure("probes-refused", "%d/%d", p.refused, p.refused+p.accepted)
	r.Report.Figure("resumes-refused", "%d/%d", p.moveRefused, p.moves)
	r.Report.Figure("max-lag-txns", "%d", p.maxLag)
}

// LagFollower delays what the leader sends one follower by lag for hold,
// so the follower serves, but behind. Meanwhile it probes: a write on the
// leader, then a handshake on the follower claiming the write's zxid as
// last seen. The follower must refuse it until it has caught up
// (CLIENT_ZXID_AHEAD); if it accepts, its first reply must not be behind.
func LagFollower(lag, hold time.Duration, p *Probes) Fault {
	return func(ctx context.Context, r *Run) {
		l := r.Cluster.Leader()
		if l == nil {
			sleepCtx(ctx, hold)
			return
		}
		others := r.Cluster.Others(l)
		f := others[r.IntN(len(others))]
		r.Cluster.Net.Set(l.Name, f.Name, Rule{Latency: lag})
		r.Fault("delay %s->%s by %v for %v", l.Name, f.Name, lag, hold)
		hctx, cancel := context.WithTimeout(ctx, hold)
		for sleepCtx(hctx, 200*time.Millisecond) {
			probe(hctx, r, l, f, p)
		}
		cancel()
		r.Cluster.Net.Heal()
		r.Logf("healed")
	}
}

// probe writes on the leader and claims the write's zxid on f.
func probe(ctx context.Context, r *Run, l, f *Server, p *Probes) {
	w, err := Dial(ctx, l.Addr, DialOptions{Timeout: 5 * time.Second})
	if err != nil {
		return
	}
	rep, err := w.Do(ctx, zkproto.OpSync, &zkproto.SyncRequest{Path: "/"})
	_, _ = w.Close(ctx)
	if err != nil || rep.Header.Err != zkproto.CodeOK {
		return
	}
	z := rep.Header.Zxid // the createSession's and the sync's zxid: the leader's state
	if st, err := f.Srvr(); err == nil {
		p.mu.Lock()
		p.maxLag = max(p.maxLag, int64(zxid.ID(z).Counter())-int64(zxid.ID(st.Zxid).Counter()))
		p.mu.Unlock()
	}
	c, err := Dial(ctx, f.Addr, DialOptions{Timeout: 5 * time.Second, LastZxid: z})
	switch {
	case errors.Is(err, ErrRefused):
		p.mu.Lock()
		p.refused++
		p.mu.Unlock()
		return
	case err != nil:
		return
	}
	defer func() { _, _ = c.Close(ctx) }()
	got, err := c.Do(ctx, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
	if err != nil {
		return
	}
	p.mu.Lock()
	p.accepted++
	p.mu.Unlock()
	if got.Header.Zxid < z {
		r.Report.Violate("session-order", "%s accepted a client that had seen zxid %#x, then answered it at %#x", f.Name, z, got.Header.Zxid)
	}
}
