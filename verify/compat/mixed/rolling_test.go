package mixed

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// writer creates /roll/w-<n> one after another through a session with
// every member's address (the client moves to another member when its
// member stops), records what was acknowledged and the longest time
// between two acknowledged writes.
type writer struct {
	c    *zk.Conn
	stop chan struct{}
	done chan struct{}
	gate sync.Mutex // held for each write; pause holds it between writes

	mu      sync.Mutex
	acked   []string
	unknown int // writes whose outcome the client could not learn
	lastAck time.Time
	maxGap  time.Duration
}

// writePace spaces the writer's creates, so that a run of a few minutes
// leaves a tree that can be compared member by member in seconds.
const writePace = 20 * time.Millisecond

func startWriter(t *testing.T, e *Ensemble) *writer {
	t.Helper()
	var addrs []string
	for _, m := range e.Members {
		addrs = append(addrs, m.Addr)
	}
	c, _, err := zk.Connect(addrs, sessionTimeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if _, err := c.Create("/roll", nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create /roll: %v", err)
	}
	w := &writer{c: c, stop: make(chan struct{}), done: make(chan struct{}), lastAck: time.Now()}
	go w.run()
	return w
}

func (w *writer) run() {
	defer close(w.done)
	tick := time.NewTicker(writePace)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		p := fmt.Sprintf("/roll/w-%06d", n)
		w.gate.Lock()
		_, err := w.c.Create(p, []byte(p), 0, openACL)
		w.gate.Unlock()
		now := time.Now()
		w.mu.Lock()
		switch {
		case err == nil:
			w.acked = append(w.acked, p)
			w.maxGap = max(w.maxGap, now.Sub(w.lastAck))
			w.lastAck = now
		case errors.Is(err, zk.ErrNodeExists):
			// A retry of a create whose first attempt was applied.
		default:
			w.unknown++
		}
		w.mu.Unlock()
	}
}

// progress waits until the writer has had n more writes acknowledged,
// so that every phase of a migration is tested under writes.
func (w *writer) progress(t *testing.T, e *Ensemble, n int) {
	t.Helper()
	w.mu.Lock()
	want := len(w.acked) + n
	w.mu.Unlock()
	e.waitFor(electTimeout, fmt.Sprintf("%d more acknowledged writes", n), func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.acked) >= want, fmt.Sprintf("%d acknowledged, %d unknown", len(w.acked), w.unknown)
	})
}

// checkTrees compares the members' trees with the writer paused (its
// acknowledged writes so far included), then lets it go on; the pause
// does not count as a gap.
func (w *writer) checkTrees(t *testing.T, e *Ensemble, ack acked) {
	t.Helper()
	w.gate.Lock()
	w.mu.Lock()
	all := maps.Clone(ack)
	for _, p := range w.acked {
		all[p] = []byte(p)
	}
	w.mu.Unlock()
	checkTrees(t, e, all)
	w.mu.Lock()
	w.lastAck = time.Now()
	w.mu.Unlock()
	w.gate.Unlock()
}

// finish stops the writer and returns what it saw.
func (w *writer) finish() (acked []string, unknown int, maxGap time.Duration) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked), w.unknown, w.maxGap
}

// roll replaces each member in order by one of kind, as an operator does:
// stop it, start the other server on the same id, zoo.cfg and data
// directory, wait until the ensemble serves again with it, write through
// it, and go on to the next. Writes go on all the time.
func roll(t *testing.T, e *Ensemble, w *writer, ack acked, tag string, kind Kind, order ...*Member) {
	t.Helper()
	for _, m := range order {
		e.Stop(m)
		w.progress(t, e, 20) // the ensemble serves without m
		e.Switch(m, kind)
		e.Start(m)
		leader := e.WaitServing()
		w.progress(t, e, 20)
		writeThrough(t, e, m, fmt.Sprintf("%s-m%d", tag, m.ID), ack)
		// Every sync of this step was with this leader: m's, and those
		// of members that lost the leader when m was it.
		checkAliveUnder(t, leader.Kind, e.Members...)
	}
}

// followersThenLeader returns the running members, the leader last: the
// order in which an operator rolls an ensemble, so that it elects once.
func followersThenLeader(e *Ensemble) []*Member {
	leader := e.WaitServing()
	var order []*Member
	for _, m := range e.Members {
		if m != leader {
			order = append(order, m)
		}
	}
	return append(order, leader)
}

// An Apache ZooKeeper 3.8 ensemble becomes a keeper ensemble one server at
// a time and goes back the same way, with no downtime and no export: each
// server is stopped and the other program started on its myid, zoo.cfg
// and data directory. A client writes through the whole migration;
// nothing it was told was written is lost, and every member ends with the
// same tree.
func TestRollingMigration(t *testing.T) {
	e := NewEnsemble(t, ZooKeeper, ZooKeeper, ZooKeeper)
	for _, m := range e.Members {
		e.Start(m)
	}
	e.WaitServing()
	ack := acked{}
	w := startWriter(t, e)
	w.progress(t, e, 20)
	for _, m := range e.Members {
		writeThrough(t, e, m, "zookeeper", ack)
	}

	start := time.Now()
	roll(t, e, w, ack, "to-keeper", Keeper, followersThenLeader(e)...)
	toKeeper := time.Since(start)
	for _, m := range e.Members {
		if m.Kind != Keeper {
			t.Fatalf("member %d is still %s", m.ID, m.Kind)
		}
	}
	w.checkTrees(t, e, ack)

	start = time.Now()
	roll(t, e, w, ack, "back", ZooKeeper, followersThenLeader(e)...)
	back := time.Since(start)

	acked, unknown, gap := w.finish()
	for _, p := range acked {
		ack[p] = []byte(p)
	}
	checkAlive(t, e, e.Members...)
	checkTrees(t, e, ack)
	t.Logf("migration to keeper %v, back %v; %d writes acknowledged, %d unknown; longest gap between acknowledged writes %v",
		toKeeper.Round(time.Millisecond), back.Round(time.Millisecond), len(acked), unknown, gap.Round(time.Millisecond))
}
