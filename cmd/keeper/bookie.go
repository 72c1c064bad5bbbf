package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"keeper/internal/gctune"
	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/bookie/entrystore"
)

// bookieExtraOptsEnv is where BookKeeper's bin/bookkeeper takes extra java
// flags for the bookie, whose ZooKeeper client reads ZooKeeper's system
// properties (zookeeper.client.secure, java.security.auth.login.config, ...).
const bookieExtraOptsEnv = "BOOKIE_EXTRA_OPTS"

// bookieFlags are `keeper bookie`'s flags for the common settings; a flag
// that is set overrides the configuration file.
type bookieFlags struct {
	port         int
	listenHost   string
	journalDirs  []string
	ledgerDirs   []string
	zkServers    []string
	metadataURI  string
	ledgersRoot  string
	bookieID     string
	advertised   string
	metricsAddr  string
	readOnlyMode bool
}

func newBookieCmd() *cobra.Command {
	cmd, _ := bookieCommand()
	return cmd
}

// bookieCommand returns `keeper bookie` and the flags it fills in.
func bookieCommand() (*cobra.Command, *bookieFlags) {
	f := &bookieFlags{}
	cmd := &cobra.Command{
		Use:   "bookie [bookkeeper.conf]",
		Short: "Run a bookie: BookKeeper-compatible ledger storage (v3 protocol)",
		Long: `Run a bookie. With a bookkeeper.conf it reads the BookKeeper server keys that
apply (bookiePort, journalDirectories, ledgerDirectories, metadataServiceUri or
zkServers, zkLedgersRootPath, journalSyncData, journalMaxGroupWaitMSec,
journalBufferedWritesThreshold, journalFlushWhenQueueEmpty (default true:
an idle journal syncs an add at once), diskUsageThreshold, diskUsageWarnThreshold,
gcWaitTime, minor/majorCompactionThreshold and Interval, readOnlyModeEnabled,
and more; see the bookie package), and BookKeeper's TLS keys
(tlsProviderFactoryClass, tlsKeyStore, ...; docs/bookie-tls.md). A key that
protects data or access which keeper does not implement yet
(bookieAuthProviderFactoryClass, zkEnableSecurity=true, a TLS key keeper does
not read, ...) stops the start with a message naming it; other keys are
ignored. The metadata client connects with TLS and SASL DIGEST-MD5 as the -D
flags in BOOKIE_EXTRA_OPTS ask (zookeeper.client.secure, zookeeper.ssl.*,
java.security.auth.login.config; docs/tls.md, docs/sasl.md), and a flag it
cannot honour stops the start. Flags override the file. Defaults: port 3181,
ledgers root /ledgers. An invalid value stops the start with a message naming
its key.

The metadata servers are ZooKeeper or keeper servers. If the ledgers tree does
not exist it is created, as 'bookkeeper shell metaformat' would.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			logger := newLogger()
			cfg, err := loadBookieConfig(cmd, args, f, logger)
			if err != nil {
				return err
			}
			arOn, arCfg, _, err := autorecoveryFromFile(args)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			defer gctune.Start()()
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var arErr error
			stopRecovery := func() {}
			err = runBookie(ctx, cfg, logger, func(b *bookie.Bookie) {
				if !arOn {
					return
				}
				// autoRecoveryDaemonEnabled: the bookie runs an auditor
				// vote and a worker too, or does not run at all.
				if stopRecovery, arErr = bookieAutorecovery(ctx, b, cfg, arCfg, logger); arErr != nil {
					stopRecovery = func() {}
					cancel()
				}
			})
			stopRecovery()
			return errors.Join(arErr, err)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.port, "port", bookie.DefaultPort, "port to listen on (bookiePort)")
	fl.StringVar(&f.listenHost, "listen-host", "", "address to listen on; empty: every interface")
	fl.StringSliceVar(&f.journalDirs, "journal-dirs", nil, "journal directories, comma-separated (journalDirectories)")
	fl.StringSliceVar(&f.ledgerDirs, "ledger-dirs", nil, "ledger directories, comma-separated (ledgerDirectories)")
	fl.StringSliceVar(&f.zkServers, "zk-servers", nil, "metadata servers host:port, comma-separated (zkServers)")
	fl.StringVar(&f.metadataURI, "metadata-uri", "", "metadata service URI, e.g. zk+hierarchical://h1:2181;h2:2181/ledgers")
	fl.StringVar(&f.ledgersRoot, "ledgers-root", "", "ledgers root znode (zkLedgersRootPath; default /ledgers)")
	fl.StringVar(&f.bookieID, "bookie-id", "", "bookie id (bookieId; default advertised address:port)")
	fl.StringVar(&f.advertised, "advertised-address", "", "host clients dial (advertisedAddress)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this host:port at /metrics")
	fl.BoolVar(&f.readOnlyMode, "read-only-mode", true, "turn read-only when disks fill, instead of stopping (readOnlyModeEnabled)")
	cmd.AddCommand(newBookieLastMarkCmd(), newBookieListFilesCmd())
	return cmd, f
}

// confFileError words an error about the bookkeeper.conf at path: in its
// own name, with the line of a misspelt key or of a key whose value is
// refused.
func confFileError(path string, data []byte, err error) error {
	var typo *bookie.TypoError
	if errors.As(err, &typo) {
		return fmt.Errorf("%s:%d: unknown key %s; did you mean %s?", path, propertyLine(data, typo.Key), typo.Key, typo.Known)
	}
	var bad *bookie.KeyError
	if errors.As(err, &bad) {
		if line := propertyLine(data, bad.Key); line > 0 {
			return fmt.Errorf("%s:%d: %s: %s", path, line, bad.Key, bad.Reason)
		}
	}
	return fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "bookkeeper.conf: "))
}

// propertyLine returns the 1-based line of data where key is set, the last
// one if it is set more than once (its value is the one that counts), 0
// if none is found.
func propertyLine(data []byte, key string) int {
	line := 0
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimLeft(l, " \t\f")
		if rest, ok := strings.CutPrefix(l, key); ok && (rest == "" || strings.ContainsAny(rest[:1], "=: \t\f")) {
			line = i + 1
		}
	}
	return line
}

// loadBookieConfig reads the configuration file, if any, and applies the
// flags that were set.
func loadBookieConfig(cmd *cobra.Command, args []string, f *bookieFlags, logger *slog.Logger) (bookie.Config, error) {
	cfg := bookie.Config{ListenAddr: net.JoinHostPort("", strconv.Itoa(bookie.DefaultPort))}
	sec, err := metadataSecurity()
	if err != nil {
		return cfg, err
	}
	if len(args) == 1 {
		data, err := os.ReadFile(args[0])
		if err != nil {
			return cfg, err
		}
		props, err := bookie.ParseProperties(data)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", args[0], err)
		}
		var ignored []string
		if cfg, ignored, err = bookie.ConfigFromProperties(props); err != nil {
			return cfg, confFileError(args[0], data, err)
		}
		if ignored = notAutorecoveryKeys(ignored); len(ignored) > 0 {
			// BookKeeper ignores them too, but a key meant for keeper
			// that is not one of its keys changes nothing: say so.
			logger.Warn("configuration keys keeper does not use; ignored", "file", args[0],
				"keys", strings.Join(ignored, ","))
		}
	}
	fl := cmd.Flags()
	if fl.Changed("port") || fl.Changed("listen-host") {
		_, port, _ := net.SplitHostPort(cfg.ListenAddr)
		if fl.Changed("port") {
			port = strconv.Itoa(f.port)
		}
		cfg.ListenAddr = net.JoinHostPort(f.listenHost, port)
	}
	if fl.Changed("journal-dirs") {
		cfg.JournalDirs = f.journalDirs
	}
	if fl.Changed("ledger-dirs") {
		cfg.LedgerDirs = f.ledgerDirs
	}
	if fl.Changed("metadata-uri") {
		props := map[string]string{"metadataServiceUri": f.metadataURI}
		m, _, err := bookie.ConfigFromProperties(props)
		if err != nil {
			return cfg, fmt.Errorf("--metadata-uri: %w", err)
		}
		cfg.MetadataServers, cfg.LedgersRoot = m.MetadataServers, m.LedgersRoot
	}
	if fl.Changed("zk-servers") {
		cfg.MetadataServers = f.zkServers
	}
	if fl.Changed("ledgers-root") {
		cfg.LedgersRoot = f.ledgersRoot
	}
	if fl.Changed("bookie-id") {
		cfg.BookieID = f.bookieID
	}
	if fl.Changed("advertised-address") {
		cfg.AdvertisedAddress = f.advertised
	}
	if fl.Changed("metrics-addr") {
		cfg.MetricsAddr = f.metricsAddr
	}
	if fl.Changed("read-only-mode") {
		cfg.ReadOnlyModeDisabled = !f.readOnlyMode
	}
	cfg.Logger = logger
	cfg.MetadataSecurity = sec
	return cfg, cfg.Validate()
}

// runBookie runs a bookie until ctx ends or the bookie stops on its own.
// ready, if set, is called once it serves.
func runBookie(ctx context.Context, cfg bookie.Config, logger *slog.Logger, ready func(*bookie.Bookie)) error {
	for _, d := range append(append([]string{}, cfg.JournalDirs...), cfg.LedgerDirs...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if cfg.FS == nil {
		if cfg.FS = storageFS(logger); cfg.FS != nil && cfg.StoreConfig == nil {
			cfg.StoreConfig = entrystore.IndexOnOS // the wrapped FS is the OS's; so is pebble's
		}
	}
	// The admin API's autorecovery endpoints make the calls `keeper
	// ledger` makes.
	closeAdmin := wireHTTPAdmin(&cfg, logger)
	defer closeAdmin()
	b, err := bookie.New(cfg)
	if err != nil {
		return err
	}
	if err := b.Start(ctx); err != nil {
		return err
	}
	if ready != nil {
		ready(b)
	}
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
		return b.Close()
	case <-b.Done():
		return b.Err()
	}
}
