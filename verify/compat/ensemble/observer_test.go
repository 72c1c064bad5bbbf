package ensemble

import (
	"fmt"
	"testing"
)

// writesPerObserver is how many creates each observer takes per phase.
const writesPerObserver = 200

// TestObservers runs three voters and two observers. The observers report
// Mode: observer, take writes from their own sessions (which they forward
// to the leader), follow a new leader after the leader is killed, and end
// up, with every other member, holding every acknowledged write under one
// digest.
func TestObservers(t *testing.T) {
	e := NewEnsemble(t, Options{Voters: 3, Observers: 2})
	leader := e.WaitServing(electTimeout)
	for _, m := range e.Members {
		s, err := m.Srvr()
		if err != nil {
			t.Fatal(err)
		}
		voterMode := s.Mode == "leader" || s.Mode == "follower"
		if m.Observer && s.Mode != "observer" || !m.Observer && !voterMode {
			t.Fatalf("member %d (%s) reports Mode: %q", m.ID, roleName(m.Member), s.Mode)
		}
	}
	setup := dialZK(t, []string{e.Member(4).Addr})
	ensurePath(t, setup, "/obs")
	setup.Close()

	acked := map[string][]string{}
	writeThroughObservers(t, e, "before", acked)
	checkReplicated(t, e, acked)

	e.Kill(leader)
	next := e.WaitLeader(electTimeout, leader)
	e.WaitServing(electTimeout)
	t.Logf("leader %d killed; member %d leads; the observers serve again", leader.ID, next.ID)
	writeThroughObservers(t, e, "after", acked)

	e.Restart(leader)
	e.WaitServing(electTimeout)
	checkReplicated(t, e, acked)
}

// writeThroughObservers creates writesPerObserver nodes through each
// observer, with a session connected to that observer only, under
// /obs/<phase>-m<id>; every create must succeed.
func writeThroughObservers(t *testing.T, e *Ensemble, phase string, acked map[string][]string) {
	t.Helper()
	for _, m := range e.Members {
		if !m.Observer {
			continue
		}
		c := dialZK(t, []string{m.Addr})
		parent := fmt.Sprintf("/obs/%s-m%d", phase, m.ID)
		ensurePath(t, c, parent)
		for i := range writesPerObserver {
			name := fmt.Sprintf("n%04d", i)
			if _, err := c.Create(parent+"/"+name, []byte(name), 0, openACL); err != nil {
				t.Fatalf("create %s/%s through observer %d: %v", parent, name, m.ID, err)
			}
			acked[parent] = append(acked[parent], name)
		}
		if got := c.Server(); got != m.Addr {
			t.Fatalf("the session moved from observer %d to %s", m.ID, got)
		}
		c.Close()
	}
}
