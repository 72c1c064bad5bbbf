package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"keeper/coordination/server"
	"keeper/coordination/zoocfg"
	"keeper/internal/gctune"
	"keeper/ledgerstore/bookie"
)

// sandboxConfig is what `keeper sandbox` runs.
type sandboxConfig struct {
	dataDir    string
	port       int // coordination server's client port
	bookies    int
	bookiePort int // the first bookie's port; the others follow
	adminPort  int // the admin HTTP server's port; 0: any free one; -1: no admin server
}

func newSandboxCmd() *cobra.Command {
	var sc sandboxConfig
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run keeper locally: a coordination server on 127.0.0.1:2181 and three bookies on 3181-3183",
		Long: `Run the whole system in one process: a standalone coordination server and
bookies registered with it, all on 127.0.0.1, data under --data-dir (the
coordination server's in its version-2 directory, bookie N's in bookie-N).
The client and bookie ports are fixed (clients are told them); the admin HTTP
server and the bookies' metrics take free ports unless --admin-port says
otherwise. The sandbox prints every address it serves when it is up.
Ctrl-C stops everything cleanly; running it again keeps the data. While it
runs, the data directory is locked: a second sandbox (or server, or bookie)
on it refuses to start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			defer gctune.Start()()
			if cpuProfile != "" {
				stopProfile, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			return runSandbox(ctx, sc, newLogger(), os.Stdout)
		},
	}
	cmd.Flags().StringVar(&sc.dataDir, "data-dir", "keeper-data", "directory for the sandbox's data")
	cmd.Flags().IntVar(&sc.port, "port", 2181, "client port of the coordination server")
	cmd.Flags().IntVar(&sc.bookies, "bookies", 3, "number of bookies (0 for the coordination server alone)")
	cmd.Flags().IntVar(&sc.adminPort, "admin-port", 0, "port of the admin HTTP server and /metrics (0: a free one; -1: none)")
	cmd.Flags().IntVar(&sc.bookiePort, "bookie-port", bookie.DefaultPort, "port of the first bookie; the others take the next ones")
	cmd.Flags().StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile (pprof) of the whole sandbox to this file until shutdown")
	return cmd
}

// runSandbox runs the sandbox until ctx ends, or until a part of it stops
// on its own (which stops the rest and is an error). The coordination
// server stops last, so that the bookies leave their registrations cleanly.
func runSandbox(ctx context.Context, sc sandboxConfig, logger *slog.Logger, out io.Writer) (err error) {
	if sc.bookies < 0 || sc.bookies > 100 {
		return fmt.Errorf("--bookies %d: want 0 to 100", sc.bookies)
	}
	if sc.adminPort < -1 || sc.adminPort > 65535 {
		return fmt.Errorf("--admin-port %d: want a port, 0 for a free one or -1 for none", sc.adminPort)
	}
	zc := zoocfg.Default()
	zc.DataDir = sc.dataDir
	zc.ClientPort = sc.port
	zc.FourLetterWhitelist = []string{"*"}
	zc.ExtendedTypesEnabled = true
	zc.AdminServerAddress = "127.0.0.1"
	zc.AdminServerPort = max(sc.adminPort, 0)
	zc.AdminEnableServer = sc.adminPort != -1
	if err := zc.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(zc.DataDir, 0o755); err != nil {
		return err
	}
	// The root is the coordination server's dataDir, and its Start locks
	// it (keeper.lock) before it reads anything or binds a port: a second
	// sandbox on the same --data-dir stops there, before any bookie starts.
	srv, err := server.New(server.ConfigFromZoo(zc, logger))
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, srv.Close()) }()

	var bookies []*bookie.Bookie
	defer func() {
		for _, b := range bookies {
			err = errors.Join(err, b.Close())
		}
	}()
	for i := range sc.bookies {
		b, err := startSandboxBookie(ctx, sc, i+1, srv.Addr().String(), logger)
		if err != nil {
			return err
		}
		bookies = append(bookies, b)
	}
	printSandbox(out, sc, srv, bookies)

	stopped := make(chan error, len(bookies))
	for _, b := range bookies {
		go func() {
			<-b.Done()
			stopped <- fmt.Errorf("sandbox: bookie %s stopped: %w", b.ID(), b.Err())
		}()
	}
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
		return nil
	case err := <-stopped:
		return err
	}
}

// startSandboxBookie starts bookie n (from 1), registered with the
// coordination server at zkAddr.
func startSandboxBookie(ctx context.Context, sc sandboxConfig, n int, zkAddr string, logger *slog.Logger) (*bookie.Bookie, error) {
	dir := filepath.Join(sc.dataDir, "bookie-"+strconv.Itoa(n))
	cfg := bookie.Config{
		ListenAddr:        net.JoinHostPort("127.0.0.1", strconv.Itoa(sc.bookiePort+n-1)),
		AdvertisedAddress: "127.0.0.1",
		JournalDirs:       []string{filepath.Join(dir, "journal")},
		LedgerDirs:        []string{filepath.Join(dir, "ledgers")},
		MetadataServers:   []string{zkAddr},
		MetricsAddr:       "127.0.0.1:0",
		Logger:            logger.With("sandbox_bookie", n), // the bookie adds its id as "bookie"
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for _, d := range append(append([]string{}, cfg.JournalDirs...), cfg.LedgerDirs...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	b, err := bookie.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: bookie %d: %w", n, err)
	}
	if err := b.Start(ctx); err != nil {
		return nil, fmt.Errorf("sandbox: bookie %d: %w", n, err)
	}
	return b, nil
}

// printSandbox tells the user what runs where and how to use it.
func printSandbox(out io.Writer, sc sandboxConfig, srv *server.Server, bookies []*bookie.Bookie) {
	fmt.Fprintf(out, "keeper sandbox is running (data in %s). Press Ctrl-C to stop.\n", sc.dataDir)
	fmt.Fprintf(out, "  coordination server: %s\n", srv.Addr())
	if a := srv.AdminAddr(); a != nil {
		fmt.Fprintf(out, "  admin and metrics:   http://%s/commands  http://%s/metrics\n", a, a)
	}
	for _, b := range bookies {
		fmt.Fprintf(out, "  bookie:              %s (id %s)", b.Addr(), b.ID())
		if m := b.MetricsAddr(); m != nil {
			fmt.Fprintf(out, "  metrics http://%s/metrics", m)
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "  try: go run ./cmd/keeper shell --server %s ls /\n", srv.Addr())
	fmt.Fprintf(out, "   or: zkCli.sh -server %s\n", srv.Addr())
	if len(bookies) > 0 {
		fmt.Fprintf(out, "  ledgers: seq 5 | go run ./cmd/keeper ledger write --zk %s\n", srv.Addr())
		fmt.Fprintf(out, "   load: keeper bench ledger --zk %s --cpu-pid %d\n", srv.Addr(), os.Getpid())
	}
}
