package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"keeper/coordination/server"
	"keeper/coordination/zoocfg"
	"keeper/internal/gctune"
)

func newServerCmd() *cobra.Command {
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "server [zoo.cfg]",
		Short: "Run a coordination server (Apache ZooKeeper's zoo.cfg format)",
		Long: `Run a coordination server. With a zoo.cfg it reads Apache ZooKeeper's
configuration format; without one it runs standalone on 127.0.0.1:2181 with
data under ./keeper-data.

A setting that protects data or access which keeper does not implement yet
(TLS between servers, GSSAPI/Kerberos, skipACL=yes, ...) stops the start
with an error naming it, whether it is in zoo.cfg or a -D flag in
SERVER_JVMFLAGS or JVMFLAGS; keeper reads its settings only from zoo.cfg,
but for the JAAS file of SASL (-Djava.security.auth.login.config, as
ZooKeeper takes it). docs/configuration.md lists the keys; docs/sasl.md
explains SASL.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := zoocfg.CheckServerEnv(os.Getenv); err != nil {
				return err
			}
			defer gctune.Start()()
			logger := newLogger()
			zc, err := loadZooConfig(args, logger)
			if err != nil {
				return err
			}
			defer shareHostProcessors(zc, logger)()
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			var static string // the static configuration file
			var text []byte   // the admin server's initial_configuration
			if len(args) > 0 {
				static = args[0]
				if text, err = os.ReadFile(static); err != nil {
					return err
				}
			}
			return runServer(cmd.Context(), zc, static, string(text), logger, nil)
		},
	}
	cmd.Flags().StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile (pprof) to this file until shutdown")
	return cmd
}

// startCPUProfile profiles the process until the returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// readMyID reads this member's id from dataDir/myid, as ZooKeeper does for
// a zoo.cfg with server.N lines; an error names both files.
func readMyID(cfgPath, dataDir string) (int64, error) {
	path := filepath.Join(dataDir, "myid")
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, fmt.Errorf("%s: the server.N lines make this an ensemble member, but %s file is missing (it holds this server's N)", cfgPath, path)
	case err != nil:
		return 0, fmt.Errorf("%s: %w", cfgPath, err)
	}
	id, err := zoocfg.ParseMyID(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %s%s", path, strings.TrimPrefix(err.Error(), "myid: "), "; want this server's N from the server.N lines")
	}
	return id, nil
}

// loadZooConfig reads zoo.cfg (and myid for an ensemble), or returns the
// standalone defaults when no file is given.
func loadZooConfig(args []string, logger *slog.Logger) (*zoocfg.Config, error) {
	if len(args) == 0 {
		zc := zoocfg.Default()
		zc.DataDir = "keeper-data"
		return zc, zc.Validate()
	}
	zc, err := readZooFile(args[0], logger)
	if err != nil {
		return nil, err
	}
	if zc.Distributed() {
		if zc.MyID, err = readMyID(args[0], zc.DataDir); err != nil {
			return nil, err
		}
	}
	if err := zc.Validate(); err != nil {
		return nil, zooFileError(args[0], err)
	}
	return zc, nil
}

// runServer serves until SIGINT or SIGTERM, then shuts down cleanly.
// static is the path of zoo.cfg ("" for none). ready, if not nil, is
// called once the server listens.
func runServer(ctx context.Context, zc *zoocfg.Config, static, initialConfig string, logger *slog.Logger,
	ready func(*server.Server)) error {
	if err := os.MkdirAll(zc.DataDir, 0o755); err != nil {
		return err
	}
	cfg := server.ConfigFromZoo(zc, logger)
	if q := cfg.Quorum; q != nil && q.Reconfig != nil {
		// The files ZooKeeper writes as the configuration changes go
		// beside the static file; an absolute path keeps them found from
		// any working directory.
		abs, err := filepath.Abs(static)
		if err != nil {
			return err
		}
		q.Reconfig.StaticFile = abs
	}
	cfg.InitialConfig = initialConfig
	auth, err := server.AuthFromZoo(zc, os.Getenv, logger)
	if err != nil {
		return err
	}
	cfg.Core.Auth = auth
	if cfg.Quorum != nil {
		if cfg.Quorum.SASL, err = server.QuorumSASLFromZoo(zc, os.Getenv, logger); err != nil {
			return err
		}
	}
	cfg.Storage.FS = storageFS(logger)
	cfg.Clock = serverClock()
	if err := overridePeerListen(cfg.Quorum); err != nil {
		return err
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	if ready != nil {
		ready(srv)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	logger.Info("shutting down")
	return srv.Close()
}
