package zab

import (
	"math/rand/v2"
	"slices"
	"testing"

	"keeper/coordination/zxid"
)

// syncingFollower returns node 1 following leader 2, discovery done
// (LEADERINFO for epoch 2 acked), its log 1.1..1.3, its batches so far
// carried out.
func syncingFollower(t *testing.T, floor zxid.ID) *Node {
	t.Helper()
	return syncingFollowerOf(t, floor, DialectKeeper)
}

// syncingFollowerOf is syncingFollower with a leader that announced
// dialect.
func syncingFollowerOf(t *testing.T, floor zxid.ID, dialect Dialect) *Node {
	t.Helper()
	log := entries(1, 1, 2, 3)
	n, err := New(Config{ID: 1, Voters: []PeerID{1, 2, 3}, InitLimitTicks: 10, SyncLimitTicks: 5,
		HardState: HardState{AcceptedEpoch: 1, CurrentEpoch: 1}, Recent: log, LastZxid: log[2].Zxid,
		TruncateFloor: floor, Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	n.decide(Vote{Leader: 2, Zxid: zxid.Make(1, 3), Epoch: 1})
	must(t, n.Step(Message{Type: MsgLeaderInfo, From: 2, To: 1, Zxid: zxid.Make(2, 0), Dialect: dialect}))
	drain(n)
	return n
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// drain carries out every batch, as a caller that persisted it would.
func drain(n *Node) []Ready {
	var out []Ready
	for n.HasReady() {
		rd := n.Ready()
		out = append(out, rd)
		n.Advance(rd)
	}
	return out
}

func fromLeader(typ MsgType, z zxid.ID) Message {
	m := Message{Type: typ, From: 2, To: 1, Zxid: z}
	if typ == MsgProposal {
		m.Data = []byte("txn " + z.String())
	}
	return m
}

// A learner keeps the sync in memory until NEWLEADER, then hands it out in
// one batch with the new currentEpoch and the ACK (ZooKeeper 3.6+).
func TestSyncIsOneBatchAtNewLeader(t *testing.T) {
	n := syncingFollower(t, 0)
	for _, m := range []Message{
		fromLeader(MsgTrunc, zxid.Make(1, 2)),
		fromLeader(MsgProposal, zxid.Make(2, 1)), fromLeader(MsgCommit, zxid.Make(2, 1)),
		fromLeader(MsgProposal, zxid.Make(2, 2)),
	} {
		must(t, n.Step(m))
	}
	if n.HasReady() || n.LastZxid() != zxid.Make(1, 3) {
		t.Fatalf("the sync reached the log before NEWLEADER: last %s, ready %v", n.LastZxid(), n.HasReady())
	}
	must(t, n.Step(fromLeader(MsgNewLeader, zxid.Make(2, 0))))
	rds := drain(n)
	if len(rds) != 1 {
		t.Fatalf("%d batches, want 1", len(rds))
	}
	rd := rds[0]
	if rd.Truncate == nil || *rd.Truncate != zxid.Make(1, 2) {
		t.Fatalf("truncate %v, want 1.2", rd.Truncate)
	}
	if got := zxids(rd.Entries); !slices.Equal(got, []zxid.ID{zxid.Make(2, 1), zxid.Make(2, 2)}) {
		t.Fatalf("entries %v", got)
	}
	if got := zxids(rd.Committed); !slices.Equal(got, []zxid.ID{zxid.Make(2, 1)}) {
		t.Fatalf("committed %v", got)
	}
	if rd.State == nil || rd.State.CurrentEpoch != 2 {
		t.Fatalf("state %+v, want currentEpoch 2", rd.State)
	}
	if k := len(rd.Messages); k != 1 || rd.Messages[0].Type != MsgAck || rd.Messages[0].Zxid != zxid.Make(2, 0) {
		t.Fatalf("messages %v, want the ACK of NEWLEADER alone", rd.Messages)
	}
}

// A sync abandoned before NEWLEADER leaves the node as it was.
func TestAbandonedSyncLeavesNoTrace(t *testing.T) {
	n := syncingFollower(t, 0)
	must(t, n.Step(fromLeader(MsgTrunc, zxid.Make(1, 1))))
	must(t, n.Step(fromLeader(MsgProposal, zxid.Make(2, 1))))
	must(t, n.Step(Message{Type: MsgDisconnected, From: 2, To: 1}))
	for _, rd := range drain(n) {
		if rd.Truncate != nil || rd.InstallSnapshot || len(rd.Entries) > 0 || len(rd.Committed) > 0 ||
			(rd.State != nil && rd.State.CurrentEpoch != 1) {
			t.Fatalf("an abandoned sync left work: %+v", rd)
		}
	}
	if n.Role() != Looking || n.LastZxid() != zxid.Make(1, 3) || n.Epoch() != 1 {
		t.Fatalf("after the abandoned sync: %s, last %s, epoch %d", n.Role(), n.LastZxid(), n.Epoch())
	}
}

// A TRUNC below the truncation floor is refused: the learner leaves and
// asks the next leader for a snapshot by reporting no last zxid.
func TestTruncBelowFloorAsksForSnapshot(t *testing.T) {
	n := syncingFollower(t, zxid.Make(1, 3))
	if err := n.Step(fromLeader(MsgTrunc, zxid.Make(1, 2))); err == nil {
		t.Fatal("a TRUNC below the floor was taken")
	}
	if n.Role() != Looking {
		t.Fatalf("role %s after refusing the TRUNC", n.Role())
	}
	n.decide(Vote{Leader: 2, Zxid: zxid.Make(1, 3), Epoch: 1})
	must(t, n.Step(Message{Type: MsgLeaderInfo, From: 2, To: 1, Zxid: zxid.Make(3, 0), Dialect: DialectKeeper}))
	var acks []Message
	for _, rd := range drain(n) {
		for _, m := range rd.Messages {
			if m.Type == MsgAckEpoch || m.Type == MsgFollowerInfo {
				acks = append(acks, m)
			}
		}
	}
	if len(acks) != 2 || acks[0].LastZxid != zxid.None || acks[1].Zxid != zxid.None {
		t.Fatalf("discovery sent %v, want FOLLOWERINFO and ACKEPOCH with last zxid -1", acks)
	}
}

// Messages left over from an earlier link to the same leader, arriving
// before the new sync began, change nothing: a PROPOSAL would leave a gap
// in the log, an UPTODATE would make the node serve unsynced, and echoing
// a PING of a peer that follows us would keep both out of service.
func TestStaleMessagesBeforeSync(t *testing.T) {
	n := syncingFollower(t, 0)
	n.learn.stage = stageInfo // waiting for LEADERINFO on a new link
	for _, m := range []Message{
		fromLeader(MsgProposal, zxid.Make(1, 9)), fromLeader(MsgCommit, zxid.Make(1, 9)),
		fromLeader(MsgNewLeader, zxid.Make(2, 0)),
	} {
		if err := n.Step(m); err == nil {
			t.Fatalf("%s taken before the sync", m.Type)
		}
	}
	if err := n.Step(Message{Type: MsgUpToDate, From: 2, To: 1}); err == nil {
		t.Fatal("UPTODATE taken before the sync")
	}
	must(t, n.Step(fromLeader(MsgPing, zxid.Make(1, 9))))
	for _, rd := range drain(n) {
		if len(rd.Entries) > 0 || len(rd.Messages) > 0 {
			t.Fatalf("stale messages left work: %+v", rd)
		}
	}
	if n.Serving() || n.LastZxid() != zxid.Make(1, 3) {
		t.Fatalf("serving %v, last %s", n.Serving(), n.LastZxid())
	}
}

func zxids(es []Entry) []zxid.ID {
	var out []zxid.ID
	for _, e := range es {
		out = append(out, e.Zxid)
	}
	return out
}

// A learner whose ACKEPOCH shows txns the new leader never had is
// disconnected, as ZooKeeper's leader ends its handler; the leader does
// not step down for it and establishes its epoch with the others. (A
// leader that stepped down livelocked in simulation seed 219 of
// TestReconfigSimulation: the server ahead had been removed from the
// voters, so no election could ever pick it.)
func TestLearnerAheadAtAckEpochIsDropped(t *testing.T) {
	n, err := New(Config{ID: 1, Voters: []PeerID{1, 2, 3}, InitLimitTicks: 5, SyncLimitTicks: 5,
		Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	drain(n)
	n.decide(Vote{Leader: 1, Epoch: 0})
	must(t, n.Step(Message{Type: MsgFollowerInfo, From: 2, To: 1, Epoch: 0, Dialect: DialectKeeper}))
	must(t, n.Step(Message{Type: MsgFollowerInfo, From: 3, To: 1, Epoch: 0, Dialect: DialectKeeper}))
	drain(n)
	must(t, n.Step(Message{Type: MsgAckEpoch, From: 3, To: 1, Epoch: 0, Zxid: zxid.Make(0, 5)}))
	var dropped bool
	for _, rd := range drain(n) {
		dropped = dropped || slices.Contains(rd.Disconnect, 3)
	}
	if !dropped || n.Role() == Looking {
		t.Fatalf("learner ahead: disconnected %v, leader's role %s; want it disconnected and the leader leading", dropped, n.Role())
	}
	must(t, n.Step(Message{Type: MsgAckEpoch, From: 2, To: 1, Epoch: 0, Zxid: zxid.None}))
	var newLeader bool
	for _, rd := range drain(n) {
		for _, m := range append(rd.Messages, rd.Early...) {
			newLeader = newLeader || (m.Type == MsgNewLeader && m.To == 2)
		}
	}
	if n.Role() != Leading || n.Epoch() != 1 || !newLeader {
		t.Fatalf("after a quorum's ACKEPOCH: %s in epoch %d, NEWLEADER to 2 sent %v", n.Role(), n.Epoch(), newLeader)
	}
}
