package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"keeper/coordination/zkclient"
	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// autorecoveryFromFile reads the autorecovery keys of the bookkeeper.conf
// in args, if any, and the bookie settings that say where the metadata is
// (docs/autorecovery.md).
func autorecoveryFromFile(args []string) (bool, autorecovery.Config, bookie.Config, error) {
	props := map[string]string{}
	if len(args) == 1 {
		data, err := os.ReadFile(args[0])
		if err != nil {
			return false, autorecovery.Config{}, bookie.Config{}, err
		}
		if props, err = bookie.ParseProperties(data); err != nil {
			return false, autorecovery.Config{}, bookie.Config{}, fmt.Errorf("%s: %w", args[0], err)
		}
	}
	enabled, cfg, _, err := autorecovery.FromProperties(props)
	if err != nil {
		return false, cfg, bookie.Config{}, fmt.Errorf("%s: %s", args[0], strings.TrimPrefix(err.Error(), "bookkeeper.conf: "))
	}
	bcfg, _, err := bookie.ConfigFromProperties(props)
	if err != nil {
		return false, cfg, bcfg, fmt.Errorf("%s: %s", args[0], strings.TrimPrefix(err.Error(), "bookkeeper.conf: "))
	}
	return enabled, cfg, bcfg, nil
}

// notAutorecoveryKeys returns the keys of ignored that autorecovery does
// not read either, so that a bookie does not call its keys ignored.
func notAutorecoveryKeys(ignored []string) []string {
	keys := autorecovery.Keys()
	return slices.DeleteFunc(slices.Clone(ignored), func(k string) bool { return slices.Contains(keys, k) })
}

// openStore opens a metadata session of its own and a store on the layout
// the tree was formatted with. close ends both.
func openStore(ctx context.Context, servers []string, root string, timeout time.Duration, sec zkclient.Security,
	logger *slog.Logger) (*metadata.Store, func(), error) {
	sess, err := metadata.Dial(ctx, metadata.DialConfig{Servers: servers, SessionTimeout: timeout, Logger: logger,
		Security: sec})
	if err != nil {
		return nil, nil, err
	}
	cfg := metadata.Config{Root: root, Logger: logger}
	store, err := sess.NewStore(cfg)
	if err == nil {
		var layout metadata.Layout
		var found bool
		if layout, found, err = store.StoredLayout(ctx); err == nil && found && layout != cfg.Layout {
			store.Close()
			cfg.Layout = layout
			store, err = sess.NewStore(cfg)
		}
	}
	if err != nil {
		sess.Close()
		return nil, nil, err
	}
	return store, func() { store.Close(); sess.Close() }, nil
}

// startAutorecovery starts an autorecovery daemon with its own metadata
// session and ledger client, named id; stop ends it.
func startAutorecovery(ctx context.Context, servers []string, root, id string, cfg autorecovery.Config,
	clientTLS bookietls.Settings, zkSec zkclient.Security, logger *slog.Logger) (d *autorecovery.Daemon, stop func(), err error) {
	store, closeStore, err := openStore(ctx, servers, root, metadata.DefaultSessionTimeout, zkSec, logger)
	if err != nil {
		return nil, nil, fmt.Errorf("autorecovery: %w", err)
	}
	client, err := ledgerclient.New(ledgerclient.Config{ZKServers: servers, LedgersRoot: root, Logger: logger,
		Placement: cfg.Placement, Racks: cfg.Racks, RackInfoPath: cfg.RackInfoPath, TLS: clientTLS, ZKSecurity: zkSec})
	if err != nil {
		closeStore()
		return nil, nil, fmt.Errorf("autorecovery: %w", err)
	}
	cfg.Store, cfg.Client, cfg.ID, cfg.Logger = store, client, id, logger.With("component", "autorecovery")
	d, err = autorecovery.Start(ctx, cfg)
	if err != nil {
		client.Close()
		closeStore()
		return nil, nil, err
	}
	return d, func() { d.Close(); client.Close(); closeStore() }, nil
}

// bookieAutorecovery starts the autorecovery daemon of a bookie with
// autoRecoveryDaemonEnabled, under the bookie's id, and exports its
// figures with the bookie's metrics under "replication_", the scope
// BookKeeper's bookie gives its embedded autorecovery
// (docs/observability.md).
func bookieAutorecovery(ctx context.Context, b *bookie.Bookie, bcfg bookie.Config, cfg autorecovery.Config,
	logger *slog.Logger) (stop func(), err error) {
	d, stop, err := startAutorecovery(ctx, bcfg.MetadataServers, bcfg.LedgersRoot, b.ID(), cfg, bcfg.ClientTLS, bcfg.MetadataSecurity, logger)
	if err != nil {
		return nil, err
	}
	for _, f := range d.Figures() {
		name := "replication_" + f.Name
		switch f.Kind {
		case autorecovery.Gauge:
			err = b.RegisterGauge(name, f.Help, f.Value)
		case autorecovery.Counter:
			err = b.RegisterCounter(name, f.Help, f.Value)
		case autorecovery.Sizes:
			err = b.RegisterSizes(name, f.Help, f.Sizes)
		}
		if err != nil {
			stop()
			return nil, err
		}
	}
	return stop, nil
}

// autorecoveryFlags are `keeper autorecovery`'s flags.
type autorecoveryFlags struct {
	zkServers   []string
	ledgersRoot string
	id          string
	rackMapping string
}

func newAutorecoveryCmd() *cobra.Command {
	f := &autorecoveryFlags{}
	cmd := &cobra.Command{
		Use:   "autorecovery [bookkeeper.conf]",
		Short: "Run an autorecovery daemon: auditor election and a replication worker",
		Long: `Run BookKeeper-compatible autorecovery outside a bookie (bookkeeper autorecovery):
a vote in the auditor election under <ledgers root>/underreplication/auditorelection
(the elected auditor marks the ledgers of bookies gone for lostBookieRecoveryDelay)
and a replication worker that copies what a lost bookie held to another bookie
and swaps it out of the ledger's metadata. With a bookkeeper.conf it reads the
metadata servers (metadataServiceUri or zkServers, zkLedgersRootPath) and
lostBookieRecoveryDelay, auditorPeriodicCheckInterval,
auditorPeriodicBookieCheckInterval, openLedgerRereplicationGracePeriod,
rwRereplicateBackoffMs, rereplicationEntryBatchSize,
auditorPeriodicPlacementPolicyCheckInterval, the placement policy that
chooses replacement bookies (ensemblePlacementPolicy, minNumRacksPerWriteQuorum,
enforceMinNumRacksPerWriteQuorum, reppDnsResolverClass), and the TLS keys its
connections to bookies use (docs/bookie-tls.md). See docs/autorecovery.md.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			logger := newLogger()
			_, cfg, bcfg, err := autorecoveryFromFile(args)
			if err != nil {
				return err
			}
			if bcfg.MetadataSecurity, err = metadataSecurity(); err != nil {
				return err
			}
			servers, root := f.zkServers, f.ledgersRoot
			if len(servers) == 0 {
				servers = bcfg.MetadataServers
			}
			if root == "" {
				root = bcfg.LedgersRoot
			}
			if len(servers) == 0 {
				return errors.New("no metadata servers: give --zk-servers or a bookkeeper.conf")
			}
			if f.rackMapping != "" {
				data, err := os.ReadFile(f.rackMapping)
				if err != nil {
					return fmt.Errorf("--rack-mapping: %w", err)
				}
				if cfg.Racks, err = ledger.ParseStaticRacks(string(data)); err != nil {
					return fmt.Errorf("--rack-mapping %s: %w", f.rackMapping, err)
				}
			}
			if err := probeServers(servers, metadataProbeTimeout); err != nil {
				return err
			}
			id := f.id
			if id == "" {
				if id, err = os.Hostname(); err != nil {
					return err
				}
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			_, end, err := startAutorecovery(ctx, servers, root, id, cfg, bcfg.ClientTLS, bcfg.MetadataSecurity, logger)
			if err != nil {
				return err
			}
			<-ctx.Done()
			logger.Info("shutting down")
			end()
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.zkServers, "zk-servers", nil, "metadata servers host:port, comma-separated (zkServers)")
	fl.StringVar(&f.ledgersRoot, "ledgers-root", "", "ledgers root znode (zkLedgersRootPath; default /ledgers)")
	fl.StringVar(&f.id, "id", "", "name in the auditor votes and replication locks (default: the host name)")
	fl.StringVar(&f.rackMapping, "rack-mapping", "",
		"file of 'bookie /rack' lines placing bookies statically for the placement policy")
	return cmd
}
