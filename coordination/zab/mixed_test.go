package zab

import (
	"fmt"
	"slices"
	"testing"

	"keeper/coordination/zxid"
)

// Mixed ensembles: nodes that announce Apache ZooKeeper's dialect stand in
// for Java servers. What a leader sends each of them is replayed through
// javaLearner, a model of how ZooKeeper 3.8's learner takes the packets of
// one link (docs/zookeeper-protocol.md §10.5); the first packet that
// would make a Java learner exit, or apply a txn out of order, fails the
// test.

// mixedCheck carries the models of a cluster's Java learners.
type mixedCheck struct {
	java   map[PeerID]bool
	models map[PeerID]*javaLearner // by the Java learner; nil between links
	err    error
}

// asJava makes the nodes in java announce DialectZooKeeper (as learners
// in FOLLOWERINFO and OBSERVERINFO, as leaders in LEADERINFO) and checks
// every link a leader holds with one of them.
func asJava(c *cluster, java []PeerID) *mixedCheck {
	mc := &mixedCheck{java: map[PeerID]bool{}, models: map[PeerID]*javaLearner{}}
	if len(java) == 0 {
		return mc
	}
	for _, id := range java {
		mc.java[id] = true
	}
	c.deliverHook = func(m *Message) {
		if !mc.java[m.From] && !mc.java[m.To] {
			return
		}
		switch m.Type {
		case MsgFollowerInfo, MsgObserverInfo, MsgLeaderInfo:
			if mc.java[m.From] {
				m.Dialect = DialectZooKeeper
			}
		}
		if !mc.java[m.To] {
			if m.Type == MsgDisconnected {
				mc.models[m.From] = nil
			}
			return
		}
		j := m.To
		switch {
		case m.Type == MsgDisconnected:
			mc.models[j] = nil
		case m.Type == MsgLeaderInfo:
			// A link's first packet from the leader: what came before on
			// this pair belonged to an older link (links are FIFO).
			mc.models[j] = &javaLearner{leader: m.From, observer: c.nodes[j].observer}
		case mc.models[j] != nil && mc.models[j].leader == m.From:
			mj := mc.models[j]
			mj.step(*m)
			if mj.err != nil && mc.err == nil {
				mc.err = fmt.Errorf("leader %d to Java learner %d: %w\nlink: %v", m.From, j, mj.err, mj.seen)
			}
		}
	}
	return mc
}

// javaLearner models Apache ZooKeeper 3.8's Learner.syncWithLeader, then
// Follower.processPacket with FollowerZooKeeperServer.commit (or
// Observer.processPacket), for the packets of one link.
type javaLearner struct {
	leader   PeerID
	observer bool
	stage    int  // 0 before the sync, 1 syncing, 2 after NEWLEADER, 3 after UPTODATE
	toLog    bool // writeToTxnLog: commits are queued, not applied
	last     zxid.ID
	// notCommitted, committed: the sync's packetsNotCommitted and
	// packetsCommitted; pending: the follower's pendingTxns.
	notCommitted, committed, pending []zxid.ID
	seen                             []string
	err                              error
}

func (j *javaLearner) fail(format string, args ...any) {
	if j.err == nil {
		j.err = fmt.Errorf(format, args...)
	}
}

func (j *javaLearner) step(m Message) {
	if j.err != nil {
		return
	}
	switch m.Type {
	case MsgPing, MsgSync, MsgRevalidate, MsgNotification:
		return
	}
	j.seen = append(j.seen, m.Type.String()+" "+m.Zxid.String())
	if len(j.seen) > 40 {
		j.seen = j.seen[20:]
	}
	switch j.stage {
	case 0:
		switch m.Type {
		case MsgDiff:
			j.toLog = true
		case MsgSnap, MsgTrunc:
			j.toLog = false
		default:
			j.fail("%s before DIFF, TRUNC or SNAP", m.Type)
		}
		j.stage = 1
	case 1, 2:
		j.syncPacket(m)
	default:
		j.broadcastPacket(m)
	}
}

// syncPacket takes a packet between DIFF/TRUNC/SNAP and UPTODATE.
func (j *javaLearner) syncPacket(m Message) {
	switch m.Type {
	case MsgProposal:
		j.queued(m.Zxid)
		j.notCommitted = append(j.notCommitted, m.Zxid)
	case MsgCommit:
		if len(j.notCommitted) == 0 {
			j.fail("COMMIT %s with no proposal in flight (a NullPointerException)", m.Zxid)
			return
		}
		if j.toLog {
			j.committed = append(j.committed, m.Zxid)
			return
		}
		if j.notCommitted[0] != m.Zxid {
			j.fail("committing %s, but the next proposal is %s", m.Zxid, j.notCommitted[0])
			return
		}
		j.notCommitted = j.notCommitted[1:]
	case MsgInform:
		j.queued(m.Zxid)
		if j.toLog {
			j.notCommitted = append(j.notCommitted, m.Zxid)
			j.committed = append(j.committed, m.Zxid)
		}
	case MsgNewLeader:
		if j.stage != 1 {
			j.fail("a second NEWLEADER")
			return
		}
		if !j.observer {
			j.pending = append(j.pending, j.notCommitted...)
			j.notCommitted = nil
		}
		j.toLog = true
		j.stage = 2
	case MsgUpToDate:
		if j.stage != 2 {
			j.fail("UPTODATE before NEWLEADER")
			return
		}
		j.stage = 3
		if j.observer {
			for _, p := range j.notCommitted {
				if len(j.committed) == 0 {
					j.fail("proposal %s without a commit (a NullPointerException)", p)
					return
				}
				if j.committed[0] != p {
					j.fail("committing %s, but the next proposal is %s", j.committed[0], p)
					return
				}
				j.committed = j.committed[1:]
			}
			j.notCommitted = nil
			return
		}
		j.pending = append(j.pending, j.notCommitted...)
		j.notCommitted = nil
		for _, c := range j.committed {
			j.commit(c)
		}
		j.committed = nil
	default:
		j.fail("unexpected %s in the sync", m.Type)
	}
}

// broadcastPacket takes a packet after UPTODATE.
func (j *javaLearner) broadcastPacket(m Message) {
	switch {
	case j.observer && m.Type == MsgInform:
		j.queued(m.Zxid)
	case j.observer:
		j.fail("an observer ignores %s", m.Type)
	case m.Type == MsgProposal:
		j.queued(m.Zxid)
		j.pending = append(j.pending, m.Zxid)
	case m.Type == MsgCommit:
		j.commit(m.Zxid)
	default:
		j.fail("unexpected %s in broadcast", m.Type)
	}
}

// queued checks that txns arrive in zxid order.
func (j *javaLearner) queued(z zxid.ID) {
	if z <= j.last {
		j.fail("txn %s after %s", z, j.last)
	}
	j.last = z
}

// commit is FollowerZooKeeperServer.commit: the COMMIT must name the
// oldest txn logged and not yet committed, or the JVM exits (code 12).
func (j *javaLearner) commit(z zxid.ID) {
	switch {
	case len(j.pending) == 0:
		j.fail("committing %s without seeing the txn", z)
	case j.pending[0] != z:
		j.fail("committing %s but the next pending txn is %s (exit 12)", z, j.pending[0])
	default:
		j.pending = j.pending[1:]
	}
}

// TestSimulationMixed runs the simulation with two of the five voters and
// the observer speaking Apache ZooKeeper's dialect: every link a leader
// holds with them must carry what a Java learner takes, and the ensemble
// must keep Zab's guarantees.
func TestSimulationMixed(t *testing.T) {
	seeds := regressionSeeds
	if *seedFlag != 0 {
		seeds = []uint64{*seedFlag}
	} else if !testing.Short() {
		for i := range uint64(sweepSeeds(100)) {
			seeds = append(seeds, 2000+i)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if err := simulate(t, seed, 4000, 1, 2, 6); err != nil {
				t.Fatalf("%v\nreplay: go test ./coordination/zab -run TestSimulationMixed -seed=%d", err, seed)
			}
		})
	}
}

// The case a trial met: a keeper leader of Java followers committed the
// NEWLEADER zxid and then the first writes cumulatively, and Java's
// followers exited. Each must see one PROPOSAL and one COMMIT per txn.
func TestKeeperLeadsJavaFollowers(t *testing.T) {
	c := newCluster(t, three, []PeerID{4}, nil)
	mixed := asJava(c, []PeerID{1, 2, 4})
	var toJava []string
	hook := c.deliverHook
	c.deliverHook = func(m *Message) {
		hook(m)
		if m.From == 3 && m.To == 1 && (m.Type == MsgCommit || m.Type == MsgProposal) {
			toJava = append(toJava, m.Type.String()+" "+m.Zxid.String())
		}
	}
	// Equal logs: the highest id, the keeper server, leads.
	c.until(500, "stable", func() bool { _, ok := c.stable(); return ok })
	if l, _ := c.stable(); l != 3 {
		t.Fatalf("leader %d, want 3", l)
	}
	zs := c.propose(3, 3)
	c.until(200, "applied", func() bool { return c.appliedUpTo(zs[2]) })
	if mixed.err != nil {
		t.Fatal(mixed.err)
	}
	if !samePackets(toJava, zs) {
		t.Fatalf("to the Java follower: %v", toJava)
	}
}

// samePackets reports whether got holds one PROPOSAL and then one COMMIT
// for each of zs, each kind in order, and no other commit.
func samePackets(got []string, zs []zxid.ID) bool {
	var props, commits []string
	for _, g := range got {
		if len(g) > 6 && g[:6] == "COMMIT" {
			commits = append(commits, g[7:])
		} else {
			props = append(props, g[9:])
		}
	}
	var want []string
	for _, z := range zs {
		want = append(want, z.String())
	}
	return slices.Equal(props, want) && slices.Equal(commits, want)
}

// A keeper learner of a Java leader acks, after NEWLEADER's ACK, each txn
// of the sync the leader had not committed: Java's leader counts no
// proposal as acked by the NEWLEADER ack. A keeper leader needs none.
func TestLearnerAcksSyncProposalsOfJavaLeader(t *testing.T) {
	for _, tc := range []struct {
		dialect Dialect
		want    []zxid.ID
	}{
		{DialectZooKeeper, []zxid.ID{zxid.Make(2, 0), zxid.Make(2, 2), zxid.Make(2, 3)}},
		{DialectKeeper, []zxid.ID{zxid.Make(2, 0)}},
	} {
		t.Run(tc.dialect.String(), func(t *testing.T) {
			n := syncingFollowerOf(t, 0, tc.dialect)
			for _, m := range []Message{
				fromLeader(MsgDiff, zxid.Make(2, 3)),
				fromLeader(MsgProposal, zxid.Make(2, 1)), fromLeader(MsgCommit, zxid.Make(2, 1)),
				fromLeader(MsgProposal, zxid.Make(2, 2)), fromLeader(MsgProposal, zxid.Make(2, 3)),
				fromLeader(MsgNewLeader, zxid.Make(2, 0)),
			} {
				must(t, n.Step(m))
			}
			var acks []zxid.ID
			for _, rd := range drain(n) {
				for _, m := range rd.Messages {
					if m.Type == MsgAck {
						acks = append(acks, m.Zxid)
					}
				}
			}
			if !slices.Equal(acks, tc.want) {
				t.Fatalf("acks %v, want %v", acks, tc.want)
			}
		})
	}
}

// A learner tells its leader it speaks keeper's dialect, and a leader its
// learners: the transport carries it in the protocol version.
func TestNodesAnnounceKeeperDialect(t *testing.T) {
	c := newCluster(t, three, nil, nil)
	seen := map[MsgType]int{}
	c.deliverHook = func(m *Message) {
		switch m.Type {
		case MsgFollowerInfo, MsgLeaderInfo:
			if m.Dialect != DialectKeeper {
				t.Errorf("%s announces %s", m, m.Dialect)
			}
			seen[m.Type]++
		}
	}
	c.until(500, "stable", func() bool { _, ok := c.stable(); return ok })
	if seen[MsgFollowerInfo] == 0 || seen[MsgLeaderInfo] == 0 {
		t.Fatalf("saw %v", seen)
	}
}
