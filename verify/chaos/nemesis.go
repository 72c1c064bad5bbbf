package chaos

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// A Fault is one nemesis step: inject, hold, undo. It returns when it has
// undone what it did (or ctx ended, after undoing it).
type Fault func(ctx context.Context, r *Run)

// Cycle runs the faults in turn, with a healthy pause of rest between
// them, until ctx ends.
func Cycle(rest time.Duration, faults ...Fault) func(ctx context.Context, r *Run) {
	return func(ctx context.Context, r *Run) {
		for i := 0; ctx.Err() == nil; i++ {
			faults[i%len(faults)](ctx, r)
			sleepCtx(ctx, rest)
		}
	}
}

// holdThenHeal waits hold (or until ctx ends) and lifts every rule.
func holdThenHeal(ctx context.Context, r *Run, hold time.Duration) {
	sleepCtx(ctx, hold)
	r.Cluster.Net.Heal()
	r.Logf("healed")
}

// names returns the servers' node names.
func names(servers []*Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Name
	}
	return out
}

// IsolateLeader cuts the current leader off from every other server
// (its clients stay connected to it) for hold.
func IsolateLeader(hold time.Duration) Fault {
	return func(ctx context.Context, r *Run) {
		l := r.Cluster.Leader()
		if l == nil {
			sleepCtx(ctx, hold)
			return
		}
		r.Cluster.Net.Partition([]string{l.Name}, names(r.Cluster.Others(l)))
		r.Fault("isolate leader %s for %v", l.Name, hold)
		holdThenHeal(ctx, r, hold)
	}
}

// RandomHalves splits the servers into a random minority and majority.
func RandomHalves(hold time.Duration) Fault {
	return func(ctx context.Context, r *Run) {
		all := names(r.Cluster.Servers)
		shuffle(r, all)
		minority, majority := all[:len(all)/2], all[len(all)/2:]
		r.Cluster.Net.Partition(minority, majority)
		r.Fault("partition %v | %v for %v", minority, majority, hold)
		holdThenHeal(ctx, r, hold)
	}
}

// Bridge splits the servers into two halves that cannot talk to each
// other but both talk to one bridge server (five servers: 2 | 1 | 2), the
// partition that famously confused leases.
func Bridge(hold time.Duration) Fault {
	return func(ctx context.Context, r *Run) {
		all := names(r.Cluster.Servers)
		shuffle(r, all)
		k := len(all) / 2
		left, bridge, right := all[:k], all[k], all[k+1:]
		r.Cluster.Net.Partition(left, right)
		r.Fault("bridge %v | %s | %v for %v", left, bridge, right, hold)
		holdThenHeal(ctx, r, hold)
	}
}

// shuffle permutes s with the run's source.
func shuffle[T any](r *Run, s []T) {
	for i := len(s) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		s[i], s[j] = s[j], s[i]
	}
}

// Durations collects how long something took each time (a restart, a
// catch-up).
type Durations struct {
	mu    sync.Mutex
	times []time.Duration
}

func (rs *Durations) add(d time.Duration) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.times = append(rs.times, d)
}

// Figure reports the median and the maximum under name.
func (rs *Durations) Figure(r *Run, name string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.times) == 0 {
		return
	}
	t := slices.Clone(rs.times)
	slices.Sort(t)
	r.Report.Figure(name, "%s/%s", roundMs(t[len(t)/2]), roundMs(t[len(t)-1]))
}

// KillMember kills a random server with SIGKILL — the leader with
// probability leaderBias — leaves it down for down, and restarts it with
// the same data directory, timing how long it takes to serve.
func KillMember(leaderBias float64, down time.Duration, rs *Durations) Fault {
	return func(ctx context.Context, r *Run) {
		victim := r.Cluster.Servers[r.IntN(len(r.Cluster.Servers))]
		if l := r.Cluster.Leader(); l != nil && float64(r.IntN(1000)) < leaderBias*1000 {
			victim = l
		}
		role := "follower"
		if victim == r.Cluster.Leader() {
			role = "leader"
		}
		r.Cluster.Kill(victim)
		r.Fault("kill -9 %s (%s), down for %v", victim.Name, role, down)
		sleepCtx(ctx, down)
		restart(ctx, r, victim, rs)
	}
}

// restart starts s again and waits until it serves as leader, follower
// or observer.
func restart(ctx context.Context, r *Run, s *Server, rs *Durations) {
	start := time.Now()
	if err := r.Cluster.Start(s); err != nil {
		r.Report.Violate("restart", "%s did not start again: %v", s.Name, err)
		return
	}
	awaitServing(ctx, r, s, start, rs)
}

// awaitServing waits until the started server s serves as leader,
// follower or observer, samples its digest, and notes how long it took since start.
func awaitServing(ctx context.Context, r *Run, s *Server, start time.Time, rs *Durations) {
	err := poll(healTimeout, s.Name+" serving", func() (bool, string, error) {
		st, err := s.Srvr()
		return err == nil && (st.Mode == "leader" || st.Mode == "follower" || st.Mode == "observer"), fmt.Sprintf("%+v %v", st, err), ctx.Err()
	})
	if err != nil {
		if ctx.Err() == nil {
			r.Report.Violate("liveness", "%s started but does not serve: %v", s.Name, err)
		}
		return
	}
	r.Sample(s)
	if rs != nil {
		rs.add(time.Since(start))
	}
	r.Logf("%s serving again after %v", s.Name, time.Since(start).Round(time.Millisecond))
}

// PauseMember stops a random server (the leader with probability
// leaderBias) with SIGSTOP for hold, then continues it.
func PauseMember(leaderBias float64, hold time.Duration) Fault {
	return func(ctx context.Context, r *Run) {
		victim := r.Cluster.Servers[r.IntN(len(r.Cluster.Servers))]
		if l := r.Cluster.Leader(); l != nil && float64(r.IntN(1000)) < leaderBias*1000 {
			victim = l
		}
		r.Cluster.Pause(victim)
		r.Fault("SIGSTOP %s for %v", victim.Name, hold)
		sleepCtx(ctx, hold)
		r.Cluster.Resume(victim)
		r.Logf("SIGCONT %s", victim.Name)
	}
}
