package chaos

import (
	"context"
	"strings"
	"sync"
	"time"

	"keeper/coordination/zxid"
	"keeper/internal/skewclock"
)

// clockVariant is one way SkewClocks bends the servers' clocks: the
// leader's and a follower's specs for the whole hold, and a leap of the
// leader's monotonic clock, in percent of the session timeout, at half
// time.
type clockVariant struct {
	name             string
	leader, follower skewclock.Spec
	leapPct          int
}

// clockVariants are SkewClocks' faults, in turn. A skewed clock moves the
// server's monotonic clock only (skewclock's model), so a txn's time stays
// the real time of day and the session check (CheckSessions) keeps
// measuring real time: it flags an expiry that comes sooner than
// max(slack, timeout/2) before the timeout after the client last heard
// from the session — with scenario 5's 2 s timeout and 1.2 s slack, within
// 0.8 s. Every variant keeps the leader's clock within that: a session then
// expires no sooner than 1 s (half a timeout) after the leader last
// touched it — 2× at most, or a leap of half a timeout, or 1.5× with a
// leap of 15 % (1.13 s) — while clients ping every third of a timeout, so
// a session whose pings get through never expires, and an expiry the
// check flags during one is not the fault's expected effect. A heavier
// skew (3×, a leap of a whole timeout) would expire such sessions as
// intended and would need an exemption in the session check.
var clockVariants = []clockVariant{
	{name: "leader 1.5x with a leap, a follower 0.5x", leader: skewclock.Spec{Rate: 1.5}, follower: skewclock.Spec{Rate: 0.5}, leapPct: 15},
	{name: "leader 2x", leader: skewclock.Spec{Rate: 2}},
	{name: "leader 0.75x, a follower 2x", leader: skewclock.Spec{Rate: 0.75}, follower: skewclock.Spec{Rate: 2}},
	{name: "leader leaps half a timeout", leapPct: 50},
}

// ClockSkews records SkewClocks' faults: how many, the committed zxids
// around each (to count the sessions that expired meanwhile), and the
// probes' lifetimes.
type ClockSkews struct {
	mu      sync.Mutex
	n       int
	windows [][2]zxid.ID
	probes  []string // "want/got" per probe
	wg      sync.WaitGroup
}

// next returns the variant to inject and counts it.
func (cs *ClockSkews) next() clockVariant {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	v := clockVariants[cs.n%len(clockVariants)]
	cs.n++
	return v
}

func (cs *ClockSkews) addWindow(from, to zxid.ID) {
	if from == 0 || to == 0 {
		return // no server reported its zxid: the window is unknown
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.windows = append(cs.windows, [2]zxid.ID{from, to})
}

// SkewClocks skews the leader's clock and maybe a follower's for hold,
// through their fault files (skewclock's "clock …" lines, which a chaos
// build loads on SIGUSR1), then resets them: the clockVariants in turn.
// The session timeout governs the leaps.
func SkewClocks(hold time.Duration, cs *ClockSkews) Fault {
	return func(ctx context.Context, r *Run) {
		l := r.Cluster.Leader()
		if l == nil {
			sleepCtx(ctx, hold)
			return
		}
		v := cs.next()
		others := r.Cluster.Others(l)
		f := others[r.IntN(len(others))]
		from := committedZxid(r)
		setClock(r, l, v.leader)
		setClock(r, f, v.follower)
		r.Fault("clock skew on %s (leader) and %s for %v: %s", l.Name, f.Name, hold, v.name)
		cs.probe(ctx, r, l, v, hold)
		rest := hold
		if v.leapPct > 0 {
			leap := r.Scenario.SessionTimeout * time.Duration(v.leapPct) / 100
			if sleepCtx(ctx, hold/2) {
				spec := v.leader
				spec.Offset = leap
				setClock(r, l, spec)
				r.Logf("%s's monotonic clock leaps %v", l.Name, leap)
			}
			rest -= hold / 2
		}
		sleepCtx(ctx, rest)
		setClock(r, l, skewclock.Spec{})
		setClock(r, f, skewclock.Spec{})
		cs.addWindow(from, committedZxid(r))
		r.Logf("clocks of %s and %s reset", l.Name, f.Name)
	}
}

// setClock writes spec as s's clock line (none for the true clock),
// keeping the fault file's other lines, and makes a running s load it.
func setClock(r *Run, s *Server, spec skewclock.Spec) {
	var lines []string
	if !spec.True() {
		lines = []string{spec.String()}
	}
	if err := writeFaultLines(s.FaultsPath(), "clock", lines...); err != nil {
		r.Logf("cannot write %s's fault file: %v", s.Name, err)
		return
	}
	if p := s.Proc(); p != nil && p.Running() {
		if err := p.ReloadFaults(); err != nil {
			r.Logf("cannot signal %s: %v", s.Name, err)
		}
	}
}

// probe opens a session on the leader l that never pings, and measures
// how long it lives against what the variant's clock makes of its
// timeout: the proof that the skew took hold. A probe that dies early by
// more than a tenth (and 100 ms) expired sooner than the server's own
// clock allows — a violation; a late one is only a figure (a new leader
// renews every session, and signals, ticks and buckets add delay).
func (cs *ClockSkews) probe(ctx context.Context, r *Run, l *Server, v clockVariant, hold time.Duration) {
	c, err := Dial(ctx, l.Addr, DialOptions{Timeout: r.Scenario.SessionTimeout})
	if err != nil {
		r.Logf("clock probe on %s: %v", l.Name, err)
		return
	}
	c.Pause()
	t0 := time.Now()
	want := expectedLife(v, hold, c.Session().Timeout)
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		defer c.Drop()
		got := "none"
		select {
		case <-c.Done():
			life := time.Since(t0)
			got = roundMs(life)
			if life < want*9/10-100*time.Millisecond {
				r.Report.Violate("sessions", "probe session %#x on %s (%s) expired after %v; its clock allows no less than %v",
					c.Session().ID, l.Name, v.name, life.Round(time.Millisecond), want)
			}
		case <-time.After(3*want + time.Second):
		}
		cs.mu.Lock()
		cs.probes = append(cs.probes, roundMs(want)+"/"+got)
		cs.mu.Unlock()
	}()
}

// expectedLife is how long a session created as the variant's skew starts
// lives in real time: until its leader's monotonic clock has run its
// timeout — at the leader's rate for hold, with the leap at half time,
// then at the real rate.
func expectedLife(v clockVariant, hold, timeout time.Duration) time.Duration {
	rate := v.leader.Rate
	if rate == 0 {
		rate = 1
	}
	need, elapsed := float64(timeout), time.Duration(0)
	run := func(d time.Duration, rate float64) bool {
		if need <= float64(d)*rate {
			elapsed += time.Duration(need / rate)
			return true
		}
		need -= float64(d) * rate
		elapsed += d
		return false
	}
	if v.leapPct > 0 {
		if run(hold/2, rate) {
			return elapsed
		}
		if need -= float64(timeout) * float64(v.leapPct) / 100; need <= 0 {
			return elapsed
		}
		hold -= hold / 2
	}
	if run(hold, rate) {
		return elapsed
	}
	return elapsed + time.Duration(need)
}

// Figure reports the clock faults injected; the probes' expected and
// measured lifetimes; the sessions that expired while a fault was on
// (their closeSession's zxid within it) and, of those, the earliest
// expiry after the timeout, counted from the moment their client last
// heard from them (negative: before the timeout).
func (cs *ClockSkews) Figure(r *Run, c *Committed) {
	cs.wg.Wait()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	r.Report.Figure("clock-skews", "%d", cs.n)
	if len(cs.probes) > 0 {
		r.Report.Figure("skew-probes", "%s", strings.Join(cs.probes, ","))
	}
	expired, earliest := 0, time.Duration(0)
	closes := clientCloses(r.History)
	startMs := r.History.Start().UnixMilli()
	for _, s := range r.History.Sessions() {
		t, ok := c.SessionClosed(s.ID)
		if !ok || s.ClosedByClient || (t.Header.Cxid != 0 && closes[reqKey{s.ID, t.Header.Cxid}]) {
			continue
		}
		if !cs.within(t.Header.Zxid) {
			continue
		}
		after := time.Duration(t.Header.Time-(startMs+s.LastHeard/int64(time.Millisecond)))*time.Millisecond - s.Timeout
		if expired == 0 || after < earliest {
			earliest = after
		}
		expired++
	}
	r.Report.Figure("expired-in-skew", "%d", expired)
	if expired > 0 {
		r.Report.Figure("skew-expiry-late-min", "%s", roundMs(earliest))
	}
}

// within reports whether z falls in one of the fault windows.
func (cs *ClockSkews) within(z zxid.ID) bool {
	for _, w := range cs.windows {
		if w[0] < z && z <= w[1] {
			return true
		}
	}
	return false
}
