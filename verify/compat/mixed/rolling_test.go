package mixed

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var (
	rollSeed   = flag.Uint64("roll.seed", 0, "seed of the leader kills in TestRollingMigrationLeaderKilled (0: random, logged)")
	rollRounds = flag.Int("roll.rounds", 1, "migrations to keeper and back per test (make chaos runs more)")
)

// writer creates /roll/w-<n> one after another through a session with
// every member's address (the client moves to another member when its
// member stops), records what was acknowledged and the longest time
// between two acknowledged writes.
type writer struct {
	c    *zk.Conn
	stop chan struct{}
	done chan struct{}
	gate sync.Mutex // held for each write; checkTrees holds it between writes

	mu      sync.Mutex
	acked   []string
	unknown int // writes whose outcome the client could not learn
	lastAck time.Time
	maxGap  time.Duration // since the last stepGap
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
		if err == nil {
			w.acked = append(w.acked, p)
			w.maxGap = max(w.maxGap, now.Sub(w.lastAck))
			w.lastAck = now
		} else {
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

// stepGap returns the longest time without an acknowledged write since the
// last call, counting the time since the last acknowledged write.
func (w *writer) stepGap() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	g := max(w.maxGap, time.Since(w.lastAck))
	w.maxGap = 0
	return g
}

// checkTrees compares the members' trees with the writer paused (its
// acknowledged writes so far included), then lets it go on; the pause
// does not count as a gap. Subtrees other writers still change are
// skipped.
func (w *writer) checkTrees(t *testing.T, e *Ensemble, ack acked, skip ...string) {
	t.Helper()
	w.gate.Lock()
	w.mu.Lock()
	all := maps.Clone(ack)
	for _, p := range w.acked {
		all[p] = []byte(p)
	}
	w.mu.Unlock()
	checkTrees(t, e, all, skip...)
	w.mu.Lock()
	w.lastAck = time.Now()
	w.mu.Unlock()
	w.gate.Unlock()
}

// finish stops the writer and returns what it saw.
func (w *writer) finish() (acked []string, unknown int) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked), w.unknown
}

// migration is one rolling migration's state: the ensemble, its writers,
// what was acknowledged, and, with kills, the seeded choice of when to
// kill the leader.
type migration struct {
	t     *testing.T
	e     *Ensemble
	w     *writer
	ack   acked
	kills *rand.Rand // nil: no leader is killed
	steps []string   // one line per step, for the closing log
}

// roll replaces each member in order by one of kind, as an operator does:
// stop it, start the other server on the same id, zoo.cfg and data
// directory, wait until the ensemble serves again with it, write through
// it, and go on to the next. Writes go on all the time. With kills, the
// leader of the moment (when it is not the member being replaced) is
// SIGKILLed at a random moment of the step, up to 2 s after the member
// stopped — while the ensemble runs without it, while it starts or while
// it syncs — and restarted as it was once the step's member is back.
func (mg *migration) roll(tag string, kind Kind, order ...*Member) {
	t, e, w := mg.t, mg.e, mg.w
	t.Helper()
	for _, m := range order {
		w.stepGap()
		before := e.WaitServing()
		leaders := []Kind{before.Kind}
		var killed chan *Member
		if mg.kills != nil && before != m {
			killed = make(chan *Member, 1)
			delay := time.Duration(mg.kills.Int64N(int64(2 * time.Second)))
			go func() {
				// A fault injected at a random moment, not a wait for a condition.
				time.Sleep(delay)
				e.Kill(before)
				killed <- before
			}()
		}
		e.Stop(m)
		if killed == nil {
			w.progress(t, e, 20) // the ensemble serves without m
		}
		e.Switch(m, kind)
		e.Start(m)
		what := fmt.Sprintf("m%d %s→%s", m.ID, otherKind(kind), kind)
		if killed != nil {
			k := <-killed
			e.Start(k)
			what += fmt.Sprintf(", leader m%d (%s) killed", k.ID, k.Kind)
		}
		leader := e.WaitServing()
		leaders = append(leaders, leader.Kind)
		w.progress(t, e, 20)
		writeThrough(t, e, m, fmt.Sprintf("%s-m%d", tag, m.ID), mg.ack)
		// Every sync of this step was with one of its leaders; the step
		// lost its leader when it replaced or killed it.
		var tolerate []string
		if slices.Contains(leaders, ZooKeeper) {
			tolerate = append(tolerate, javaLeaderBug, javaShutdownBug, javaRevalidateBug)
		} else if before == m || killed != nil {
			tolerate = append(tolerate, javaShutdownBug, javaRevalidateBug)
		}
		checkAliveTolerating(t, tolerate, e.Members...)
		mg.steps = append(mg.steps, fmt.Sprintf("%s: longest gap %v", what, w.stepGap().Round(time.Millisecond)))
	}
}

func otherKind(k Kind) Kind {
	if k == Keeper {
		return ZooKeeper
	}
	return Keeper
}

// followersThenLeader returns the members, the leader last: the order in
// which an operator rolls an ensemble, so that it elects once.
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
// and data directory. A go-zookeeper client and a kazoo client write
// through the whole migration; nothing either was told was written is
// lost, and every member ends with the same tree.
func TestRollingMigration(t *testing.T) {
	t.Parallel()
	testRollingMigration(t, nil)
}

// TestRollingMigrationLeaderKilled is TestRollingMigration with the leader
// SIGKILLed at a random moment of every step.
func TestRollingMigrationLeaderKilled(t *testing.T) {
	t.Parallel()
	seed := *rollSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (-roll.seed=%d repeats the kills' moments)", seed, seed)
	testRollingMigration(t, rand.New(rand.NewPCG(seed, seed)))
}

func testRollingMigration(t *testing.T, kills *rand.Rand) {
	e := NewEnsemble(t, ZooKeeper, ZooKeeper, ZooKeeper)
	for _, m := range e.Members {
		e.Start(m)
	}
	e.WaitServing()
	mg := &migration{t: t, e: e, ack: acked{}, kills: kills}
	mg.w = startWriter(t, e)
	kz := startKazooWriter(t, e, "/kazoo/w")
	regs := startRegisters(t, e)
	mg.w.progress(t, e, 20)
	for _, m := range e.Members {
		writeThrough(t, e, m, "zookeeper", mg.ack)
	}

	for round := 1; round <= *rollRounds; round++ {
		mg.roll(fmt.Sprintf("to-keeper-%d", round), Keeper, followersThenLeader(e)...)
		for _, m := range e.Members {
			if m.Kind != Keeper {
				t.Fatalf("member %d is still %s", m.ID, m.Kind)
			}
		}
		mg.w.checkTrees(t, e, mg.ack, "/kazoo", "/registers")
		mg.roll(fmt.Sprintf("back-%d", round), ZooKeeper, followersThenLeader(e)...)
		mg.w.checkTrees(t, e, mg.ack, "/kazoo", "/registers")
	}

	gzAcked, gzUnknown := mg.w.finish()
	kzAcked, kzUnknown := kz.finish(t)
	regs.check(t)
	for _, p := range slices.Concat(gzAcked, kzAcked) {
		mg.ack[p] = []byte(p)
	}
	checkAlive(t, e, e.Members...)
	checkTrees(t, e, mg.ack)
	t.Logf("acknowledged writes: go-zookeeper %d (%d unknown), kazoo %d (%d unknown); lost 0; per step:\n%s",
		len(gzAcked), gzUnknown, len(kzAcked), kzUnknown, strings.Join(mg.steps, "\n"))
}
