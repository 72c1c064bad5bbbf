package mixed

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/internal/testhost"
)

// superDigest is super:test, the super user who may reconfigure.
const superDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="

// TestMixedReconfig changes the membership of a mixed ensemble while it
// serves, once with a keeper server leading two Apache ZooKeeper
// followers and once with a ZooKeeper server leading two keeper ones:
// a follower of the other kind is removed, comes back as an observer and
// is promoted to participant; then the leader itself is removed (its
// designated successor is of the other kind) and added back. After each
// change every member in the configuration holds the same
// /zookeeper/config and serves in the role it names; writes go through
// every member; nothing acknowledged is lost and the trees are equal.
func TestMixedReconfig(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts mixed ensembles of real processes")
	}
	for _, tc := range []struct {
		name  string
		kinds []Kind // member 3 leads
	}{
		{"keeper leads", []Kind{ZooKeeper, ZooKeeper, Keeper}},
		{"zookeeper leads", []Kind{Keeper, Keeper, ZooKeeper}},
	} {
		t.Run(tc.name, func(t *testing.T) { runMixedReconfig(t, NewEnsemble(t, tc.kinds...)) })
	}
}

func runMixedReconfig(t *testing.T, e *Ensemble) {
	for _, m := range e.Members {
		e.SetExtra(m, "reconfigEnabled=true", "DigestAuthenticationProvider.superDigest="+superDigest)
	}
	f1, f2, l := e.Member(1), e.Member(2), e.Member(3)
	// With equal (empty) logs the highest id wins; 2 and 3 form the
	// quorum before 1 starts.
	e.Start(l)
	e.Start(f2)
	if got := e.WaitServing(); got != l {
		t.Fatalf("leader is member %d (%s), want member 3", got.ID, got.Kind)
	}
	e.Start(f1)
	e.WaitServing()
	ack := acked{}
	for _, m := range e.Members {
		writeThrough(t, e, m, "before", ack)
	}
	tolerate := []string{javaShutdownBug, javaRevalidateBug, javaLeaderBug}

	// A follower of the other kind leaves; the two left commit without it.
	reconfigThrough(t, f2, nil, []string{"1"})
	waitMembership(t, e, nil, f2, l)
	writeThrough(t, e, f2, "removed", ack)

	// It comes back as an observer, synced by the leader of the other kind.
	reconfigThrough(t, f2, []string{serverLine(f1, "observer")}, nil)
	waitMembership(t, e, []*Member{f1}, f2, l)
	writeThrough(t, e, f1, "observer", ack)

	// Promoted: a participant again.
	reconfigThrough(t, f2, []string{serverLine(f1, "participant")}, nil)
	waitMembership(t, e, nil, f1, f2, l)
	checkAliveTolerating(t, tolerate, e.Members...)

	// The leader leaves: it hands the ensemble to a member of the other
	// kind, and is added back as a follower.
	reconfigThrough(t, f2, nil, []string{"3"})
	if next := waitMembership(t, e, nil, f1, f2); next.Kind == l.Kind {
		t.Fatalf("member %d (%s) leads after the %s leader left", next.ID, next.Kind, l.Kind)
	}
	for _, m := range []*Member{f1, f2} {
		writeThrough(t, e, m, "leader-removed", ack)
	}
	reconfigThrough(t, f1, []string{serverLine(l, "participant")}, nil)
	last := waitMembership(t, e, nil, f1, f2, l)
	lines, _ := configLines(last)
	t.Logf("member %d (%s) leads; the configuration: %q", last.ID, last.Kind, lines)
	for _, m := range e.Members {
		writeThrough(t, e, m, "after", ack)
	}
	checkAliveTolerating(t, tolerate, e.Members...)
	checkTrees(t, e, ack)
}

// serverLine is m's line in a dynamic configuration, with role.
func serverLine(m *Member, role string) string {
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d:%s;127.0.0.1:%d", m.ID, m.QuorumPort, m.ElecPort, role, m.ClientPort)
}

// reconfigThrough sends an incremental reconfig as the super user through
// member m. A reconfig that moves the ensemble to a new leader may close
// the connection before its answer (go-zookeeper's ErrConnectionClosed);
// waitMembership then tells whether it took effect.
func reconfigThrough(t *testing.T, m *Member, joining, leaving []string) {
	t.Helper()
	c := dial(t, m)
	defer c.Close()
	if err := c.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatalf("member %d: addauth: %v", m.ID, err)
	}
	if _, err := c.IncrementalReconfig(joining, leaving, -1); err != nil && !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("member %d (%s): reconfig joining %v leaving %v: %v", m.ID, m.Kind, joining, leaving, err)
	}
}

// waitMembership waits until voters and observers are exactly the
// ensemble's configuration: each of them holds the same /zookeeper/config,
// naming them in their roles, one voter leads, the other voters follow,
// the observers observe. It returns the leader.
func waitMembership(t *testing.T, e *Ensemble, observers []*Member, voters ...*Member) *Member {
	t.Helper()
	want := map[int]string{}
	for _, m := range voters {
		want[m.ID] = "participant"
	}
	for _, m := range observers {
		want[m.ID] = "observer"
	}
	var leader *Member
	e.waitFor(electTimeout, "the new membership", func() (bool, string) {
		leader = nil
		var desc []string
		var first []string
		ok := true
		for i, m := range slices.Concat(voters, observers) {
			mode := m.Mode()
			lines, err := configLines(m)
			desc = append(desc, fmt.Sprintf("%d(%s):%q %v %v", m.ID, m.Kind, mode, lines, err))
			if i == 0 {
				first = lines
			}
			switch {
			case err != nil || !slices.Equal(lines, first) || !maps.Equal(roles(lines), want):
				ok = false
			case slices.Contains(observers, m):
				ok = ok && mode == "observer"
			case mode == "leader":
				ok = ok && leader == nil
				leader = m
			default:
				ok = ok && mode == "follower"
			}
		}
		return ok && leader != nil, strings.Join(desc, "; ")
	})
	return leader
}

// roles maps the ids of a configuration's server lines to their roles
// (participant when the line names none).
func roles(lines []string) map[int]string {
	out := map[int]string{}
	for _, l := range lines {
		var id int
		if _, err := fmt.Sscanf(l, "server.%d=", &id); err != nil {
			continue
		}
		addr, _, _ := strings.Cut(l[strings.IndexByte(l, '=')+1:], ";")
		role := "participant"
		if strings.HasSuffix(addr, ":observer") {
			role = "observer"
		}
		out[id] = role
	}
	return out
}

// configLines reads m's /zookeeper/config and returns its server lines,
// sorted.
func configLines(m *Member) ([]string, error) {
	c, ev, err := zk.Connect([]string{m.Addr}, sessionTimeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	deadline := time.After(testhost.Scale(5 * time.Second))
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			return nil, fmt.Errorf("no session (state %v)", c.State())
		}
	}
	data, _, err := c.Get("/zookeeper/config")
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "server.") {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines, nil
}
