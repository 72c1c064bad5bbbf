package server

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/internal/testhost"
)

// testClock is a fake Config.Clock: its monotonic reading runs at rate
// times real time plus a leap the test sets, its time of day is the real
// one plus a step the test sets. It counts its readings, so that a test
// can wait for the loop to have looked at it.
type testClock struct {
	mu     sync.Mutex
	origin time.Time
	rate   float64
	leap   time.Duration
	step   time.Duration
	reads  int
}

func newTestClock(rate float64) *testClock { return &testClock{origin: time.Now(), rate: rate} }

func (c *testClock) read() (time.Time, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	now := time.Now()
	return now.Add(c.step), time.Duration(float64(now.Sub(c.origin))*c.rate) + c.leap
}

func (c *testClock) set(f func(c *testClock)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

func (c *testClock) readings() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// withClock runs a server with fast sessions on c.
func withClock(c *testClock) func(*Config) {
	return func(cfg *Config) {
		fastSessions(cfg)
		cfg.Clock = c.read
	}
}

// silentSession opens a session with an ephemeral node on s that sends
// nothing after that: it lives exactly its timeout on the server's clock.
// It also returns when the create, the session's last request, was sent:
// the server's expiry counts from a moment no earlier than that.
func silentSession(t *testing.T, s *Server, timeoutMs int32) (*rawClient, time.Time) {
	t.Helper()
	c := rawDial(t, s.Addr().String())
	resp, err := c.connect(newSessionRequest(timeoutMs))
	if err != nil || resp.TimeoutMs != timeoutMs {
		t.Fatalf("connect: %+v %v", resp, err)
	}
	sent := time.Now()
	c.mustCreate("/silent", zkproto.FlagEphemeral)
	return c, sent
}

// TestFastClockExpiresEarly runs the server's clock 16× fast: a silent
// session with an 8 s timeout expires after 500 ms of real time. The
// verdict does not depend on the machine's speed: the session cannot
// expire before 500 ms have passed since its create was sent (its last
// activity), and a server that expired sessions by real time could not
// close it before 8 s; a loaded machine only moves the close within those
// 7.5 s.
func TestFastClockExpiresEarly(t *testing.T) {
	const timeoutMs, rate = 8000, 16
	s := startServer(t, withClock(newTestClock(rate)))
	c, start := silentSession(t, s, timeoutMs)
	c.expectClosed()
	elapsed := time.Since(start)
	if floor := timeoutMs * time.Millisecond / rate; elapsed < floor {
		t.Errorf("an %d ms session on a %d× clock expired %v after its last request, before %v", timeoutMs, rate, elapsed, floor)
	}
	if elapsed >= timeoutMs*time.Millisecond {
		t.Errorf("an %d ms session on a %d× clock expired %v after its last request: no sooner than by real time", timeoutMs, rate, elapsed)
	}
	observer := rawSession(t, s.Addr().String())
	if code := observer.code(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/silent"}); code != zkproto.CodeNoNode {
		t.Errorf("ephemeral of the expired session: %v", code)
	}
}

// TestSlowClockExpiresLate runs the server's clock at a quarter of real
// time: a silent session with a 200 ms timeout lives 800 ms or more after
// its last request (a lower bound, which no machine's speed can break).
func TestSlowClockExpiresLate(t *testing.T) {
	s := startServer(t, withClock(newTestClock(0.25)))
	c, start := silentSession(t, s, 200)
	c.expectClosed()
	if elapsed := time.Since(start); elapsed < 800*time.Millisecond {
		t.Errorf("a 200 ms session on a 0.25× clock expired after %v of real time, want 800 ms or more", elapsed)
	}
}

// TestWallStepKeepsSessions stops the server's monotonic clock and steps
// its time of day an hour ahead: txn times follow the step, sessions do
// not expire; then a leap of the monotonic clock past the timeout expires
// the silent one at once.
func TestWallStepKeepsSessions(t *testing.T) {
	clock := newTestClock(0)
	s := startServer(t, withClock(clock))
	c, _ := silentSession(t, s, 200)
	observer := rawSession(t, s.Addr().String())

	clock.set(func(c *testClock) { c.step = time.Hour })
	before := time.Now()
	observer.mustCreate("/stamped", 0)
	st := observer.mustOK(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/stamped"}).(*zkproto.ExistsResponse).Stat
	if d := time.Duration(st.Mtime-before.UnixMilli()) * time.Millisecond; d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("mtime %d is %v off the real time; the clock's time of day is an hour ahead", st.Mtime, d)
	}
	// Let the loop poll the clock many times (each poll may tick): the
	// session must outlive them all, its monotonic clock standing still.
	seen := clock.readings()
	eventually(t, waitTimeout, func() bool { return clock.readings() >= seen+40 }, "the loop to read the clock")
	if code := observer.code(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/silent"}); code != zkproto.CodeOK {
		t.Fatalf("the silent session's ephemeral: %v; a stopped monotonic clock must expire nothing", code)
	}

	clock.set(func(c *testClock) { c.leap = time.Second })
	c.expectClosed()
	if code := observer.code(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/silent"}); code != zkproto.CodeNoNode {
		t.Errorf("ephemeral of the expired session: %v", code)
	}
}

// TestNowHoldsMonoWhenClockGoesBack: a clock whose monotonic reading goes
// back does not take the core's monotonic clock with it.
func TestNowHoldsMonoWhenClockGoesBack(t *testing.T) {
	readings := []time.Duration{time.Second, 3 * time.Second, 2 * time.Second, 2500 * time.Millisecond, 4 * time.Second}
	want := []int64{1000, 3000, 3000, 3000, 4000}
	i := 0
	s, err := New(Config{ClientAddr: "127.0.0.1:0", Core: zkcore.DefaultConfig(), Clock: func() (time.Time, time.Duration) {
		i++
		return time.UnixMilli(int64(i)), readings[i-1]
	}})
	if err != nil {
		t.Fatal(err)
	}
	for j, w := range want {
		if now := s.now(); now.MonoMs != w || now.WallMs != int64(j+1) {
			t.Errorf("reading %d (%v): now %+v, want MonoMs %d WallMs %d", j, readings[j], now, w, j+1)
		}
	}
}

func TestClockTicksDue(t *testing.T) {
	ticks := clockTicks{periodMs: 100}
	for i, tc := range []struct {
		monoMs int64
		due    bool
	}{
		{0, false},    // the first poll only sets the first tick, at 100
		{30, false},   //
		{100, true},   // next at 200
		{199, false},  //
		{230, true},   // late: next still at 300, the cadence kept
		{300, true},   // next at 400
		{2000, true},  // a leap: one tick, next at 2100, the skipped ones dropped
		{2050, false}, //
		{2100, true},  //
		{2100, false}, // at most one tick per poll
	} {
		if got := ticks.due(tc.monoMs); got != tc.due {
			t.Errorf("poll %d at %d ms: due %v, want %v (next %d)", i, tc.monoMs, got, tc.due, ticks.nextMs)
		}
	}
}

// TestEnsembleOnSkewedClocks runs an ensemble whose members' clocks run
// at 3×, 1× and 0.5× (their Zab ticks with them): it still elects a
// leader and commits to every member.
func TestEnsembleOnSkewedClocks(t *testing.T) {
	rates := map[zab.PeerID]float64{1: 3, 2: 1, 3: 0.5}
	servers := startEnsembleWith(t, 3, func(id zab.PeerID, cfg *Config) { cfg.Clock = newTestClock(rates[id]).read })
	eventually(t, testhost.Scale(20*time.Second), func() bool {
		roles := map[string]int{}
		for _, s := range servers {
			roles[s.quorumRole()]++
		}
		return roles["leader"] == 1 && roles["follower"] == 2
	}, "a leader and two followers")
	// The member whose clock runs at 3× passes its syncLimit three times
	// as fast: on a loaded machine it may drop its leader for a moment and
	// close its clients (CI saw a handshake end in EOF right after the
	// roles settled), so each step is retried until a deadline.
	w := zkDial(t, servers[0].Addr().String())
	eventually(t, testhost.Scale(20*time.Second), func() bool {
		_, err := w.Create("/skewed", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil || errors.Is(err, zk.ErrNodeExists)
	}, "/skewed created through server 1")
	for i, s := range servers {
		r := zkDial(t, s.Addr().String())
		eventually(t, testhost.Scale(20*time.Second), func() bool {
			if _, err := r.Sync("/"); err != nil {
				return false
			}
			ok, _, err := r.Exists("/skewed")
			return err == nil && ok
		}, "server %d has /skewed after a sync", i+1)
	}
}
