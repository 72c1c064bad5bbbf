package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"keeper/coordination/zxid"
)

// Scenario is one fault experiment: an ensemble, workloads, a nemesis
// that injects faults for a while, and the checks.
type Scenario struct {
	ID   int
	Name string
	// Cluster shapes the ensemble; Execute fills Bin, Dir and Seed.
	Cluster Config
	// Duration is the fault phase's default length.
	Duration time.Duration
	// SessionTimeout is what clients ask for; ReqTimeout bounds requests.
	SessionTimeout, ReqTimeout time.Duration
	Workloads                  []Workload
	// Nemesis injects faults until ctx ends; it should leave the servers
	// running and the network healed, though Execute heals after it
	// anyway.
	Nemesis func(ctx context.Context, r *Run)
	// LinearPrefix is the register paths porcupine checks ("" for none).
	LinearPrefix string
	// Check runs the scenario's own checks.
	Check func(ctx context.Context, r *Run, c *Committed)
	// StrictSyncReads makes a stale sync-then-read (CheckSyncReads) a
	// violation rather than a figure. ZooKeeper allows one only when a
	// deposed leader, cut off and not yet aware of it, answers the sync
	// (ZOOKEEPER-1675); a scenario whose faults never leave such a
	// leader running sets it.
	StrictSyncReads bool
}

// Options control Execute.
type Options struct {
	// Bin is the keeper binary.
	Bin string
	// Seed drives every random choice of the harness (not the servers').
	Seed uint64
	// Duration overrides the scenario's fault phase.
	Duration time.Duration
	// Root is where the run's directory goes (os.TempDir() by default).
	// It is removed after a clean run and kept, with the history, the
	// report and the servers' data and logs, after a failed one.
	Root string
	// Logf receives progress lines (nil: discarded).
	Logf func(format string, args ...any)
}

// Phases of a run around the fault phase.
const (
	warmup           = 2 * time.Second
	recovery         = 2 * time.Second
	healTimeout      = 60 * time.Second
	convergeTimeout  = 60 * time.Second
	digestInterval   = 300 * time.Millisecond
	defaultReqTimout = time.Second
	defaultSession   = 4 * time.Second
	minWarmupOpsPerS = 20
)

// Run is one execution of a scenario: what nemeses and workloads use.
type Run struct {
	Scenario *Scenario
	Cluster  *Cluster
	History  *History
	Report   *Report
	Seed     uint64
	Dir      string

	logf    func(format string, args ...any)
	mu      sync.Mutex
	rng     *rand.Rand
	clients []*Client
	samples []DigestSample // taken by nemeses, checked with the sampler's
}

// Sample asks s for its (zxid, digest) now and keeps it for the digest
// check: a nemesis calls it when a server it restarted starts serving.
func (r *Run) Sample(s *Server) {
	if h, err := s.Hash(); err == nil {
		r.mu.Lock()
		r.samples = append(r.samples, DigestSample{Server: s.Name, Hash: h})
		r.mu.Unlock()
	}
}

// Logf logs a progress line with the time into the run.
func (r *Run) Logf(format string, args ...any) {
	r.logf("[%6.2fs] %s", time.Duration(r.History.Now()).Seconds(), fmt.Sprintf(format, args...))
}

// Fault records and logs an injected fault.
func (r *Run) Fault(format string, args ...any) {
	desc := fmt.Sprintf(format, args...)
	r.Report.Fault(desc)
	r.Logf("fault: %s", desc)
}

// IntN returns a random int in [0, n) from the run's seeded source.
func (r *Run) IntN(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.IntN(n)
}

// Duration returns a random duration in [lo, hi).
func (r *Run) Duration(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.IntN(int(hi-lo)))
}

// ClientRand returns client i's own random source, derived from the seed.
func (r *Run) ClientRand(i int) *rand.Rand {
	return rand.New(rand.NewPCG(r.Seed, uint64(i)))
}

// NewClient makes a client with the scenario's timeouts and keeps it, so
// that the run can close it at the end.
func (r *Run) NewClient(name string, home *Server) *Client {
	c := NewClient(r.Cluster, r.History, name, home, r.Scenario.SessionTimeout, r.Scenario.ReqTimeout)
	r.mu.Lock()
	r.clients = append(r.clients, c)
	r.mu.Unlock()
	return c
}

// Clients runs n clients named c<base>... c<base+n-1>, pinned to the
// servers in turn, each in its own goroutine, and waits for them.
func (r *Run) Clients(ctx context.Context, n, base int, fn func(ctx context.Context, c *Client, rng *rand.Rand)) {
	var wg sync.WaitGroup
	for i := range n {
		c := r.NewClient("c"+strconv.Itoa(base+i), r.Cluster.Servers[i%len(r.Cluster.Servers)])
		rng := r.ClientRand(base + i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(ctx, c, rng)
		}()
	}
	wg.Wait()
}

// ClientsNamed returns the run's clients whose names start with prefix.
func (r *Run) ClientsNamed(prefix string) []*Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Client
	for _, c := range r.clients {
		if strings.HasPrefix(c.Name, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// Execute runs a scenario and returns its report and the run's
// directory, which exists only if the run failed. An error means the
// harness could not run or judge the scenario.
func Execute(ctx context.Context, sc *Scenario, o Options) (*Report, string, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if sc.SessionTimeout == 0 {
		sc.SessionTimeout = defaultSession
	}
	if sc.ReqTimeout == 0 {
		sc.ReqTimeout = defaultReqTimout
	}
	duration := sc.Duration
	if o.Duration > 0 {
		duration = o.Duration
	}
	root := o.Root
	if root == "" {
		root = os.TempDir()
	}
	dir, err := os.MkdirTemp(root, fmt.Sprintf("keeper-chaos-%d-", sc.ID))
	if err != nil {
		return nil, "", err
	}
	r := &Run{Scenario: sc, History: NewHistory(), Report: NewReport(sc.ID), Seed: o.Seed, Dir: dir,
		logf: o.Logf, rng: rand.New(rand.NewPCG(o.Seed, uint64(sc.ID)))}
	err = r.execute(ctx, duration, o)
	if err != nil {
		r.Report.Violate("harness", "%v", err)
	}
	if r.Report.Violations() == 0 {
		os.RemoveAll(dir)
		return r.Report, "", nil
	}
	r.saveArtifacts()
	return r.Report, dir, err
}

// execute is Execute's body; the cluster lives exactly as long as it.
func (r *Run) execute(ctx context.Context, duration time.Duration, o Options) error {
	sc := r.Scenario
	cfg := sc.Cluster
	cfg.Bin, cfg.Dir, cfg.Seed = o.Bin, filepath.Join(r.Dir, "cluster"), o.Seed
	cl, err := NewCluster(cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	r.Cluster = cl
	if _, err := cl.StartAll(healTimeout); err != nil {
		return err
	}
	for _, w := range sc.Workloads {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := w.Setup(sctx, r)
		cancel()
		if err != nil {
			return fmt.Errorf("chaos: %s setup: %w", w.Name(), err)
		}
	}
	stopSampling := r.sampleDigests(ctx)
	faultFrom, faultTo, err := r.drive(ctx, duration)
	if err != nil {
		stopSampling()
		return err
	}
	t0 := time.Now()
	r.closeClients(ctx)
	r.waitEphemeralsGone(ctx)
	h, err := cl.WaitConverged(convergeTimeout)
	r.Logf("clients closed and servers converged in %v", time.Since(t0).Round(time.Millisecond))
	digests := stopSampling()
	if err != nil {
		r.Report.Violate("convergence", "%v", err)
		return nil
	}
	r.Logf("converged at zxid %#x", h.Zxid)
	dirs := map[string]string{}
	for _, s := range cl.Running() {
		dirs[s.Name] = s.DataDir
	}
	t0 = time.Now()
	c, err := ReadCommitted(dirs, zxid.ID(h.Zxid))
	if err != nil {
		return err
	}
	r.Logf("read and replayed %d txns in %v", len(c.Txns), time.Since(t0).Round(time.Millisecond))
	if c.Leftovers > 0 {
		r.Logf("left out %d txns a single server logged and a quorum skipped (a cut-off leader's uncommitted tail)", c.Leftovers)
	}
	r.mu.Lock()
	all := append(*digests, r.samples...)
	r.mu.Unlock()
	r.check(ctx, c, h, all)
	r.Report.Availability(r.History, faultFrom, faultTo)
	return nil
}

// drive runs the workloads: a warm-up, the nemesis for duration, the
// heal, a recovery period. It returns the fault window in history time.
func (r *Run) drive(ctx context.Context, duration time.Duration) (int64, int64, error) {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for _, w := range r.Scenario.Workloads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Run(wctx, r)
		}()
	}
	sleepCtx(ctx, warmup)
	faultFrom := r.History.Now()
	if n := len(r.History.Ops()); float64(n) < minWarmupOpsPerS*warmup.Seconds() {
		r.Report.Violate("load", "only %d ops in the %v warm-up: a quiet history proves nothing", n, warmup)
	}
	nctx, cancel := context.WithTimeout(ctx, duration)
	if r.Scenario.Nemesis != nil {
		r.Scenario.Nemesis(nctx, r)
	}
	<-nctx.Done()
	cancel()
	if err := r.Heal(); err != nil {
		r.Report.Violate("liveness", "after the faults: %v", err)
	}
	faultTo := r.History.Now()
	sleepCtx(ctx, recovery)
	stop()
	wg.Wait()
	return faultFrom, faultTo, ctx.Err()
}

// Heal lifts every network rule, resumes paused servers, starts stopped
// ones and waits until all serve under one leader.
func (r *Run) Heal() error {
	r.Cluster.Net.Heal()
	var errs []error
	for _, s := range r.Cluster.Servers {
		r.Cluster.Resume(s)
		if !s.Running() {
			if err := r.Cluster.Start(s); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if _, err := r.Cluster.WaitServing(healTimeout); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// closeClients resumes and closes every client's session.
func (r *Run) closeClients(ctx context.Context) {
	r.mu.Lock()
	clients := r.clients
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Resume()
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if c.SessionID() != 0 && connect(cctx, c, nil) {
				_ = c.Close(cctx)
			}
			c.Abandon()
			c.Finish()
		}()
	}
	wg.Wait()
}

// waitEphemeralsGone waits until no server holds an ephemeral: every
// session was closed or has expired. What remains after the longest
// session timeout (and a margin) has outlived its session.
func (r *Run) waitEphemeralsGone(ctx context.Context) {
	limit := r.Scenario.SessionTimeout*2 + 10*time.Second
	var last string
	err := poll(limit, "every ephemeral gone", func() (bool, string, error) {
		var desc []string
		all := true
		for _, s := range r.Cluster.Running() {
			m, err := s.Mntr()
			n := m["ephemerals_count"]
			if err != nil || n != "0" {
				all = false
			}
			desc = append(desc, fmt.Sprintf("%s:%s", s.Name, n))
		}
		last = strings.Join(desc, " ")
		return all, last, ctx.Err()
	})
	if err != nil {
		r.Report.Violate("ephemerals", "ephemerals outlived every session: %s (%v)", last, err)
	}
}

// sampleDigests polls the servers' digests until the returned stop is
// called; stop returns the samples.
func (r *Run) sampleDigests(ctx context.Context) func() *[]DigestSample {
	sctx, cancel := context.WithCancel(ctx)
	out := new([]DigestSample)
	done := make(chan struct{})
	go func() {
		*out = SampleDigests(sctx, r.Cluster, digestInterval)
		close(done)
	}()
	var once sync.Once
	return func() *[]DigestSample {
		once.Do(func() { cancel(); <-done })
		return out
	}
}

// saveArtifacts writes the history and the report next to the servers'
// data and logs.
func (r *Run) saveArtifacts() {
	_ = r.History.WriteFile(filepath.Join(r.Dir, "history.json"))
	text := r.Report.Line() + "\n" + strings.Join(r.Report.Faults(), "\n") + "\n\n" + r.Report.Details()
	_ = os.WriteFile(filepath.Join(r.Dir, "report.txt"), []byte(text), 0o644)
}
