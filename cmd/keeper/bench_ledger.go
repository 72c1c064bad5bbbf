package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// benchLedgerConfig is one `keeper bench ledger` invocation: every quorum
// is run with every entry size.
type benchLedgerConfig struct {
	ZK        []string // metadata servers, host:port
	Root      string   // ledgers root znode
	Quorums   []benchQuorum
	Sizes     []int    // payload bytes
	Ledgers   []int    // ledgers written at once, each by its own writer
	Protocols []string // "v3", "v2": the wire protocol to the bookies; "+tls" over TLS
	// TLS is what the "+tls" protocols use (--client-conf).
	TLS      bookietls.Settings
	Inflight int // adds between AppendAsync and their callback, per ledger
	Duration time.Duration
	Warmup   time.Duration
	FsyncDir string    // measure this disk's raw fsync rate first
	CPUPIDs  []int     // the bookies' (or a sandbox's) processes: CPU time per add
	Progress io.Writer // a line a second while a run goes on; nil for none
	// MetricsAddr, if set, is where the clients' BookKeeper client metrics
	// are served over HTTP (/metrics) while the runs go on.
	MetricsAddr string

	// Op is what is measured: "add" (the default), "recover" (recovery of
	// ledgers whose entries all lie beyond the bookies' LAC) or "tail"
	// (from an add's acknowledgement to tailing readers receiving it).
	Op string
	// Entries is each recovered ledger's length (--op recover).
	Entries int
	// Rounds repeats the recover runs, the batch sizes alternating.
	Rounds int
	// RecoveryBatches are the recovery read batch sizes compared
	// (--op recover; recoveryReadBatchSize).
	RecoveryBatches []int
	// Tailers is how many long-polling readers follow the ledger (--op tail).
	Tailers int
	// ExplicitLAC is the writer's explicit LAC interval (--op tail, v3;
	// explicitLacInterval, 0 off).
	ExplicitLAC time.Duration
	// Reads is how many entries of the ledger --op read reads, at random,
	// each once; DropCaches drops the kernel's page cache before (root).
	Reads      int
	DropCaches bool
	// BookieHTTP are the bookies' HTTP admin servers (host:port): --op
	// read then also reads during a forced major compaction on each.
	BookieHTTP []string
}

// benchQuorum is a ledger's E/Qw/Qa.
type benchQuorum struct{ ensemble, writeQuorum, ackQuorum int }

func (q benchQuorum) String() string {
	return fmt.Sprintf("%d/%d/%d", q.ensemble, q.writeQuorum, q.ackQuorum)
}

// parseBenchQuorums parses "E/Qw/Qa" values and checks each is a valid
// placement.
func parseBenchQuorums(ss []string) ([]benchQuorum, error) {
	out := make([]benchQuorum, 0, len(ss))
	for _, s := range ss {
		parts := strings.Split(s, "/")
		var n [3]int
		ok := len(parts) == 3
		for i := 0; ok && i < 3; i++ {
			v, err := strconv.Atoi(parts[i])
			n[i], ok = v, err == nil
		}
		if !ok {
			return nil, fmt.Errorf("bench ledger: quorum %q: want E/Qw/Qa, e.g. 3/3/2", s)
		}
		if _, err := ledger.NewPlacement(n[0], n[1], n[2]); err != nil {
			return nil, fmt.Errorf("bench ledger: quorum %q: %w", s, err)
		}
		out = append(out, benchQuorum{n[0], n[1], n[2]})
	}
	return out, nil
}

// benchLedgerResult is one run's JSON line.
type benchLedgerResult struct {
	Op            string  `json:"op"`
	Protocol      string  `json:"protocol"`
	Ledgers       int     `json:"ledgers"`
	Ensemble      int     `json:"ensemble"`
	WriteQuorum   int     `json:"write_quorum"`
	AckQuorum     int     `json:"ack_quorum"`
	SizeBytes     int     `json:"size_bytes"`
	Inflight      int     `json:"inflight"`
	DurationSec   float64 `json:"duration_sec"`
	Entries       int64   `json:"entries"`
	EntriesPerSec float64 `json:"entries_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"` // payload, 10^6 bytes
	P50Us         float64 `json:"p50_us"`
	P99Us         float64 `json:"p99_us"`
	P999Us        float64 `json:"p999_us"`
	Errors        int64   `json:"errors"`
	// ClientCPUUsPerAdd is this process's CPU time (the load and the ledger
	// client) over the measured interval per add measured, and
	// ServerCPUUsPerAdd the --cpu-pid processes' CPU time, summed, per add.
	ClientCPUUsPerAdd *float64 `json:"client_cpu_us_per_add,omitempty"`
	ServerCPUUsPerAdd *float64 `json:"server_cpu_us_per_add,omitempty"`
	// RecoveryReadBatchSize is the recovering client's
	// recoveryReadBatchSize (op ledger_recover).
	RecoveryReadBatchSize int `json:"recovery_read_batch_size,omitempty"`
	// Tailers is how many readers were tailing (op ledger_tail: the
	// latencies are then from an add's acknowledgement to a reader
	// receiving the entry, over every reader).
	Tailers int `json:"tailers,omitempty"`
	// LedgerEntries is the length of the ledger read (op ledger_read), and
	// Cold says the page cache was dropped before the reads.
	LedgerEntries int64 `json:"ledger_entries,omitempty"`
	// Phase is what the bookies did while the reads ran (op ledger_read):
	// "flushed" (the entries had left the write caches), "cold" (and the
	// page cache was dropped), "idle" (nothing else), "compaction" (a
	// forced major compaction, which took CompactionSec, the bookies'
	// entry log files counted before and after).
	Phase           string  `json:"phase,omitempty"`
	CompactionSec   float64 `json:"compaction_sec,omitempty"`
	EntryLogsBefore int     `json:"entry_logs_before,omitempty"`
	EntryLogsAfter  int     `json:"entry_logs_after,omitempty"`
	// Interrupted says the run was stopped (Ctrl-C) before its end: the
	// figures cover what was measured until then.
	Interrupted bool `json:"interrupted,omitempty"`
}

func newBenchLedgerCmd() *cobra.Command {
	cfg := benchLedgerConfig{}
	var quorums []string
	var cpuProfile string
	var clientConf clientConfFlag
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Write ledgers through the ledger client and print one JSON line per run",
		Long: `Create a ledger on the bookies registered under --zk and append entries to it
for --duration (after --warmup), keeping --inflight adds outstanding through the
client's AppendAsync, once for every (--quorums, --sizes, --ledgers,
--protocols) combination: --ledgers ledgers are written at once, each with
--inflight adds outstanding, and --protocols v3,v2 runs each combination over
both of BookKeeper's wire protocols (v2 is Pulsar's default). Each run
prints one JSON line: entries/s, MB/s of payload, and p50/p99/p999 add latency in
microseconds, from the AppendAsync call to its callback (acknowledged by Qa
bookies, every earlier entry acknowledged too). Each run's ledger is closed and
deleted afterwards. An add that fails ends its run (a writer whose add fails is
finished) and is counted in errors. With --fsync-dir it first measures that
disk's raw write+fdatasync rate (keeper bench fsync), the ceiling of a bookie
journal on it. With --cpu-pid (the bookies' pids, or a sandbox's) each line
also gives their CPU time per add, summed over them, and this process's
(the ledger client's) in any case. While a run goes on, a line a second on stderr says how far it
is; Ctrl-C prints the JSON line of what the current run measured until then,
with "interrupted": true, and exits 1. With --metrics-addr the client's
BookKeeper metrics (bookkeeper_client_ADD_ENTRY, ...) are served for
Prometheus at http://ADDR/metrics while it runs.

  keeper bench ledger --zk 127.0.0.1:2181 --quorums 3/3/2 --sizes 1024 --fsync-dir keeper-data`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := parseBenchQuorums(quorums)
			if err != nil {
				return err
			}
			cfg.Quorums = q
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			if cpuProfile != "" {
				stopProfile, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			if cfg.TLS, err = clientConf.tls(); err != nil {
				return err
			}
			cfg.Progress = cmd.ErrOrStderr()
			return runBenchLedger(ctx, cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&cfg.ZK, "zk", []string{"127.0.0.1:2181"}, "metadata servers, host:port, comma-separated")
	f.StringVar(&cfg.Root, "ledgers-root", metadata.DefaultRoot, "ledgers root znode")
	f.StringSliceVar(&quorums, "quorums", []string{"3/3/2", "3/2/2"}, "E/Qw/Qa combinations, comma-separated")
	f.IntSliceVar(&cfg.Sizes, "sizes", []int{100, 1024, 64 << 10}, "payload sizes in bytes, comma-separated")
	f.IntSliceVar(&cfg.Ledgers, "ledgers", []int{1}, "ledger counts, comma-separated: ledgers written at once")
	f.StringSliceVar(&cfg.Protocols, "protocols", []string{"v3"},
		"wire protocols to the bookies, comma-separated: v3, v2 (Pulsar's default, useV2WireProtocol), and v3+tls, v2+tls over TLS as --client-conf says")
	clientConf.add(f)
	f.IntVar(&cfg.Inflight, "inflight", 256, "adds outstanding per ledger")
	f.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured interval of each run")
	f.DurationVar(&cfg.Warmup, "warmup", time.Second, "load before each measured interval, not recorded")
	f.StringVar(&cfg.FsyncDir, "fsync-dir", "", "measure the raw fsync rate of this directory's disk first")
	f.StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile (pprof) of this process, the ledger client's side, to this file")
	f.IntSliceVar(&cfg.CPUPIDs, "cpu-pid", nil,
		"pids of the bookie processes (or of a sandbox), comma-separated, to report their CPU time per add")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", "",
		"serve the client's BookKeeper metrics (bookkeeper_client_*) at http://ADDR/metrics while it runs")
	f.StringVar(&cfg.Op, "op", "add", "what to measure: add, recover (recovery of ledgers whose writer died), "+
		"tail (from an add's acknowledgement to long-polling readers receiving it), "+
		"read (random reads of a closed ledger's entries, flushed out of the bookies' write caches)")
	f.IntVar(&cfg.Entries, "entries", 100_000, "--op recover: entries of each recovered ledger; --op read: of the ledger read")
	f.IntVar(&cfg.Reads, "reads", 2000, "--op read: entries read, chosen at random, each once, --inflight at a time")
	f.BoolVar(&cfg.DropCaches, "drop-caches", false,
		"--op read: drop the kernel's page cache before reading, so that reads go to the disk (Linux, root)")
	f.StringSliceVar(&cfg.BookieHTTP, "bookie-http", nil,
		"--op read: the bookies' HTTP admin servers (host:port, comma-separated): also read during a forced major compaction on them")
	f.IntVar(&cfg.Rounds, "rounds", 1, "--op recover: rounds, each running every --recovery-read-batch-size in turn")
	f.IntSliceVar(&cfg.RecoveryBatches, "recovery-read-batch-size", []int{1, ledgerclient.DefaultRecoveryReadBatchSize},
		"--op recover: recovery read batch sizes compared, comma-separated (recoveryReadBatchSize; 1 reads one entry at a time)")
	f.IntVar(&cfg.Tailers, "tail", 1, "--op tail: readers tailing the ledger")
	f.DurationVar(&cfg.ExplicitLAC, "explicit-lac-interval", 0,
		"--op tail: the writer's explicit LAC interval (explicitLacInterval; 0 off; v3 only)")
	return cmd
}

// benchLedgerMaxSize bounds --sizes: an entry and its header must fit in
// one bookie frame with room to spare.
const benchLedgerMaxSize = 4 << 20

func runBenchLedger(ctx context.Context, cfg benchLedgerConfig, out io.Writer) error {
	if cfg.Inflight < 1 || cfg.Duration <= 0 || cfg.Warmup < 0 {
		return errors.New("bench ledger: --inflight and --duration must be positive, --warmup not negative")
	}
	for _, size := range cfg.Sizes {
		if size < 1 || size > benchLedgerMaxSize {
			return fmt.Errorf("bench ledger: size %d out of range 1..%d", size, benchLedgerMaxSize)
		}
	}
	var wire []string // the protocols less "+tls", for the preflight's check
	for _, p := range cfg.Protocols {
		base, secure := strings.CutSuffix(p, "+tls")
		if secure && !cfg.TLS.Enabled {
			return fmt.Errorf("bench ledger: protocol %s: give a --client-conf with tlsProviderFactoryClass=%s", p, bookietls.FactoryClass)
		}
		wire = append(wire, base)
	}
	if err := benchPreflight(ctx, out, "bench ledger", cfg.FsyncDir, cfg.Duration, wire, cfg.CPUPIDs); err != nil {
		return err
	}
	switch cfg.Op {
	case "", "add":
	case "recover":
		return runBenchLedgerRecover(ctx, cfg, out)
	case "tail":
		return runBenchLedgerTail(ctx, cfg, out)
	case "read":
		return runBenchLedgerRead(ctx, cfg, out)
	default:
		return fmt.Errorf("bench ledger: --op %q: want add, recover, tail or read", cfg.Op)
	}
	for _, n := range cfg.Ledgers {
		if n < 1 {
			return fmt.Errorf("bench ledger: ledger count %d", n)
		}
	}
	var metrics *ledgerclient.Metrics
	if cfg.MetricsAddr != "" {
		metrics = new(ledgerclient.Metrics)
		stop, err := serveClientMetrics(cfg.MetricsAddr, metrics, cfg.Progress)
		if err != nil {
			return err
		}
		defer stop()
	}
	zkSec, err := metadataSecurity()
	if err != nil {
		return err
	}
	clients := map[string]*ledgerclient.Client{}
	for _, p := range cfg.Protocols {
		if clients[p] != nil {
			continue
		}
		base, secure := strings.CutSuffix(p, "+tls")
		lcfg := ledgerclient.Config{ZKServers: cfg.ZK, LedgersRoot: cfg.Root, Logger: newLogger(),
			MaxPendingAdds: cfg.Inflight, UseV2WireProtocol: base == "v2", Metrics: metrics, ZKSecurity: zkSec}
		if secure {
			lcfg.TLS = cfg.TLS
		}
		c, err := ledgerclient.New(lcfg)
		if err != nil {
			return err
		}
		defer c.Close()
		clients[p] = c
	}
	for _, q := range cfg.Quorums {
		for _, size := range cfg.Sizes {
			for _, ledgers := range cfg.Ledgers {
				for _, p := range cfg.Protocols {
					res, err := benchLedgerRun(ctx, clients[p], cfg, q, size, ledgers)
					if err != nil && (res == nil || !res.Interrupted) {
						return err
					}
					res.Protocol = p
					if werr := printJSON(out, res); werr != nil {
						return werr
					}
					if err != nil {
						return fmt.Errorf("interrupted after %.1f s of measurement; the line above holds the partial results",
							res.DurationSec)
					}
				}
			}
		}
	}
	return nil
}

// benchLedgerRun runs one (quorum, size, ledgers) combination on new
// ledgers, written at once, then closes and deletes them. The measured
// interval ends when the first writer stops adding.
func benchLedgerRun(ctx context.Context, c *ledgerclient.Client, cfg benchLedgerConfig, q benchQuorum,
	size, ledgers int) (*benchLedgerResult, error) {
	password := []byte("keeper-bench")
	writers := make([]*ledgerclient.Writer, 0, ledgers)
	defer func() {
		for _, w := range writers {
			_ = w.Close(context.WithoutCancel(ctx))
			_ = c.Delete(context.WithoutCancel(ctx), w.ID())
		}
	}()
	for range ledgers {
		w, err := c.Create(ctx, ledgerclient.CreateOptions{Ensemble: q.ensemble, WriteQuorum: q.writeQuorum,
			AckQuorum: q.ackQuorum, Password: password})
		if err != nil {
			return nil, fmt.Errorf("bench ledger %v: %w", q, err)
		}
		writers = append(writers, w)
	}
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(rand.Uint32())
	}
	loads := make([]*benchLedgerLoad, ledgers)
	stops := make([]time.Time, ledgers)
	start := time.Now()
	from, to := start.Add(cfg.Warmup), start.Add(cfg.Warmup+cfg.Duration)
	cpu := sampleBenchCPU(ctx, cfg.CPUPIDs, from, to)
	var wg sync.WaitGroup
	for i, w := range writers {
		loads[i] = &benchLedgerLoad{slots: make(chan struct{}, cfg.Inflight)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stops[i] = loads[i].run(ctx, w, payload, from, to)
		}()
	}
	stopProgress := func() {}
	if cfg.Progress != nil {
		stopProgress = reportBenchProgress(cfg.Progress, "bench ledger", fmt.Sprintf("%v size %d", q, size), start, from,
			func() (acked, errs int64) {
				for _, l := range loads {
					a, e := l.counts()
					acked, errs = acked+a, errs+e
				}
				return acked, errs
			})
	}
	wg.Wait()
	stopProgress()
	cpuUsed := cpu()
	var closeErr error
	for _, w := range writers {
		closeErr = errors.Join(closeErr, w.Close(context.WithoutCancel(ctx)))
		if err := c.Delete(context.WithoutCancel(ctx), w.ID()); err != nil {
			return nil, fmt.Errorf("bench ledger %v: delete ledger %d: %w", q, w.ID(), err)
		}
	}
	writers = nil
	interrupted := ctx.Err()
	stopped := slices.MinFunc(stops, func(a, b time.Time) int { return a.Compare(b) })
	if stopped.After(to) {
		stopped = to
	}
	measured := stopped.Sub(from)
	var lat []time.Duration
	var errs int64
	var firstErr error
	for _, l := range loads {
		lat = append(lat, l.latencies...)
		errs += l.errors
		firstErr = cmp.Or(firstErr, l.firstErr)
	}
	if interrupted != nil && (len(lat) == 0 || measured <= 0) {
		return nil, interrupted
	}
	if len(lat) == 0 || measured <= 0 {
		return nil, fmt.Errorf("bench ledger %v size %d: nothing acknowledged in the measured interval "+
			"(%d errors, first %v; close: %v)", q, size, errs, firstErr, closeErr)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	res := &benchLedgerResult{Op: "ledger_add", Ledgers: ledgers, Ensemble: q.ensemble, WriteQuorum: q.writeQuorum,
		AckQuorum: q.ackQuorum, SizeBytes: size, Inflight: cfg.Inflight, DurationSec: measured.Seconds(),
		Entries: int64(len(lat)), P50Us: pct(0.50), P99Us: pct(0.99), P999Us: pct(0.999), Errors: errs}
	res.EntriesPerSec = float64(res.Entries) / measured.Seconds()
	res.MBPerSec = res.EntriesPerSec * float64(size) / 1e6
	res.ClientCPUUsPerAdd, res.ServerCPUUsPerAdd = cpuUsed.perAdd(res.Entries)
	if interrupted != nil {
		res.Interrupted = true
		return res, interrupted
	}
	return res, nil
}

// benchLedgerLoad keeps adds outstanding on one writer and records their
// latencies. Callbacks run one at a time on the writer's callback
// goroutine; mu guards what they record against a reader before wg.Wait.
type benchLedgerLoad struct {
	slots chan struct{} // one per add outstanding
	wg    sync.WaitGroup

	mu        sync.Mutex // guards below
	latencies []time.Duration
	acked     int64 // adds acknowledged, warmup included
	errors    int64
	firstErr  error
}

// counts returns the adds acknowledged and failed so far.
func (l *benchLedgerLoad) counts() (acked, errs int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked, l.errors
}

// run adds until to (or the first failed add, or ctx's end), waits for
// every outstanding add, and returns when it stopped adding. It records
// the latency of the adds sent inside [from, to).
func (l *benchLedgerLoad) run(ctx context.Context, w *ledgerclient.Writer, payload []byte, from, to time.Time) time.Time {
	for {
		select {
		case l.slots <- struct{}{}:
		case <-ctx.Done():
		}
		sent := time.Now()
		if ctx.Err() != nil || !sent.Before(to) || l.failed() {
			l.wg.Wait()
			return sent
		}
		l.wg.Add(1)
		w.AppendAsync(payload, func(_ int64, err error) {
			lat := time.Since(sent)
			<-l.slots
			l.record(sent, lat, from, to, err)
			l.wg.Done()
		})
	}
}

func (l *benchLedgerLoad) record(sent time.Time, lat time.Duration, from, to time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errors++
		if l.firstErr == nil {
			l.firstErr = err
		}
		return
	}
	l.acked++
	if !sent.Before(from) && sent.Before(to) {
		l.latencies = append(l.latencies, lat)
	}
}

func (l *benchLedgerLoad) failed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errors > 0
}

// clientFigures are a ledger client's metrics as bookie.MetricsHandler
// exports them.
func clientFigures(m *ledgerclient.Metrics) bookie.Figures {
	return bookie.Figures{Latencies: m.OpStats(), Values: m.Values(), Counters: m.Counters(), Gauges: m.Gauges(),
		CountersByBookie: m.CountersByBookie(), LatenciesByBookie: m.LatenciesByBookie()}
}

// serveClientMetrics serves m at http://addr/metrics until stop, and says
// where on progress (stderr).
func serveClientMetrics(addr string, m *ledgerclient.Metrics, progress io.Writer) (stop func(), err error) {
	h, err := bookie.MetricsHandler(clientFigures(m))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bench ledger: metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	if progress != nil {
		fmt.Fprintf(progress, "client metrics at http://%s/metrics\n", ln.Addr())
	}
	return func() { srv.Close() }, nil
}
