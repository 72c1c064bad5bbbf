package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"keeper/coordination/datatree"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
)

// ReconfigScenario is "membership changes" (docs/fault-model.md): five
// servers, three of them the ensemble at first, whose membership an
// operator (the super user, as zkCli's reconfig) changes about once a
// second — grow to five, remove the leader, replace a member, demote a
// voter to observer and promote it back, shrink to three, replace the
// whole list — while members, the leader most often, are killed with
// SIGKILL and restarted, paused with SIGSTOP, or cut off (the leader
// isolated, random halves), under unique creates and CAS registers. Every outcome of a reconfig is legal (NewConfigNoQuorum,
// ReconfigInProgress, a lost connection); the checks are those of every
// scenario (no acknowledged write lost, linearizable registers, equal
// trees) and that every member ends up showing one configuration.
// Figures: the reconfigs sent and how they ended, and the final
// configuration.
func ReconfigScenario() *Scenario {
	rs := &Durations{}
	op := &operator{outcomes: map[string]int{}}
	return &Scenario{
		ID: 14, Name: "membership changes",
		Cluster:  Config{Servers: 5, Reconfig: true, Voters: 3},
		Duration: 14 * time.Second,
		Workloads: []Workload{
			&SetWorkload{Prefix: "/set", Clients: 4, ClientBase: 100, Think: pacedThink},
			&RegisterWorkload{Prefix: "/reg", Keys: 4, Clients: 4, ClientBase: 200, Think: pacedThink},
		},
		LinearPrefix: "/reg/",
		Nemesis: func(ctx context.Context, r *Run) {
			var wg sync.WaitGroup
			wg.Go(func() { op.run(ctx, r) })
			Cycle(time.Second, KillMember(0.5, 800*time.Millisecond, rs), IsolateLeader(2500*time.Millisecond),
				PauseMember(0.5, 1500*time.Millisecond), RandomHalves(2500*time.Millisecond))(ctx, r)
			wg.Wait()
			rs.Figure(r, "restart-to-serving")
		},
		Check: func(ctx context.Context, r *Run, _ *Committed) {
			op.report(r)
			checkOneConfiguration(ctx, r)
			checkFrontLinks(r)
		},
	}
}

// operator changes the membership of a Reconfig cluster at random.
type operator struct {
	mu       sync.Mutex
	outcomes map[string]int
}

// operatorPause is the rest between two reconfigs; reconfigTimeout bounds
// one, connection included.
const (
	operatorPause   = 700 * time.Millisecond
	reconfigTimeout = 5 * time.Second
)

func (o *operator) run(ctx context.Context, r *Run) {
	for ctx.Err() == nil {
		o.step(ctx, r)
		sleepCtx(ctx, operatorPause)
	}
}

// step reads the configuration from a running member, draws a change and
// sends it through that member, as an operator's zkCli would.
func (o *operator) step(ctx context.Context, r *Run) {
	running := r.Cluster.Running()
	if len(running) == 0 {
		return
	}
	s := running[r.IntN(len(running))]
	ctx, cancel := context.WithTimeout(ctx, reconfigTimeout)
	defer cancel()
	conn, err := zkclient.Dial(ctx, s.Addr, zkclient.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		o.note("no connection")
		return
	}
	defer conn.Close()
	if err := conn.AddAuth(ctx, "digest", []byte(SuperAuth)); err != nil {
		o.note("no auth")
		return
	}
	data, _, err := conn.Get(ctx, datatree.ConfigPath, false)
	if err != nil {
		o.note("no config")
		return
	}
	e, err := zoocfg.ParseNextDynamic(data, datatree.ConfigPath)
	if err != nil {
		r.Report.Violate("reconfig", "%s shows a configuration that does not parse: %v (%q)", s.Name, err, data)
		return
	}
	req, what := o.draw(r, e)
	_, _, err = conn.Do(ctx, zkproto.OpReconfig, req)
	outcome := "ok"
	var ke *zkproto.Error
	switch {
	case errors.As(err, &ke):
		outcome = ke.Code.String()
	case err != nil:
		outcome = "unknown (" + errorKind(err) + ")"
	}
	o.note(outcome)
	r.Logf("reconfig through %s: %s: %s", s.Name, what, outcome)
}

func errorKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, zkclient.ErrConnectionLoss):
		return "connection lost"
	}
	return "error"
}

func (o *operator) note(outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes[outcome]++
}

// draw returns a change of e and its description: grow towards five
// voters (an outside server, sometimes as an observer), remove the leader
// or another voter, demote or promote, replace one member with an outside
// server, shrink from five to three, or a whole new list — keeping at
// least three voters, so that one kill leaves a quorum.
func (o *operator) draw(r *Run, e *zoocfg.Ensemble) (*zkproto.ReconfigRequest, string) {
	byID := map[int]*Server{}
	for _, s := range r.Cluster.Servers {
		byID[s.ID] = s
	}
	var voters, observers []int
	in := map[int]bool{}
	for _, m := range e.Servers {
		in[int(m.ID)] = true
		if m.Role == zoocfg.Observer {
			observers = append(observers, int(m.ID))
		} else {
			voters = append(voters, int(m.ID))
		}
	}
	var outside []int
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		if !in[id] {
			outside = append(outside, id)
		}
	}
	pick := func(ids []int) int { return ids[r.IntN(len(ids))] }
	line := func(id int, role string) string { return byID[id].ConfigLine(role) }
	req := &zkproto.ReconfigRequest{CurConfigID: -1}
	leader := -1
	if l := r.Cluster.Leader(); l != nil && slices.Contains(voters, l.ID) {
		leader = l.ID
	}
	switch k := r.IntN(100); {
	case len(voters) < 5 && len(outside) > 0 && k < 25:
		id, role := pick(outside), "participant"
		if r.IntN(4) == 0 {
			role = "observer"
		}
		req.JoiningServers = line(id, role)
		return req, fmt.Sprintf("add s%d as %s", id, role)
	case len(voters) < 5 && len(observers) > 0 && k < 40:
		id := pick(observers)
		req.JoiningServers = line(id, "participant")
		return req, fmt.Sprintf("promote observer s%d", id)
	case len(voters) > 3 && k < 55:
		id := pick(voters)
		what := fmt.Sprintf("remove s%d", id)
		if leader > 0 && r.IntN(2) == 0 {
			id, what = leader, fmt.Sprintf("remove the leader s%d", leader)
		}
		req.LeavingServers = strconv.Itoa(id)
		return req, what
	case len(voters) > 3 && k < 65:
		id := pick(voters)
		req.JoiningServers = line(id, "observer")
		return req, fmt.Sprintf("demote s%d to observer", id)
	case len(outside) > 0 && len(voters) >= 3 && k < 80:
		gone, id := pick(voters), pick(outside)
		req.JoiningServers, req.LeavingServers = line(id, "participant"), strconv.Itoa(gone)
		return req, fmt.Sprintf("replace s%d with s%d", gone, id)
	case len(voters) == 5 && k < 90:
		a := pick(voters)
		b := pick(slices.DeleteFunc(slices.Clone(voters), func(v int) bool { return v == a }))
		req.LeavingServers = strconv.Itoa(a) + "," + strconv.Itoa(b)
		return req, fmt.Sprintf("shrink: remove s%d and s%d", a, b)
	}
	// A new list: three to five voters among all servers, the rest
	// observers or left out.
	ids := slices.Sorted(maps.Keys(byID))
	shuffle(r, ids)
	n := 3 + r.IntN(3)
	var lines, desc []string
	for i, id := range ids {
		role := "participant"
		switch {
		case i >= n && r.IntN(2) == 0:
			role = "observer"
		case i >= n:
			continue
		}
		lines = append(lines, line(id, role))
		desc = append(desc, fmt.Sprintf("s%d:%s", id, role[:1]))
	}
	members := strings.Join(lines, ",")
	req.NewMembers = &members
	return req, "new members " + strings.Join(desc, " ")
}

// report adds the reconfigs' outcomes to the report.
func (o *operator) report(r *Run) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var parts []string
	total := 0
	for _, k := range slices.Sorted(maps.Keys(o.outcomes)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, o.outcomes[k]))
		total += o.outcomes[k]
	}
	r.Report.Figure("reconfigs", "%d (%s)", total, strings.Join(parts, " "))
	if o.outcomes["ok"] == 0 {
		r.Report.Violate("reconfig", "no reconfig committed in the whole run: %s", strings.Join(parts, " "))
	}
}

// checkOneConfiguration waits until every running member shows the same
// /zookeeper/config, a configuration that parses, and reports it.
func checkOneConfiguration(ctx context.Context, r *Run) {
	var last string
	err := poll(healTimeout, "every member showing one configuration", func() (bool, string, error) {
		seen := map[string][]string{}
		for _, s := range r.Cluster.Running() {
			data, err := readConfig(ctx, s)
			if err != nil {
				return false, fmt.Sprintf("%s: %v", s.Name, err), nil
			}
			seen[string(data)] = append(seen[string(data)], s.Name)
		}
		var desc []string
		for text, who := range seen {
			desc = append(desc, fmt.Sprintf("%v: %q", who, text))
			last = text
		}
		return len(seen) == 1, strings.Join(desc, "; "), ctx.Err()
	})
	if err != nil {
		r.Report.Violate("reconfig", "%v", err)
		return
	}
	e, err := zoocfg.ParseNextDynamic([]byte(last), datatree.ConfigPath)
	if err != nil {
		r.Report.Violate("reconfig", "the final configuration does not parse: %v (%q)", err, last)
		return
	}
	var desc []string
	for _, m := range e.Servers {
		desc = append(desc, fmt.Sprintf("s%d:%s", m.ID, m.Role))
	}
	r.Report.Figure("final-configuration", "version %x: %s", e.Version, strings.Join(desc, " "))
}

// readConfig reads s's /zookeeper/config.
func readConfig(ctx context.Context, s *Server) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, fourLetterTimeout)
	defer cancel()
	conn, err := zkclient.Dial(ctx, s.Addr, zkclient.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	data, _, err := conn.Get(ctx, datatree.ConfigPath, false)
	return data, err
}

// checkFrontLinks reports the peer links the fronts passed on, by
// dialling member, and those refused for want of a known dialler (h); a
// run whose fronts told no dialler apart would have had no partitions.
func checkFrontLinks(r *Run) {
	links := r.Cluster.FrontLinks()
	var parts []string
	passed := 0
	for _, k := range slices.Sorted(maps.Keys(links)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, links[k]))
		if k != harnessNode {
			passed += links[k]
		}
	}
	r.Report.Figure("peer-links", "%s", strings.Join(parts, " "))
	if passed == 0 {
		r.Report.Violate("harness", "the fronts told no peer connection's dialler apart: %s", strings.Join(parts, " "))
	}
}
