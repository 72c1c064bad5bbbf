package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"keeper/bench"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
)

// benchBookieConfig is one `keeper bench bookie` invocation: every size
// is run with every ledger count.
type benchBookieConfig struct {
	Addr        string
	Protocols   []string // "v3", "v2": BookKeeper's wire protocols
	Sizes       []int
	Ledgers     []int
	Inflight    int // adds outstanding per ledger
	Connections int
	Duration    time.Duration
	Warmup      time.Duration
	FsyncDir    string    // measure this disk's raw fsync rate first
	CPUPIDs     []int     // the bookie's process: CPU time per add
	Progress    io.Writer // a line a second while a run goes on; nil for none
}

// benchBookieResult is one run's JSON line.
type benchBookieResult struct {
	Bench       string         `json:"bench"`
	Addr        string         `json:"addr"`
	Protocol    string         `json:"protocol"`
	SizeBytes   int            `json:"size_bytes"`
	Ledgers     int            `json:"ledgers"`
	Inflight    int            `json:"inflight_per_ledger"`
	Connections int            `json:"connections"`
	DurationSec float64        `json:"duration_sec"`
	Adds        int64          `json:"adds"`
	AddsPerSec  float64        `json:"adds_per_sec"`
	MBPerSec    float64        `json:"mb_per_sec"` // payload, 10^6 bytes
	P50Us       float64        `json:"p50_us"`
	P99Us       float64        `json:"p99_us"`
	MaxUs       float64        `json:"max_us"`
	Errors      map[string]int `json:"errors,omitempty"`
	// ClientCPUUsPerAdd is this process's CPU time over the measured
	// interval per add measured, and ServerCPUUsPerAdd the --cpu-pid
	// processes' CPU time, summed, per add.
	ClientCPUUsPerAdd *float64 `json:"client_cpu_us_per_add,omitempty"`
	ServerCPUUsPerAdd *float64 `json:"server_cpu_us_per_add,omitempty"`
	// Interrupted says the run was stopped (Ctrl-C) before its end: the
	// figures cover what was measured until then.
	Interrupted bool `json:"interrupted,omitempty"`
}

func newBenchBookieCmd() *cobra.Command {
	cfg := benchBookieConfig{}
	cmd := &cobra.Command{
		Use:   "bookie",
		Short: "Load a running bookie with adds and print one JSON line per run",
		Long: `Add entries to a running bookie (keeper or Apache BookKeeper, in BookKeeper's v3
or v2 wire protocol, --protocols) and print one JSON line per (protocol, size,
ledgers) combination: adds/s, MB/s of payload,
and p50/p99/max add latency in microseconds, from the request being sent to
the bookie's acknowledgement (which a bookie sends after its journal fsync).
Each ledger keeps --inflight adds outstanding; ledgers share --connections
connections. Ledger ids are fresh random ones on every run. With --fsync-dir it
first measures that disk's raw write+fdatasync rate (keeper bench fsync), so
the journal disk's ceiling is reported by the same run. With --cpu-pid (the
bookie's pid) each line also gives its CPU time per add, and this process's
in any case. While a run goes on, a line a second on stderr says how far it
is; Ctrl-C prints the JSON line of what the current run measured until then,
with "interrupted": true, and exits 1.

  keeper bench bookie --addr 127.0.0.1:3181 --fsync-dir /data/journal`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			cfg.Progress = cmd.ErrOrStderr()
			return runBenchBookie(ctx, cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", "127.0.0.1:3181", "the bookie's host:port")
	f.StringSliceVar(&cfg.Protocols, "protocols", []string{"v3"},
		"wire protocols, comma-separated: v3, v2 (Pulsar's default, useV2WireProtocol)")
	f.IntSliceVar(&cfg.Sizes, "sizes", []int{100, 1024, 64 << 10}, "payload sizes in bytes, comma-separated")
	f.IntSliceVar(&cfg.Ledgers, "ledgers", []int{1, 16}, "ledger counts, comma-separated")
	f.IntVar(&cfg.Inflight, "inflight", 16, "adds outstanding per ledger")
	f.IntVar(&cfg.Connections, "connections", 1, "connections to the bookie, shared by the ledgers")
	f.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured interval of each run")
	f.DurationVar(&cfg.Warmup, "warmup", time.Second, "load before each measured interval, not recorded")
	f.StringVar(&cfg.FsyncDir, "fsync-dir", "", "measure the raw fsync rate of this directory's disk first")
	f.IntSliceVar(&cfg.CPUPIDs, "cpu-pid", nil, "pid of the bookie process (several: summed), to report its CPU time per add")
	return cmd
}

func runBenchBookie(ctx context.Context, cfg benchBookieConfig, out io.Writer) error {
	if cfg.Inflight < 1 || cfg.Connections < 1 || cfg.Duration <= 0 {
		return errors.New("bench bookie: --inflight, --connections and --duration must be positive")
	}
	if err := benchPreflight(ctx, out, "bench bookie", cfg.FsyncDir, cfg.Duration, cfg.Protocols, cfg.CPUPIDs); err != nil {
		return err
	}
	for _, size := range cfg.Sizes {
		for _, ledgers := range cfg.Ledgers {
			for _, protocol := range cfg.Protocols {
				if size < 1 || size > 4<<20 || ledgers < 1 {
					return fmt.Errorf("bench bookie: size %d or ledger count %d out of range", size, ledgers)
				}
				res, err := benchBookieRun(ctx, cfg, protocol, size, ledgers)
				if err != nil && (res == nil || !res.Interrupted) {
					return err
				}
				if err := printJSON(out, res); err != nil {
					return err
				}
				if res.Interrupted {
					return fmt.Errorf("interrupted after %.1f s of measurement; the line above holds the partial results",
						res.DurationSec)
				}
			}
		}
	}
	return nil
}

// benchPreflight is what bench bookie and bench ledger do before their
// runs, in this order: measure fsyncDir's raw fsync rate (if given) and
// print its line on out, refuse bad --protocols, and check that the
// --cpu-pid processes can be read (better now than after the runs).
// name prefixes the errors.
func benchPreflight(ctx context.Context, out io.Writer, name, fsyncDir string, duration time.Duration, protocols []string,
	cpuPIDs []int) error {
	if fsyncDir != "" {
		res, err := bench.Fsync(ctx, bench.FsyncConfig{Dir: fsyncDir, Duration: min(duration, 5*time.Second)})
		if err != nil {
			return err
		}
		if err := printLine(out, res.MarshalLine); err != nil {
			return err
		}
	}
	if err := checkProtocols(protocols); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if len(cpuPIDs) > 0 {
		if _, err := bench.CPUTime(cpuPIDs...); err != nil {
			return fmt.Errorf("%s: --cpu-pid: %w", name, err)
		}
	}
	return nil
}

// checkProtocols refuses a --protocols value other than v3 and v2.
func checkProtocols(protocols []string) error {
	if len(protocols) == 0 {
		return errors.New("--protocols is empty")
	}
	for _, p := range protocols {
		if p != "v3" && p != "v2" {
			return fmt.Errorf("protocol %q: want v3 or v2", p)
		}
	}
	return nil
}

// benchLedger is one ledger's load: its latencies and errors.
type benchLedger struct {
	id        int64
	latencies []time.Duration
	errors    map[string]int
	// acked and failed count the answers so far, for the progress lines
	// (latencies and errors are read only once the run is over).
	acked, failed atomic.Int64
}

// benchBookieRun runs one (protocol, size, ledgers) combination.
func benchBookieRun(ctx context.Context, cfg benchBookieConfig, protocol string, size, ledgers int) (*benchBookieResult, error) {
	dial := bookierpc.Dial
	if protocol == "v2" {
		dial = bookierpc.DialV2
	}
	clients := make([]*bookierpc.Client, cfg.Connections)
	for i := range clients {
		c, err := dial(ctx, cfg.Addr)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		clients[i] = c
	}
	base := rand.Int64N(1<<40) + 1<<20 // fresh ids, in the hierarchical manager's long form
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(rand.Uint32())
	}
	start := time.Now()
	measureFrom, measureTo := start.Add(cfg.Warmup), start.Add(cfg.Warmup+cfg.Duration)
	runCtx, cancel := context.WithDeadline(ctx, measureTo)
	defer cancel()
	loads := make([]*benchLedger, ledgers)
	cpu := sampleBenchCPU(runCtx, cfg.CPUPIDs, measureFrom, measureTo)
	var wg sync.WaitGroup
	for i := range loads {
		loads[i] = &benchLedger{id: base + int64(i), errors: map[string]int{}}
		wg.Add(1)
		go func(l *benchLedger, c *bookierpc.Client) {
			defer wg.Done()
			l.run(runCtx, c, payload, cfg.Inflight, measureFrom, measureTo)
		}(loads[i], clients[i%len(clients)])
	}
	stopProgress := func() {}
	if cfg.Progress != nil {
		stopProgress = reportBenchProgress(cfg.Progress, "bench bookie", fmt.Sprintf("%s size %d ledgers %d", protocol, size, ledgers),
			start, measureFrom, func() (acked, failed int64) {
				for _, l := range loads {
					acked, failed = acked+l.acked.Load(), failed+l.failed.Load()
				}
				return acked, failed
			})
	}
	wg.Wait()
	stopProgress()
	cpuUsed := cpu()
	measured := cfg.Duration
	interrupted := ctx.Err()
	if interrupted != nil {
		stopped := time.Now()
		if stopped.After(measureTo) {
			stopped = measureTo
		}
		measured = stopped.Sub(measureFrom)
	}
	res := &benchBookieResult{Bench: "bookie", Addr: cfg.Addr, Protocol: protocol, SizeBytes: size, Ledgers: ledgers,
		Inflight: cfg.Inflight, Connections: cfg.Connections, DurationSec: measured.Seconds(), Interrupted: interrupted != nil}
	var all []time.Duration
	for _, l := range loads {
		all = append(all, l.latencies...)
		for k, v := range l.errors {
			if res.Errors == nil {
				res.Errors = map[string]int{}
			}
			res.Errors[k] += v
		}
	}
	if interrupted != nil && (len(all) == 0 || measured <= 0) {
		return nil, interrupted
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("bench bookie: no add succeeded (errors %v)", res.Errors)
	}
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) }
	res.Adds = int64(len(all))
	res.AddsPerSec = float64(len(all)) / measured.Seconds()
	res.MBPerSec = res.AddsPerSec * float64(size) / 1e6
	res.P50Us, res.P99Us, res.MaxUs = pct(0.50), pct(0.99), float64(all[len(all)-1].Microseconds())
	res.ClientCPUUsPerAdd, res.ServerCPUUsPerAdd = cpuUsed.perAdd(res.Adds)
	return res, interrupted
}

// benchPending is an add in flight.
type benchPending struct {
	sent time.Time
	ch   <-chan bookierpc.Result
}

// run adds entries to the ledger, keeping inflight outstanding, until ctx
// ends; it records the latency of the adds sent inside [from, to).
// Completions are collected in order: one ledger's adds go through one
// journal, which acknowledges them in order.
func (l *benchLedger) run(ctx context.Context, c *bookierpc.Client, payload []byte, inflight int, from, to time.Time) {
	key := bkproto.MasterKey([]byte("keeper-bench"))
	slots := make(chan struct{}, inflight) // one per add outstanding
	pending := make(chan benchPending, inflight)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := range pending {
			res := <-p.ch
			lat := time.Since(p.sent)
			<-slots
			if err := benchStatus(res); err != nil {
				l.failed.Add(1)
				l.errors[err.Error()]++
			} else {
				l.acked.Add(1)
				if !p.sent.Before(from) && p.sent.Before(to) {
					l.latencies = append(l.latencies, lat)
				}
			}
		}
	}()
	length := int64(0)
	for entry := int64(0); ; entry++ {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		length += int64(len(payload))
		lac := max(entry-int64(inflight)-1, -1)
		body := bkproto.EncodeEntry(l.id, entry, lac, length, bkproto.DigestCRC32C, nil, payload)
		pending <- benchPending{sent: time.Now(), ch: c.Go(bookierpc.AddRequest(l.id, entry, key[:], body, false))}
	}
	close(pending)
	<-done
}

// benchStatus turns a call's result into an error.
func benchStatus(res bookierpc.Result) error {
	if res.Err != nil {
		return res.Err
	}
	return bkproto.ErrorOf(bkproto.ResponseStatus(res.Resp))
}
