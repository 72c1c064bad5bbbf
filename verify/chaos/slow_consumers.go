package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"keeper/coordination/zkproto"
	"keeper/internal/testhost"
	"keeper/verify/slowconsumer"
)

// The slow-consumers scenario's settings and bounds.
const (
	// slowMaxSessionMs is the servers' maxSessionTimeout, which is also how
	// long a write to a client may make no progress before the server
	// closes the connection (docs/backpressure.md): short, so that a round
	// sees its stuck clients closed.
	slowMaxSessionMs = 4000
	// slowRuokEvery is how often every server is asked ruok.
	slowRuokEvery = 200 * time.Millisecond
	// slowRuokBound is the longest a ruok may take, dial to close, on a
	// 2-core machine running the suite; a slower or missing answer is a
	// violation. Like slowHealthyP99Bound it is a latency, which grows
	// with how busy the machine is: the check scales both by
	// testhost.Timescale (1 on a quiet machine), so that the verdict is
	// about the attack, not about the machine's other load.
	slowRuokBound = 2 * time.Second
	// slowHealthyP99Bound bounds the 99th percentile of the healthy
	// clients' operations during the attacks; an operation without a reply
	// (the request timeout, the same bound) counts as slower than any.
	slowHealthyP99Bound = time.Second
	// slowRSSCapKB caps every server's peak resident set. The documented
	// bounds (docs/backpressure.md) let a server hold 256 MiB of replies
	// for all its clients, plus per connection its 64 KiB read buffer, one
	// request and one reply. The attack's requests are small, so 256 MiB of
	// replies and 250 MiB for its 2,003 connections
	// (slowconsumer.ZooKeeperPlan) are what it can fill: about 510 MiB
	// live. Go's collector (GOGC=100) lets the heap grow to twice what was
	// live at the last collection before the next, so the cap is twice
	// that.
	slowRSSCapKB = 1 << 20
)

// SlowConsumers attacks one server at a time, the leader first, with
// clients that make it hold their replies (slowconsumer.ZooKeeperPlan):
// one pipelines large reads (getData of a 512 KiB node) and never reads,
// one reads a byte a second, one stops reading in the middle of a reply,
// and 2,000 connections each pipeline five reads of a 64 KiB node and
// never read; all of them ping, so the server closes them for not
// reading, not for a silent session. Meanwhile healthy clients run
// CAS registers and every server is asked ruok five times a second.
// Checks: every ruok answered "imok" within slowRuokBound; the healthy
// operations' p99 under slowHealthyP99Bound; every server's peak RSS under
// slowRSSCapKB; no server crashes; and the usual ones (no acknowledged
// write lost, linearizable registers). Figures: attacks per kind, the
// connections the server closed per kind, ruok p50/p99/max, healthy
// p50/p99, peak RSS per server.
func SlowConsumers() *Scenario {
	st := &slowConsumers{}
	return &Scenario{
		ID: 11, Name: "slow consumers",
		// syncLimit 5 s, ZooKeeper's sample 10 s halved: the scenario is
		// about what hostile clients cost the others, not about how fast
		// a stalled leader is replaced, and the harness's default of 1 s
		// let a leader whose two cores were saturated by the attack and
		// the race detector lose its quorum.
		Cluster: Config{Servers: 3, MaxSessionTimeoutMs: slowMaxSessionMs, SyncLimit: 50},
		// A round runs to its end and takes longer than this (its hold
		// alone is 6 s): one round, against the leader, unless
		// CHAOS_DURATION asks for more.
		Duration:   5 * time.Second,
		ReqTimeout: testhost.Scale(slowHealthyP99Bound),
		Workloads: []Workload{
			&RegisterWorkload{Prefix: "/reg", Keys: 6, Clients: 6, ClientBase: 100, Think: 2 * time.Millisecond},
		},
		LinearPrefix: "/reg/",
		Nemesis:      st.nemesis,
		Check:        st.check,
	}
}

// slowConsumers is what the scenario's nemesis leaves for its check.
type slowConsumers struct {
	mu       sync.Mutex
	from, to int64 // the attacks' window, history time
	res      slowconsumer.Result
	probes   []*slowconsumer.Probe
}

// nemesis creates the nodes the attackers read, starts the ruok probes and attacks the
// servers in turn, a whole round each, until ctx ends.
func (st *slowConsumers) nemesis(ctx context.Context, r *Run) {
	if err := createSlowNodes(ctx, r); err != nil {
		r.Report.Violate("harness", "%v", err)
		return
	}
	pctx, stopProbes := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	st.mu.Lock()
	st.from = r.History.Now()
	for _, s := range r.Cluster.Servers {
		p := &slowconsumer.Probe{Name: s.Name, Addr: s.Addr}
		st.probes = append(st.probes, p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Run(pctx, slowRuokEvery, 2*testhost.Scale(slowRuokBound))
		}()
	}
	st.mu.Unlock()
	plan := slowconsumer.ZooKeeperPlan(slowMaxSessionMs * time.Millisecond)
	order := attackOrder(r)
	for i := 0; ctx.Err() == nil; i++ {
		s := order[i%len(order)]
		r.Fault("slow consumers against %s", s.Name)
		// A round runs to its end, so that it sees its stuck clients closed.
		res := slowconsumer.Round(context.WithoutCancel(ctx), s.Addr, plan)
		r.Logf("round against %s: opened %s in %v, closed by the server %s", s.Name,
			res.Opened, res.OpenTime.Round(time.Millisecond), res.Closed)
		st.mu.Lock()
		st.res.Add(res)
		st.mu.Unlock()
		checkCrashes(ctx, r, "slow consumers")
	}
	stopProbes()
	wg.Wait()
	st.mu.Lock()
	st.to = r.History.Now()
	st.mu.Unlock()
}

// attackOrder is the leader, then the others.
func attackOrder(r *Run) []*Server {
	l := r.Cluster.Leader()
	if l == nil {
		return r.Cluster.Servers
	}
	return append([]*Server{l}, r.Cluster.Others(l)...)
}

// createSlowNodes creates the nodes the attackers read.
func createSlowNodes(ctx context.Context, r *Run) error {
	c := r.NewClient("c90", r.Cluster.Servers[0])
	if !connect(ctx, c, nil) {
		return ctx.Err()
	}
	for _, n := range []slowconsumer.Node{slowconsumer.LargeNode, slowconsumer.SmallNode} {
		op := &Op{Kind: zkproto.OpCreate, Path: n.Path, Data: strings.Repeat("s", n.Bytes)}
		if _, err := c.Do(ctx, op, createReq(op)); err != nil {
			return fmt.Errorf("chaos: create %s: %w", n.Path, err)
		}
		if op.Err != zkproto.CodeOK && op.Err != zkproto.CodeNodeExists {
			return fmt.Errorf("chaos: create %s: %v", n.Path, op.Err)
		}
	}
	return nil
}

// checkCrashes reports every server that exited, with its log, and
// restarts it.
func checkCrashes(ctx context.Context, r *Run, under string) {
	for _, s := range r.Cluster.Servers {
		if p := s.Proc(); p != nil && !p.Running() {
			r.Report.Violate("crash", "%s exited (%v) under %s:\n%s", s.Name, p.ExitErr(), under, LogTail(p.LogPath, 20))
			restart(ctx, r, s, nil)
		}
	}
}

// check judges the probes, the healthy clients' latency and the servers'
// memory, and sets the figures.
func (st *slowConsumers) check(_ context.Context, r *Run, _ *Committed) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r.Report.Figure("attacks", "%s", st.res.Opened)
	r.Report.Figure("closed-stuck", "%s", st.res.Closed)
	if st.res.Failed.Total() > 0 {
		r.Report.Figure("attack-dial-failed", "%s", st.res.Failed)
	}
	var ruok slowconsumer.Latencies
	for _, p := range st.probes {
		for _, f := range p.Failures() {
			r.Report.Violate("ruok", "%s", f)
		}
		if m := p.Times.Max(); m > testhost.Scale(slowRuokBound) && m != slowconsumer.Never {
			r.Report.Violate("ruok", "%s: the slowest ruok took %s, over %v", p.Name, slowconsumer.FormatDuration(m),
				testhost.Scale(slowRuokBound))
		}
		ruok.Merge(&p.Times)
	}
	r.Report.Figure("ruok", "%s", ruok.Summary())
	healthy := healthyLatencies(r.History, st.from, st.to)
	r.Report.Figure("healthy", "%s/%s", slowconsumer.FormatDuration(healthy.Quantile(0.5)),
		slowconsumer.FormatDuration(healthy.Quantile(0.99)))
	if p99, bound := healthy.Quantile(0.99), testhost.Scale(slowHealthyP99Bound); p99 > bound {
		r.Report.Violate("latency", "healthy operations' p99 during the attacks is %s (%d of %d without a reply), over %v (timescale %.1f)",
			slowconsumer.FormatDuration(p99), healthy.Failed(), healthy.Count(), bound, testhost.Timescale())
	}
	checkPeakRSS(r, slowRSSCapKB)
}

// healthyLatencies collects the times of the operations called in
// [from, to); one without a reply counts as failed.
func healthyLatencies(h *History, from, to int64) *slowconsumer.Latencies {
	l := &slowconsumer.Latencies{}
	for _, o := range h.Ops() {
		if o.Call < from || o.Call >= to {
			continue
		}
		if o.Unknown || o.Return < 0 {
			l.Fail()
			continue
		}
		l.Add(time.Duration(o.Return - o.Call))
	}
	return l
}

// checkPeakRSS sets the figure peak-rss (every server's VmHWM) and
// reports a server whose peak passed capKB.
func checkPeakRSS(r *Run, capKB int64) {
	var parts []string
	for _, s := range r.Cluster.Servers {
		p := s.Proc()
		if p == nil || !p.Running() {
			continue
		}
		kb, err := slowconsumer.PeakRSSKB(p.Pid())
		if err != nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s:%dMB", s.Name, kb>>10))
		if kb > capKB {
			r.Report.Violate("memory", "%s's peak RSS is %d MiB, over the cap of %d MiB", s.Name, kb>>10, capKB>>10)
		}
	}
	r.Report.Figure("peak-rss", "%s", strings.Join(parts, ","))
}
