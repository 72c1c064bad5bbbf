package ensemble

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/zkclient"
	"keeper/internal/testhost"
)

var killsFlag = flag.Int("kills", 0, "leader kills in TestLeaderKillUnderLoad (default 10, 3 with -short)")

// Load shape: loadWriters sessions each create znodes back to back, one
// at a time, so an acknowledgement's time is precise to one write's
// latency. Before each kill the test waits for loadPerRound new
// acknowledgements, so every epoch carries real load.
const (
	loadWriters  = 8
	loadPerRound = 500
)

// resumeTimeout bounds the wait for writes to resume after a kill.
var resumeTimeout = testhost.Scale(60 * time.Second)

// TestLeaderKillUnderLoad kills the leader of a three-server ensemble with
// SIGKILL while go-zookeeper sessions, each given all three addresses,
// create unique znodes continuously. After each kill it measures the
// unavailability window (from the last acknowledgement before the kill to
// the first acknowledgement of a write issued after it, from any
// go-zookeeper client), the same window for a probe session of keeper's
// own client that redials without back-off, and the time until a new
// leader reports itself; then it restarts the killed member and waits for
// it to rejoin before the next kill. At the end every member must hold
// every acknowledged create and all members must report the same zxid
// and digest through the hash four-letter word.
//
// The ensemble runs with tickTime 2000, initLimit 10 and syncLimit 5.
// When a follower loses its leader it drops its clients; a member that
// lost its leader holds their new handshakes until the election ends, so
// go-zookeeper does not reach the second it waits after a full round of
// refusals. The probe's window is the ensemble's own.
func TestLeaderKillUnderLoad(t *testing.T) {
	kills := 10
	if testing.Short() {
		kills = 3
	}
	if *killsFlag > 0 {
		kills = *killsFlag
	}
	// ZooKeeper's sample timing: a failover must not lean on a short tick.
	e := NewEnsemble(t, Options{TickMs: 2000, InitLimit: 10, SyncLimit: 5})
	setup := dialZK(t, e.Addrs())
	ensurePath(t, setup, "/load")
	for i := range loadWriters {
		ensurePath(t, setup, fmt.Sprintf("/load/w%d", i))
	}
	setup.Close()

	r := &killRun{e: e, acks: newAckLog(), probeAcks: newAckLog()}
	r.load = startLoad(t, e, r.acks)
	r.probe = startProbe(t, e, r.probeAcks)
	for k := range kills {
		r.killLeader(t, k+1)
	}
	e.WaitServing(electTimeout)
	r.waitFlowing("writes flowing after the last restart")
	r.load.halt()
	r.probe.halt()
	t.Logf("write errors seen by clients (unacknowledged, not checked): %s", r.load.errorSummary())

	all := r.acks.snapshot()
	all["/probe"] = r.probeAcks.snapshot()["/probe"]
	checkReplicated(t, e, all)
	for _, d := range [][]time.Duration{r.windows, r.probeWindows, r.elections} {
		slices.Sort(d)
	}
	t.Logf("new leader serving (srvr, polled every %v) after a kill: median %v, worst %v",
		pollInterval, median(r.elections).Round(time.Millisecond), worst(r.elections).Round(time.Millisecond))
	t.Logf("probe (redials any member at once, no back-off): unavailable for median %v, worst %v; %d probe writes acked",
		median(r.probeWindows).Round(time.Millisecond), worst(r.probeWindows).Round(time.Millisecond), r.probeAcks.count())
	t.Logf("ensemble: kills=%d failover_median=%v failover_worst=%v acked=%d lost=0",
		kills, median(r.windows).Round(time.Millisecond), worst(r.windows).Round(time.Millisecond),
		r.acks.count()+r.probeAcks.count())
}

// killRun is the state of TestLeaderKillUnderLoad across its kills.
type killRun struct {
	e               *Ensemble
	acks, probeAcks *ackLog
	load            *load
	probe           *probe
	windows         []time.Duration // go-zookeeper clients' unavailability
	probeWindows    []time.Duration // the probe's
	elections       []time.Duration // kill to a new leader in srvr
}

// waitFlowing waits for loadPerRound new acknowledgements.
func (r *killRun) waitFlowing(what string) {
	base := r.acks.count()
	r.e.waitFor(resumeTimeout, what, func() (bool, string) {
		n := r.acks.count()
		return n >= base+loadPerRound, fmt.Sprintf("%d new acks; errors %v", n-base, r.load.errorSummary())
	})
}

// killLeader waits for the whole ensemble to serve under load, kills the
// leader, measures the failover, and restarts the killed member.
func (r *killRun) killLeader(t *testing.T, k int) {
	e := r.e
	leader := e.WaitServing(electTimeout)
	r.waitFlowing("writes flowing")
	killStart := time.Now()
	e.Kill(leader)
	killed := time.Now()
	next := e.WaitLeader(electTimeout, leader)
	elected := time.Since(killed)
	window := r.resumedAfter(r.acks, killStart, killed, "a write issued after the kill to be acknowledged",
		func() string { _, desc := e.modes(); return desc + "; errors " + r.load.errorSummary() })
	probeWindow := r.resumedAfter(r.probeAcks, killStart, killed, "a probe write issued after the kill to be acknowledged",
		r.probe.lastError)
	r.windows = append(r.windows, window)
	r.probeWindows = append(r.probeWindows, probeWindow)
	r.elections = append(r.elections, elected)
	t.Logf("kill %d: leader %d killed; member %d leads after %v; writes resumed after %v (probe: %v) (%d acks so far)",
		k, leader.ID, next.ID, elected.Round(time.Millisecond), window.Round(time.Millisecond),
		probeWindow.Round(time.Millisecond), r.acks.count())
	e.Restart(leader)
}

// resumedAfter waits for the acknowledgement of a write issued after
// killed and returns the unavailability window: from the last
// acknowledgement before killStart to that one.
func (r *killRun) resumedAfter(acks *ackLog, killStart, killed time.Time, what string, status func() string) time.Duration {
	var resumed time.Time
	r.e.waitFor(resumeTimeout, what, func() (bool, string) {
		var ok bool
		resumed, ok = acks.firstIssuedAfter(killed)
		return ok, status()
	})
	return resumed.Sub(acks.lastAckedBefore(killStart))
}

// probe is one session of keeper's own client that measures how long the
// ensemble itself takes writes: unlike go-zookeeper, which waits a second
// after every member it tried has refused it (zk.Conn.connect), the probe
// redials the next member at once, so its window is the ensemble's
// failover rather than the client library's back-off. It creates
// /probe/p<seq>, one at a time.
type probe struct {
	stop, done chan struct{}
	mu         sync.Mutex
	lastErr    error
}

// probeDialTimeout and probeOpTimeout bound a dial and a create, so a
// member that hangs costs the probe little.
const (
	probeDialTimeout = 500 * time.Millisecond
	probeOpTimeout   = 2 * time.Second
)

func startProbe(t *testing.T, e *Ensemble, acks *ackLog) *probe {
	setup := dialZK(t, e.Addrs())
	ensurePath(t, setup, "/probe")
	setup.Close()
	p := &probe{stop: make(chan struct{}), done: make(chan struct{})}
	go p.run(e.Addrs(), acks)
	t.Cleanup(p.halt)
	return p
}

func (p *probe) run(addrs []string, acks *ackLog) {
	defer close(p.done)
	var c *zkclient.Conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	next := 0
	for seq := 0; ; seq++ {
		select {
		case <-p.stop:
			return
		default:
		}
		var err error
		if c == nil {
			ctx, cancel := context.WithTimeout(context.Background(), probeDialTimeout)
			c, err = zkclient.Dial(ctx, addrs[next%len(addrs)], zkclient.Options{SessionTimeout: clientSessionTimeout})
			cancel()
			next++
		}
		if err == nil {
			name := fmt.Sprintf("p%07d", seq)
			issued := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), probeOpTimeout)
			_, _, err = c.Create(ctx, "/probe/"+name, nil, zkclient.CreateOptions{})
			cancel()
			if err == nil {
				acks.add("/probe", name, issued, time.Now())
				continue
			}
			c.Close()
			c = nil
		}
		p.mu.Lock()
		p.lastErr = err
		p.mu.Unlock()
		select {
		case <-p.stop:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

func (p *probe) lastError() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("probe's last error: %v", p.lastErr)
}

// halt stops the probe and waits for it; safe to call twice.
func (p *probe) halt() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// worst of sorted durations.
func worst(d []time.Duration) time.Duration { return d[len(d)-1] }

// median of sorted durations.
func median(d []time.Duration) time.Duration {
	n := len(d)
	if n%2 == 1 {
		return d[n/2]
	}
	return (d[n/2-1] + d[n/2]) / 2
}

func newAckLog() *ackLog { return &ackLog{byParent: map[string][]string{}} }

// ackLog records acknowledged creates. Safe for concurrent use.
type ackLog struct {
	mu       sync.Mutex
	byParent map[string][]string // parent -> acknowledged child names
	acks     []ackTimes
}

// ackTimes is when an acknowledged write was issued and acknowledged.
type ackTimes struct{ issued, acked time.Time }

func (a *ackLog) add(parent, child string, issued, acked time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byParent[parent] = append(a.byParent[parent], child)
	a.acks = append(a.acks, ackTimes{issued, acked})
}

func (a *ackLog) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acks)
}

// lastAckedBefore returns the latest acknowledgement at or before t.
func (a *ackLog) lastAckedBefore(t time.Time) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	var last time.Time
	for _, x := range a.acks {
		if !x.acked.After(t) && x.acked.After(last) {
			last = x.acked
		}
	}
	return last
}

// firstIssuedAfter returns the earliest acknowledgement of a write issued
// after t, if there is one yet.
func (a *ackLog) firstIssuedAfter(t time.Time) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var first time.Time
	for _, x := range a.acks[max(0, len(a.acks)-10*loadPerRound):] {
		if x.issued.After(t) && (first.IsZero() || x.acked.Before(first)) {
			first = x.acked
		}
	}
	return first, !first.IsZero()
}

// snapshot copies the acknowledged creates.
func (a *ackLog) snapshot() map[string][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string][]string, len(a.byParent))
	for p, kids := range a.byParent {
		out[p] = slices.Clone(kids)
	}
	return out
}

// load is the writing sessions.
type load struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	errors map[string]int // error text -> count
}

// startLoad starts loadWriters sessions; writer i creates
// /load/w<i>/n<seq> with data "<i>-<seq>".
func startLoad(t *testing.T, e *Ensemble, acks *ackLog) *load {
	w := &load{stop: make(chan struct{}), errors: map[string]int{}}
	for i := range loadWriters {
		c := dialZK(t, e.Addrs())
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer c.Close()
			w.run(c, i, acks)
		}()
	}
	t.Cleanup(w.halt)
	return w
}

func (w *load) run(c *zk.Conn, i int, acks *ackLog) {
	parent := fmt.Sprintf("/load/w%d", i)
	for seq := 0; ; seq++ {
		select {
		case <-w.stop:
			return
		default:
		}
		child := fmt.Sprintf("n%07d", seq)
		issued := time.Now()
		_, err := c.Create(parent+"/"+child, []byte(fmt.Sprintf("%d-%d", i, seq)), 0, openACL)
		if err == nil {
			acks.add(parent, child, issued, time.Now())
			continue
		}
		w.mu.Lock()
		w.errors[err.Error()]++
		w.mu.Unlock()
		// Back off a little: while no server is reachable a failed
		// create returns at once.
		select {
		case <-w.stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// halt stops the writers and waits for them; safe to call twice.
func (w *load) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

func (w *load) errorSummary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for msg, n := range w.errors {
		parts = append(parts, fmt.Sprintf("%q×%d", msg, n))
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}
