package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"keeper/bench"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// benchNullBookieConfig is what `keeper bench null-bookie` serves.
type benchNullBookieConfig struct {
	ZK      string
	Root    string
	Host    string
	Port    int
	Bookies int
	Dir     string
}

func newBenchNullBookieCmd() *cobra.Command {
	cfg := benchNullBookieConfig{}
	cmd := &cobra.Command{
		Use:   "null-bookie",
		Short: "Run null bookies: each add is written and fdatasynced, and nothing else is done",
		Long: `Run --bookies null bookies on consecutive ports from --port, registered with the
coordination server --zk (under --ledgers-root, created as a bookie would if
missing), until interrupted. A null bookie answers BookKeeper's v3 ADD_ENTRY
once the add's body is appended to its file in --dir and fdatasynced (the adds
a connection sent together share the write and the sync); it indexes nothing,
serves no reads and answers every other request EBADREQ. bench ledger against
null bookies measures the floor under an add on this machine: the ledger
client, the network and the disk, and no bookie. It prints the bookies'
addresses on stdout.

  keeper bench null-bookie --zk 127.0.0.1:2181 --port 3181 --dir /tmp/null`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runBenchNullBookie(ctx, cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.ZK, "zk", "127.0.0.1:2181", "coordination server to register with, host:port")
	f.StringVar(&cfg.Root, "ledgers-root", "/ledgers", "the ledgers root znode")
	f.StringVar(&cfg.Host, "host", "127.0.0.1", "address to listen on and register")
	f.IntVar(&cfg.Port, "port", 3181, "port of the first null bookie; the others take the next ones (0: each a free one)")
	f.IntVar(&cfg.Bookies, "bookies", 3, "number of null bookies")
	f.StringVar(&cfg.Dir, "dir", "", "directory for the bookies' files (required; each file must not exist yet)")
	return cmd
}

// runBenchNullBookie serves until ctx ends, then unregisters the bookies.
func runBenchNullBookie(ctx context.Context, cfg benchNullBookieConfig, out io.Writer) error {
	if cfg.Dir == "" || cfg.Bookies < 1 || cfg.Port < 0 || cfg.Port+cfg.Bookies-1 > 65535 {
		return errors.New("bench null-bookie: --dir is required, --bookies must be positive and the ports within their range")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("bench null-bookie: %w", err)
	}
	sess, err := metadata.Dial(ctx, metadata.DialConfig{Servers: []string{cfg.ZK}})
	if err != nil {
		return fmt.Errorf("bench null-bookie: %w", err)
	}
	defer sess.Close()
	store, err := sess.OpenTree(ctx, metadata.Config{Root: cfg.Root})
	if err != nil {
		return fmt.Errorf("bench null-bookie: %w", err)
	}
	defer store.Close()
	for i := range cfg.Bookies {
		port := 0
		if cfg.Port > 0 {
			port = cfg.Port + i
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("bench null-bookie: %w", err)
		}
		addr := ln.Addr().String()
		b, err := bench.StartNullBookie(ln, filepath.Join(cfg.Dir, "null-bookie-"+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)))
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer b.Close()
		data, err := metadata.RegistrationData(addr, "")
		if err != nil {
			return fmt.Errorf("bench null-bookie: %w", err)
		}
		reg, err := store.NewRegistration(metadata.RegistrationConfig{ID: ledger.BookieID(addr), Data: data})
		if err != nil {
			return fmt.Errorf("bench null-bookie: %w", err)
		}
		if err := reg.Register(ctx); err != nil {
			return fmt.Errorf("bench null-bookie: %w", err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = reg.Close(cctx)
		}()
		if _, err := fmt.Fprintln(out, addr); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}
