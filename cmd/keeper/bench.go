package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"keeper/bench"
	"keeper/coordination/zoocfg"
)

// This file is `keeper bench`: the load tool (zk), its null server (null)
// and the disk's fsync rate (fsync). Each measurement prints one JSON line
// on stdout.

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a ZooKeeper server, the load tool's own ceiling, or the disk",
	}
	cmd.AddCommand(newBenchZKCmd(), newBenchNullCmd(), newBenchFsyncCmd(), newBenchStallsCmd())
	cmd.AddCommand(newBenchBookieCmd())
	cmd.AddCommand(newBenchLedgerCmd(), newBenchNullBookieCmd(), newBenchNullEnsembleCmd())
	return cmd
}

// signalContext returns ctx, also cancelled by SIGINT or SIGTERM.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

func newBenchZKCmd() *cobra.Command {
	var cfg bench.Config
	var op string
	var progress bool
	var clientConf string
	cmd := &cobra.Command{
		Use:   "zk",
		Short: "Load ZooKeeper servers (Apache ZooKeeper or keeper) and print one JSON line",
		Long: `Load ZooKeeper servers and print one JSON line: ops/s, p50, p99 and p999
latency in microseconds, errors by code, and CPU time.

  keeper bench zk --servers 127.0.0.1:2181 --op get --clients 16 --inflight 16

Ops: get, exists, set, create, mixed (--read-ratio gets, the rest sets) and
watch (--watchers sessions watch one znode; a writer sets it; the latencies
are the time from the set to the last notification, over --rounds rounds).
Every client keeps --inflight requests outstanding on its own session;
clients are spread round-robin over --servers. The znodes the run needs are
created under a fresh /bench-<random> root and deleted afterwards.

Two more ops serve the resource figures. fill creates --keyspace znodes of
--size bytes under a fresh root with --clients x --inflight creates in
flight, leaves them there, and prints the root. ready retries a read of
--path (a new session each time, every 5 to 50 ms) until one is served or
--duration ends, and prints ready_sec: the time from the start of the
--cpu-pid process (or of this command) to that read.

TLS and SASL are set as for keeper shell (and zkCli): -D flags in
CLIENT_JVMFLAGS or JVMFLAGS, or the same keys in a --client-conf file
(zookeeper.client.secure, zookeeper.ssl.*, java.security.auth.login.config;
docs/tls.md, docs/sasl.md).

--cpu-pid takes one pid or several (an ensemble's members): their CPU time
over the measured interval is summed.

While the load runs, a line a second on stderr says how far it is (unless
--progress=false). Ctrl-C stops it early: the JSON line then holds what was
measured until then, with "interrupted": true, and the command exits 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sec, err := loadClientSecurity(os.Getenv, clientConf, zoocfg.ClientJVMFlagsEnv, zoocfg.JVMFlagsEnv)
			if err != nil {
				return err
			}
			cfg.Security = sec
			cfg.Op = bench.Op(op)
			if progress {
				cfg.Progress = cmd.ErrOrStderr()
			}
			return runBenchZK(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&cfg.Servers, "servers", []string{"127.0.0.1:2181"}, "host:port of the servers, comma-separated")
	f.StringVar(&op, "op", "get", "workload: get, exists, set, create, mixed, watch, fill or ready")
	f.IntVar(&cfg.Clients, "clients", 1, "sessions issuing requests")
	f.IntVar(&cfg.Inflight, "inflight", 1, "requests outstanding per session")
	f.IntVar(&cfg.SizeBytes, "size", bench.DefaultSizeBytes, "bytes of data per written znode")
	f.DurationVar(&cfg.Duration, "duration", bench.DefaultDuration, "measured interval; ready: how long to keep trying")
	f.DurationVar(&cfg.Warmup, "warmup", time.Second, "load before the measured interval, not recorded")
	f.IntVar(&cfg.KeySpace, "keyspace", bench.DefaultKeySpace, "znodes that get, exists, set and mixed spread over; fill creates that many")
	f.Float64Var(&cfg.ReadRatio, "read-ratio", bench.DefaultReadRatio, "fraction of gets in mixed")
	f.IntVar(&cfg.Watchers, "watchers", bench.DefaultWatchers, "watch: watching sessions")
	f.IntVar(&cfg.Rounds, "rounds", bench.DefaultRounds, "watch: measured rounds")
	f.IntSliceVar(&cfg.CPUPIDs, "cpu-pid", nil, "pids of the server processes, comma-separated, to report their CPU time per request")
	f.StringVar(&cfg.ReadyPath, "path", bench.DefaultReadyPath, "ready: the znode to read")
	f.DurationVar(&cfg.SessionTimeout, "session-timeout", bench.DefaultSessionTimeout, "session timeout to ask for")
	f.BoolVar(&progress, "progress", true, "print a progress line a second on stderr")
	f.StringVar(&clientConf, "client-conf", "", "a ZooKeeper client configuration file (TLS and SASL), as zkCli's -client-configuration")
	return cmd
}

// runBenchZK runs the load and prints its result.
func runBenchZK(ctx context.Context, cfg bench.Config, out io.Writer) error {
	ctx, stop := signalContext(ctx)
	defer stop()
	res, err := bench.Run(ctx, cfg)
	if err != nil && res.Interrupted {
		if perr := printLine(out, res.MarshalLine); perr != nil {
			return perr
		}
		return fmt.Errorf("interrupted after %.1f s of measurement; the line above holds the partial results", res.DurationSec)
	}
	if err != nil {
		return err
	}
	return printLine(out, res.MarshalLine)
}

func newBenchNullCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "null",
		Short: "Run a null ZooKeeper server: it answers every request at once and stores nothing",
		Long: `Run a null ZooKeeper server until interrupted. It completes the handshake and
answers every request at once with an empty successful reply, storing
nothing and firing no watches, so that bench zk against it measures the
load tool itself. It prints its address on stdout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBenchNull(cmd.Context(), addr, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "address to listen on; port 0 picks a free one")
	return cmd
}

// runBenchNull serves until ctx ends or a signal arrives.
func runBenchNull(ctx context.Context, addr string, out io.Writer) error {
	ctx, stop := signalContext(ctx)
	defer stop()
	s, err := bench.NewNullServer(addr)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := fmt.Fprintln(out, s.Addr()); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func newBenchFsyncCmd() *cobra.Command {
	var cfg bench.FsyncConfig
	cmd := &cobra.Command{
		Use:   "fsync",
		Short: "Measure the disk's raw write+fdatasync rate, appending and overwriting",
		Long: `Measure write+fdatasync of --size bytes in a loop in --dir, first appending to
a growing file (each sync also commits the new file size), then overwriting
inside a file preallocated with --prealloc bytes of zeros (each sync only
flushes data), each for --duration. With --parallel N, N writers on N files
start each write+sync together and a latency lasts until all N are done (the
floor under an add that two bookies on one disk both make durable). Prints
one JSON line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			res, err := bench.Fsync(ctx, cfg)
			if err != nil {
				return err
			}
			return printLine(cmd.OutOrStdout(), res.MarshalLine)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Dir, "dir", ".", "directory on the disk to measure")
	f.IntVar(&cfg.SizeBytes, "size", bench.DefaultFsyncSizeBytes, "bytes written before each sync")
	f.DurationVar(&cfg.Duration, "duration", bench.DefaultFsyncDuration, "how long each mode runs")
	f.Int64Var(&cfg.PreallocBytes, "prealloc", bench.DefaultPreallocBytes, "size of the overwrite mode's file")
	f.IntVar(&cfg.Parallel, "parallel", 1, "writers, each on its own file, that sync together")
	return cmd
}

func newBenchStallsCmd() *cobra.Command {
	var cfg bench.StallsConfig
	cmd := &cobra.Command{
		Use:   "stalls",
		Short: "Find out whether the machine stops when it both computes and syncs",
		Long: `Run, each for --duration, --spinners threads that only read the clock, then
--writers writers that each write 128 bytes and fdatasync their own file in
--dir --rate times a second, then both at once, and count the pauses of at
least --gap that every spinner saw at once (the whole machine stopped, where
a thread taking one CPU pauses one spinner) and the syncs that took that
long. A
virtual machine whose host caps its CPU time per period stops whole once a
period's use passes the cap: stalls in the third phase alone, at a fixed
interval (100 ms for Linux's CPU bandwidth control), are that cap, and every
server on the machine meets them once its load passes it. Prints one JSON
line (docs/benchmarking.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			res, err := bench.Stalls(ctx, cfg)
			if err != nil {
				return err
			}
			return printLine(cmd.OutOrStdout(), res.MarshalLine)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Dir, "dir", ".", "directory on the disk the writers use")
	f.IntVar(&cfg.Spinners, "spinners", 0, "threads that only read the clock (default one per CPU, which keeps them all busy)")
	f.IntVar(&cfg.Writers, "writers", bench.DefaultStallsWriters, "writers, each syncing its own file")
	f.IntVar(&cfg.Rate, "rate", bench.DefaultStallsRate, "write+fdatasync per second per writer")
	f.DurationVar(&cfg.Duration, "duration", bench.DefaultStallsDuration, "how long each phase runs")
	f.DurationVar(&cfg.Gap, "gap", bench.DefaultStallsGap, "shortest pause counted as a stall")
	return cmd
}

// printLine writes the line marshal returns.
func printLine(out io.Writer, marshal func() ([]byte, error)) error {
	b, err := marshal()
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}
