package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"keeper/ledgerstore/ledgerclient"
)

// LedgerScenario is a fault experiment on the ledger store: a metadata
// ensemble, bookies behind the fault proxy, and a body that writes,
// injects faults and judges what it saw (the "fencing race" and "bookie crash and wipe" scenarios of docs/fault-model.md).
type LedgerScenario struct {
	ID   int
	Name string
	// Servers is the metadata ensemble's size; Bookies how many bookies.
	Servers, Bookies int
	// MaxSessionTimeoutMs caps every ZooKeeper session (the bookies' and
	// the `keeper ledger` processes' 10 s default included).
	MaxSessionTimeoutMs int
	// Duration is the fault phase's default length.
	Duration time.Duration
	// DropUnsynced is Config.DropUnsynced for the metadata servers and
	// the bookies.
	DropUnsynced bool
	// BookieConf is Bookies.Conf: bk_server.conf lines for every bookie.
	BookieConf []string
	// V2 makes the ledger clients speak BookKeeper's v2 protocol to the
	// bookies, as Pulsar's do: the `keeper ledger` processes (--v2) and the
	// harness's own clients (LedgerClient). Its checks still read through
	// bookierpc's v3 connections.
	V2 bool
	// Body runs the workload and the faults until ctx ends, then checks.
	Body func(ctx context.Context, r *LedgerRun)
}

// LedgerRun is one execution of a LedgerScenario.
type LedgerRun struct {
	Scenario *LedgerScenario
	Cluster  *Cluster
	Bookies  *Bookies
	Report   *Report
	Bin      string
	Dir      string
	Seed     uint64

	logf  func(format string, args ...any)
	start time.Time
	mu    sync.Mutex
	rng   *rand.Rand
	ops   int
	acks  map[int][]time.Time // per stream: when its ops succeeded, for the gaps
	// logFiles are the client logs ClientLog opened; closed at the end.
	logFiles []*os.File
}

// LedgerScenarios returns the ledger store's scenarios, by number.
func LedgerScenarios() []*LedgerScenario {
	return []*LedgerScenario{FencingRaceScenario(), BookieWipeScenario(), SlowBookieConsumers(), V2(FencingRaceScenario()), V2(BookieWipeScenario()),
		AutorecoveryScenario()}
}

// V2 returns sc with its clients speaking BookKeeper's v2 protocol.
func V2(sc *LedgerScenario) *LedgerScenario {
	sc.V2 = true
	sc.Name += " (v2 clients)"
	return sc
}

// Logf logs a progress line with the time into the run.
func (r *LedgerRun) Logf(format string, args ...any) {
	r.logf("[%6.2fs] %s", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// Fault records and logs an injected fault.
func (r *LedgerRun) Fault(format string, args ...any) {
	desc := fmt.Sprintf(format, args...)
	r.Report.Fault(desc)
	r.Logf("fault: %s", desc)
}

// IntN returns a random int in [0, n) from the run's seeded source.
func (r *LedgerRun) IntN(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.IntN(n)
}

// Op counts one completed client operation of a stream (a writer's
// ledger, say) at now; the unavailable time is the sum of the long gaps
// between a stream's successful ops.
func (r *LedgerRun) Op(stream int, ok bool) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops++
	if ok {
		r.acks[stream] = append(r.acks[stream], now)
	}
}

// ZKAddrs returns the addresses node dials to reach every metadata
// server (proxies from node).
func (r *LedgerRun) ZKAddrs(node string) ([]string, error) {
	var out []string
	for _, s := range r.Cluster.Servers {
		a, err := r.Cluster.ClientAddr(node, s)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// ClientLog returns a logger that writes a ledger client's debug log to
// name.log in the run's directory (kept when the run fails).
func (r *LedgerRun) ClientLog(name string) *slog.Logger {
	f, err := os.OpenFile(filepath.Join(r.Dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return slog.New(slog.DiscardHandler)
	}
	r.mu.Lock()
	r.logFiles = append(r.logFiles, f)
	r.mu.Unlock()
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// LedgerClient connects an in-process ledger client; its metadata links
// go through proxies from node and its bookie links come from node "h".
func (r *LedgerRun) LedgerClient(node string, cfg ledgerclient.Config) (*ledgerclient.Client, error) {
	zk, err := r.ZKAddrs(node)
	if err != nil {
		return nil, err
	}
	cfg.ZKServers = zk
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ZKSessionTimeout == 0 {
		cfg.ZKSessionTimeout = 3 * time.Second
	}
	if cfg.AddTimeout == 0 {
		cfg.AddTimeout = time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 2 * time.Second
	}
	if cfg.MetadataTimeout == 0 {
		cfg.MetadataTimeout = 3 * time.Second
	}
	if cfg.LongPollTimeout == 0 {
		cfg.LongPollTimeout = time.Second
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = 200 * time.Millisecond
	}
	if cfg.SpeculativeReadTimeout == 0 {
		cfg.SpeculativeReadTimeout = 500 * time.Millisecond
	}
	if cfg.Seed == 0 {
		cfg.Seed = r.Seed + uint64(r.IntN(1<<30)) + 1
	}
	cfg.UseV2WireProtocol = cfg.UseV2WireProtocol || r.Scenario.V2
	return ledgerclient.New(cfg)
}

// ExecuteLedger runs a ledger scenario and returns its report and the
// run's directory, which exists only if the run failed (with report.txt,
// every server's and bookie's data and logs). An error means the harness
// could not run the scenario.
func ExecuteLedger(ctx context.Context, sc *LedgerScenario, o Options) (*Report, string, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
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
	r := &LedgerRun{Scenario: sc, Report: NewReport(sc.ID), Bin: o.Bin, Dir: dir, Seed: o.Seed, logf: o.Logf,
		start: time.Now(), acks: map[int][]time.Time{}, rng: rand.New(rand.NewPCG(o.Seed, uint64(sc.ID)))}
	err = r.execute(ctx, duration)
	for _, f := range r.logFiles {
		f.Close()
	}
	if err != nil {
		r.Report.Violate("harness", "%v", err)
	}
	r.figures()
	if r.Report.Violations() == 0 {
		os.RemoveAll(dir)
		return r.Report, "", nil
	}
	text := r.Report.Line() + "\n" + strings.Join(r.Report.Faults(), "\n") + "\n\n" + r.Report.Details()
	_ = os.WriteFile(filepath.Join(dir, "report.txt"), []byte(text), 0o644)
	return r.Report, dir, err
}

// execute starts the metadata ensemble and the bookies, runs the body,
// and stops everything.
func (r *LedgerRun) execute(ctx context.Context, duration time.Duration) error {
	sc := r.Scenario
	cl, err := NewCluster(Config{Bin: r.Bin, Dir: filepath.Join(r.Dir, "cluster"), Servers: sc.Servers,
		MaxSessionTimeoutMs: sc.MaxSessionTimeoutMs, Seed: r.Seed, LogLevel: "warn", DropUnsynced: sc.DropUnsynced})
	if err != nil {
		return err
	}
	defer cl.Close()
	r.Cluster = cl
	if err := startMetadata(cl); err != nil {
		return err
	}
	bs, err := NewBookies(cl, r.Bin, filepath.Join(r.Dir, "bookies"), sc.Bookies)
	if err != nil {
		return err
	}
	defer bs.Close()
	r.Bookies = bs
	bs.Conf = sc.BookieConf
	if err := bs.StartAll(); err != nil {
		return err
	}
	r.Logf("%d metadata server(s) and %d bookies serve", len(cl.Servers), len(bs.List))
	bctx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	sc.Body(bctx, r)
	return ctx.Err()
}

// startMetadata starts the metadata servers: a lone server runs
// standalone, so answering ruok is serving.
func startMetadata(cl *Cluster) error {
	if len(cl.Servers) == 1 {
		return cl.Start(cl.Servers[0])
	}
	_, err := cl.StartAll(healTimeout)
	return err
}

// Heal lifts every rule and starts every bookie that is down.
func (r *LedgerRun) Heal() error {
	r.Cluster.Net.Heal()
	for _, b := range r.Bookies.List {
		if !b.Running() {
			if err := r.Bookies.Start(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// figures sets the op count and the unavailable time: the sum of the
// gaps of more than unavailableGap between a stream's successive
// successful ops.
func (r *LedgerRun) figures() {
	r.mu.Lock()
	ops := r.ops
	var unavailable, maxGap time.Duration
	for _, acks := range r.acks {
		acks = slices.Clone(acks)
		slices.SortFunc(acks, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(acks); i++ {
			gap := acks[i].Sub(acks[i-1])
			if gap > unavailableGap {
				unavailable += gap
			}
			maxGap = max(maxGap, gap)
		}
	}
	r.mu.Unlock()
	rep := r.Report
	rep.mu.Lock()
	rep.ops, rep.unavailable, rep.maxGap = ops, unavailable, maxGap
	rep.mu.Unlock()
}
