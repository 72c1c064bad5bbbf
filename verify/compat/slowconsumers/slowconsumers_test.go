package slowconsumers

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/internal/keeperbin"
	"keeper/internal/testhost"
	"keeper/verify/chaos"
	"keeper/verify/compat/zkreal"
	"keeper/verify/slowconsumer"
)

// The servers' shape, the healthy load and the bounds keeper is held to;
// the attack (slowconsumer.ZooKeeperPlan) and the bounds are the chaos
// scenario's (verify/chaos/slow_consumers.go).
const (
	// tickMs and maxSessionMs give both servers sessions of at most 4 s;
	// keeper's write timeout is maxSessionTimeout, so the round sees keeper
	// close its stuck clients. ZooKeeper has no write timeout.
	tickMs       = 1000
	maxSessionMs = 4000
	// healthyClients each run reads and writes on their own key, one at a
	// time, every healthyThink.
	healthyClients = 6
	healthyThink   = 2 * time.Millisecond
	warmup         = time.Second
	cooldown       = time.Second
	ruokEvery      = 200 * time.Millisecond
	// ruokBound, healthyP99Bound and rssCapKB: see the chaos scenario.
	ruokBound       = 2 * time.Second
	healthyP99Bound = time.Second
	rssCapKB        = 1 << 20
)

// servingTimeout bounds the check that a server serves a new session
// after the attack.
var servingTimeout = testhost.Scale(10 * time.Second)

// outcome is what one server went through.
type outcome struct {
	server   string
	healthy  slowconsumer.Latencies
	ruok     slowconsumer.Probe
	attack   slowconsumer.Result
	peakKB   int64
	rssErr   error
	serving  error // nil: a new session created and read a node after the attack
	setupErr error
}

func (o *outcome) line() string {
	serving := "yes"
	if o.serving != nil {
		serving = "no"
	}
	rss := strconv.FormatInt(o.peakKB>>10, 10) + "MB"
	if o.rssErr != nil {
		rss = "unknown"
	}
	if o.setupErr != nil {
		return fmt.Sprintf("slowconsumers: server=%s setup_failed=%q", o.server, o.setupErr)
	}
	return fmt.Sprintf("slowconsumers: server=%s healthy_p50=%s healthy_p99=%s healthy_ops=%d healthy_failed=%d "+
		"ruok_p50=%s ruok_p99=%s ruok_max=%s ruok_failed=%d peak_rss=%s serving=%s attacks=%s closed=%s",
		o.server, slowconsumer.FormatDuration(o.healthy.Quantile(0.5)), slowconsumer.FormatDuration(o.healthy.Quantile(0.99)),
		o.healthy.Count(), o.healthy.Failed(),
		slowconsumer.FormatDuration(o.ruok.Times.Quantile(0.5)), slowconsumer.FormatDuration(o.ruok.Times.Quantile(0.99)),
		slowconsumer.FormatDuration(o.ruok.Times.Max()), o.ruok.Times.Failed(), rss, serving, o.attack.Opened, o.attack.Closed)
}

// TestSideBySide attacks Apache ZooKeeper, then keeper, and judges keeper.
func TestSideBySide(t *testing.T) {
	zks := zkreal.Start(t, zkreal.Options{TickTime: tickMs * time.Millisecond,
		ExtraConfig: map[string]string{"maxSessionTimeout": strconv.Itoa(maxSessionMs)}})
	zkOut := run(t, "zookeeper", zks.Addr(), zks.Pid())
	zks.Stop()
	t.Log(zkOut.line())
	if zkOut.serving != nil {
		t.Logf("zookeeper after the attack: %v", zkOut.serving)
	}

	cl := startKeeper(t)
	s := cl.Servers[0]
	kOut := run(t, "keeper", s.Addr, s.Proc().Pid())
	t.Log(kOut.line())
	if !s.Running() {
		t.Fatalf("keeper exited under the attack (%v):\n%s", s.Proc().ExitErr(), chaos.LogTail(s.LogPath(), 30))
	}
	judge(t, kOut)
}

// judge holds keeper to its bounds.
func judge(t *testing.T, o *outcome) {
	t.Helper()
	if o.setupErr != nil {
		t.Fatalf("%s: %v", o.server, o.setupErr)
	}
	if o.serving != nil {
		t.Errorf("%s does not serve a new session after the attack: %v", o.server, o.serving)
	}
	for _, f := range o.ruok.Failures() {
		t.Errorf("ruok failed: %s", f)
	}
	if m := o.ruok.Times.Max(); m > ruokBound && m != slowconsumer.Never {
		t.Errorf("the slowest ruok took %s, over %v", slowconsumer.FormatDuration(m), ruokBound)
	}
	if p99 := o.healthy.Quantile(0.99); p99 > healthyP99Bound {
		t.Errorf("healthy p99 is %s (%d of %d failed), over %v", slowconsumer.FormatDuration(p99), o.healthy.Failed(),
			o.healthy.Count(), healthyP99Bound)
	}
	switch {
	case o.rssErr != nil:
		t.Errorf("peak RSS: %v", o.rssErr)
	case o.peakKB > rssCapKB:
		t.Errorf("peak RSS %d MiB, over the cap of %d MiB", o.peakKB>>10, rssCapKB>>10)
	}
}

// startKeeper runs a standalone keeper (a release build) shaped as
// zkreal's ZooKeeper.
func startKeeper(t *testing.T) *chaos.Cluster {
	t.Helper()
	bin := keeperbin.ForTest(t)
	cl, err := chaos.NewCluster(chaos.Config{Bin: bin, Dir: filepath.Join(t.TempDir(), "keeper"), Servers: 1,
		TickMs: tickMs, MaxSessionTimeoutMs: maxSessionMs, LogLevel: "warn"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("keeper's log:\n%s", chaos.LogTail(cl.Servers[0].LogPath(), 40))
		}
		cl.Close()
	})
	if err := cl.Start(cl.Servers[0]); err != nil {
		t.Fatal(err)
	}
	return cl
}

// run creates the node the attackers read and the healthy clients' keys,
// then runs the healthy load and the ruok probe through a warm-up, one
// attack round and a cool-down, and checks that the server still serves.
func run(t *testing.T, name, addr string, pid int) *outcome {
	t.Helper()
	o := &outcome{server: name, ruok: slowconsumer.Probe{Name: name, Addr: addr}}
	if err := setup(addr); err != nil {
		o.setupErr = err
		return o
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		o.ruok.Run(ctx, ruokEvery, 2*ruokBound)
	}()
	for i := range healthyClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			healthy(ctx, addr, i, &o.healthy)
		}()
	}
	pace(warmup)
	o.attack = slowconsumer.Round(ctx, addr, slowconsumer.ZooKeeperPlan(maxSessionMs*time.Millisecond))
	pace(cooldown)
	stop()
	wg.Wait()
	o.peakKB, o.rssErr = slowconsumer.PeakRSSKB(pid)
	o.serving = serves(addr)
	return o
}

// pace lets the load run for d: the warm-up and the cool-down are part of
// the measured window. It waits for no condition.
func pace(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}

// setup creates the attackers' node and the healthy clients' keys.
func setup(addr string) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, n := range []slowconsumer.Node{slowconsumer.LargeNode, slowconsumer.SmallNode} {
		if _, err := c.Create(n.Path, make([]byte, n.Bytes), 0, zk.WorldACL(zk.PermAll)); err != nil {
			return fmt.Errorf("create %s: %w", n.Path, err)
		}
	}
	for i := range healthyClients {
		if _, err := c.Create(key(i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			return fmt.Errorf("create %s: %w", key(i), err)
		}
	}
	return nil
}

func key(i int) string { return "/healthy-" + strconv.Itoa(i) }

// quiet drops go-zookeeper's log lines.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// dial opens a session and waits until it is established.
func dial(addr string) (*zk.Conn, error) {
	c, events, err := zk.Connect([]string{addr}, maxSessionMs*time.Millisecond, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	deadline := time.After(servingTimeout)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c, nil
			}
		case <-deadline:
			c.Close()
			return nil, errors.New("no session within " + servingTimeout.String())
		}
	}
}

// healthy reads and writes key(i), one request at a time, timing each,
// until ctx ends; a request that fails counts as failed.
func healthy(ctx context.Context, addr string, i int, lat *slowconsumer.Latencies) {
	c, err := dial(addr)
	if err != nil {
		lat.Fail()
		return
	}
	defer c.Close()
	tick := time.NewTicker(healthyThink)
	defer tick.Stop()
	for n := 0; ; n++ {
		start := time.Now()
		var err error
		if n%2 == 0 {
			_, _, err = c.Get(key(i))
		} else {
			_, err = c.Set(key(i), []byte(strconv.Itoa(n)), -1)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			lat.Fail()
		} else {
			lat.Add(time.Since(start))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// serves checks that a new session can write and read a node.
func serves(addr string) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Create("/after-the-attack", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		return err
	}
	_, _, err = c.Get("/after-the-attack")
	return err
}
