package mixed

import "testing"

// Observers of both kinds in one mixed ensemble: an Apache ZooKeeper
// observer and a keeper observer follow a keeper leader, then the
// ZooKeeper leader elected when it is killed, then both again with the
// keeper server back as a follower. Writes of every kind go through every
// member, observers included (they forward writes as followers do), and
// every member ends with the same tree.
//
// Every member runs its admin server, and in both phases the answers that
// depend on the ensemble are checked against each other and, role by role,
// keeper's against ZooKeeper's (admin_test.go): the keeper leader and the
// ZooKeeper one, followers and observers of both kinds.
func TestMixedObservers(t *testing.T) {
	t.Parallel()
	e := NewEnsemble(t, ZooKeeper, ZooKeeper, Keeper, ZooKeeper, Keeper)
	zk1, zk2, kp, zkObs, kpObs := e.Member(1), e.Member(2), e.Member(3), e.Member(4), e.Member(5)
	e.MakeObservers(zkObs, kpObs)
	e.EnableAdmin()
	ack := acked{}

	// Keeper leads: with equal (empty) logs the highest voter id wins,
	// and the quorum forms of 2 and 3 before 1 starts.
	e.Start(kp)
	e.Start(zk2)
	if l := e.WaitServing(); l != kp {
		t.Fatalf("leader is member %d (%s), want the keeper server", l.ID, l.Kind)
	}
	for _, m := range []*Member{zk1, zkObs, kpObs} {
		e.Start(m)
	}
	e.WaitServing()
	for _, m := range e.Members {
		writeThrough(t, e, m, "keeper-leads", ack)
	}
	checkAlive(t, e, e.Members...)
	checkTrees(t, e, ack)
	answers := collectAdmin(t, e)
	checkAgreement(t, e, answers)

	// ZooKeeper leads: kill the keeper leader; the Java voters elect 2 and
	// both observers follow it.
	e.Kill(kp)
	if l := e.WaitServing(); l != zk2 {
		t.Fatalf("leader is member %d (%s), want member 2", l.ID, l.Kind)
	}
	for _, m := range []*Member{zk1, zk2, zkObs, kpObs} {
		writeThrough(t, e, m, "zookeeper-leads", ack)
	}
	e.Start(kp)
	if l := e.WaitServing(); l != zk2 {
		t.Fatalf("leader is member %d (%s), want member 2", l.ID, l.Kind)
	}
	for _, m := range e.Members {
		writeThrough(t, e, m, "keeper-follows", ack)
	}
	// The Java learners lost their keeper leader and synced again from
	// the Java one.
	checkAliveTolerating(t, []string{javaShutdownBug, javaRevalidateBug, javaLeaderBug}, e.Members...)
	checkTrees(t, e, ack)
	last := collectAdmin(t, e)
	checkAgreement(t, e, last)
	compareAdminShapes(t, append(answers, last...))
	// TestMixedEnsemble compares a leader's and a follower's mntr keys;
	// the observers' are compared here.
	compareMntr(t, "observer", mntrKeys(t, zkObs), mntrKeys(t, kpObs))
}
