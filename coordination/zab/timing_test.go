package zab

import (
	"slices"
	"testing"
	"time"
)

// TimingFor keeps zoo.cfg's limits in milliseconds, pings every half
// tickTime and waits ZooKeeper's 200 ms finalizeWait, at about 50 ms a tick.
func TestTimingFor(t *testing.T) {
	for _, tc := range []struct {
		tickTimeMs         int64
		initLimit, syncLim int
		want               Timing
	}{
		{2000, 10, 5, Timing{Tick: 50 * time.Millisecond, InitLimitTicks: 400, SyncLimitTicks: 200,
			PingTicks: 20, FinalizeTicks: 4, ElectionRetryTicks: 4, ElectionMaxRetryTicks: 128}},
		{100, 50, 10, Timing{Tick: 50 * time.Millisecond, InitLimitTicks: 100, SyncLimitTicks: 20,
			PingTicks: 1, FinalizeTicks: 4, ElectionRetryTicks: 4, ElectionMaxRetryTicks: 128}},
		{3000, 10, 5, Timing{Tick: 50 * time.Millisecond, InitLimitTicks: 600, SyncLimitTicks: 300,
			PingTicks: 30, FinalizeTicks: 4, ElectionRetryTicks: 4, ElectionMaxRetryTicks: 128}},
		{150, 10, 5, Timing{Tick: 75 * time.Millisecond, InitLimitTicks: 20, SyncLimitTicks: 10,
			PingTicks: 1, FinalizeTicks: 3, ElectionRetryTicks: 3, ElectionMaxRetryTicks: 96}},
		{1, 10, 5, Timing{Tick: 500 * time.Microsecond, InitLimitTicks: 20, SyncLimitTicks: 10,
			PingTicks: 1, FinalizeTicks: 400, ElectionRetryTicks: 400, ElectionMaxRetryTicks: 12800}},
	} {
		if got := TimingFor(tc.tickTimeMs, tc.initLimit, tc.syncLim); got != tc.want {
			t.Errorf("TimingFor(%d, %d, %d) = %+v, want %+v", tc.tickTimeMs, tc.initLimit, tc.syncLim, got, tc.want)
		}
	}
}

// The followers of a leader whose link broke (its process died) elect a
// new one without waiting FinalizeTicks: every voter that can still vote
// has voted, so no better vote can come.
func TestLostLeaderElectedWithoutFinalizeWait(t *testing.T) {
	c := newCluster(t, three, nil, func(_ PeerID, cfg *Config) { cfg.FinalizeTicks = 50 })
	c.until(5000, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	zs := c.propose(l, 3)
	c.until(200, "applied", func() bool { return c.appliedUpTo(zs[2]) })
	before := c.ticks
	c.crash(l)
	c.until(1000, "new leader", func() bool { nl, ok := c.stable(); return ok && nl != l })
	if n := c.ticks - before; n != 0 {
		t.Fatalf("the new leader serves after %d ticks, want 0 (no finalize wait)", n)
	}
	c.checkPrefix()
}

// A voter that is neither heard from nor known gone may still send a
// better vote: with one of five down before the leader dies, the three
// left wait FinalizeTicks before they decide, as Apache ZooKeeper waits
// finalizeWait.
func TestElectionWaitsForVoterNotKnownGone(t *testing.T) {
	five := []PeerID{1, 2, 3, 4, 5}
	const finalize = 7
	c := newCluster(t, five, nil, func(_ PeerID, cfg *Config) { cfg.FinalizeTicks = finalize })
	c.until(5000, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	other := five[0]
	if other == l {
		other = five[1]
	}
	c.crash(other)
	c.until(200, "queue drained", func() bool { return len(c.queue) == 0 })
	before := c.ticks
	c.crash(l)
	c.until(5000, "new leader", func() bool { nl, ok := c.stable(); return ok && nl != l })
	if n := c.ticks - before; n < finalize {
		t.Fatalf("the new leader serves after %d ticks, want at least the %d of the finalize wait", n, finalize)
	}
}

// A leader pings its learners every PingTicks, and only then.
func TestLeaderPingsEveryPingTicks(t *testing.T) {
	const every = 3
	c := newCluster(t, three, nil, func(_ PeerID, cfg *Config) { cfg.PingTicks = every; cfg.SyncLimitTicks = 10 })
	c.until(5000, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	pings := 0
	traceFilter = func(m Message) bool {
		if m.Type == MsgPing && m.From == l {
			pings++
		}
		return true
	}
	t.Cleanup(func() { traceFilter = nil })
	before := c.ticks
	c.until(100000, "30 ticks", func() bool { return c.ticks-before >= 30 })
	c.handle(l)
	if want := 2 * 30 / every; pings < want-2 || pings > want+2 {
		t.Fatalf("%d pings from the leader to two learners in 30 ticks, want about %d", pings, want)
	}
	if _, ok := c.stable(); !ok {
		t.Fatalf("not stable after 30 ticks: %s", c.roles())
	}
}

// A serving learner's own PING (PingLeader) leaves with Early: it promises
// nothing about the batch on its way to disk.
func TestPingLeaderIsEarly(t *testing.T) {
	c := newCluster(t, three, nil, nil)
	c.until(5000, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	f := three[0]
	if f == l {
		f = three[1]
	}
	c.until(200, "queue drained", func() bool { return len(c.queue) == 0 })
	c.handle(f)
	n := c.nodes[f]
	if err := n.PingLeader(); err != nil {
		t.Fatal(err)
	}
	early := n.TakeEarly()
	if len(early) != 1 || early[0].Type != MsgPing || early[0].To != l {
		t.Fatalf("early = %v, want one PING to %d", early, l)
	}
	if err := c.nodes[l].PingLeader(); err != ErrNotLeader {
		t.Fatalf("the leader's PingLeader: %v, want ErrNotLeader", err)
	}
}

// A looking node that hears a worse vote from a peer in its round answers
// with its own at once: the peer may have missed it (it was still
// following when the vote came), and would otherwise wait for the next
// resend (ElectionRetryTicks) to hear it.
func TestLookingPeerToldOfBetterVoteAtOnce(t *testing.T) {
	c := newCluster(t, three, nil, func(_ PeerID, cfg *Config) {
		cfg.FinalizeTicks, cfg.ElectionRetryTicks, cfg.SyncLimitTicks = 50, 50, 50
	})
	c.until(5000, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	var fs []PeerID
	for _, id := range three {
		if id != l {
			fs = append(fs, id)
		}
	}
	lo, hi := fs[0], fs[1] // equal logs: the higher id has the better vote
	c.until(200, "queue drained", func() bool { return len(c.queue) == 0 })
	before := c.ticks
	c.crash(l)
	// lo hears of the crash only after hi's first notification reached it.
	c.queue = slices.DeleteFunc(c.queue, func(m Message) bool { return m.Type == MsgDisconnected && m.To == lo })
	c.until(100, "hi's notification delivered to lo", func() bool {
		m := c.lastStepped
		return m.Type == MsgNotification && m.From == hi && m.To == lo
	})
	c.queue = append(c.queue, Message{Type: MsgDisconnected, From: l, To: lo})
	c.until(1000, "new leader", func() bool { nl, ok := c.stable(); return ok && nl == hi })
	if n := c.ticks - before; n != 0 {
		t.Fatalf("the new leader serves after %d ticks, want 0 (no wait for a resend)", n)
	}
}
