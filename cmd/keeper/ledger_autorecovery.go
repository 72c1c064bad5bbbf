package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// withStore runs fn with a metadata store of its own on the flags' servers.
func (f *ledgerFlags) withStore(cmd *cobra.Command, fn func(ctx context.Context, st *metadata.Store) error) error {
	servers := strings.Split(f.zk, ",")
	if err := probeServers(servers, metadataProbeTimeout); err != nil {
		return err
	}
	sec, err := metadataSecurity()
	if err != nil {
		return err
	}
	ctx, stop := signalContext(cmd.Context())
	defer stop()
	st, closeStore, err := openStore(ctx, servers, f.root, metadata.DefaultSessionTimeout, sec, quietLogger(cmd))
	if err != nil {
		return err
	}
	defer closeStore()
	return fn(ctx, st)
}

func newLedgerUnderreplicatedCmd(f *ledgerFlags) *cobra.Command {
	var missing, excluding string
	var count bool
	cmd := &cobra.Command{
		Use:   "underreplicated",
		Short: "List the ledgers marked under-replicated, their missing bookies and the worker on each",
		Long: `List the ledgers the auditor (or decommission, recover-bookie) marked under
<ledgers root>/underreplication/ledgers, as 'bookkeeper shell listunderreplicated
-printmissingreplica -printreplicationworkerid' does: one line per ledger with the
ledger id, the missing bookies and the replication worker holding its lock ("-" if none).
--missingreplica keeps the ledgers missing that bookie, --excludingmissingreplica drops
those missing it, and --count prints only how many ledgers are listed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			keep := autorecovery.ReplicaFilter(missing, excluding)
			return f.withManager(cmd, func(ctx context.Context, mgr *autorecovery.Manager) error {
				list, err := mgr.List(ctx)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				n := 0
				for _, m := range list {
					if keep != nil && !keep(m.Replicas) {
						continue
					}
					n++
					if count {
						continue
					}
					worker, locked, err := mgr.Locked(ctx, m.LedgerID)
					if err != nil {
						return err
					}
					if !locked || worker == "" {
						worker = "-"
					}
					fmt.Fprintf(out, "%d\t%s\t%s\n", m.LedgerID, strings.Join(m.Replicas, ","), worker)
				}
				if count {
					fmt.Fprintln(out, n)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&missing, "missingreplica", "", "only ledgers missing this bookie")
	cmd.Flags().StringVar(&excluding, "excludingmissingreplica", "", "leave out ledgers missing this bookie")
	cmd.Flags().BoolVarP(&count, "count", "c", false, "print only the number of ledgers listed (onlydisplayledgercount)")
	return cmd
}

// recoverFlags are recover-bookie's and decommission's.
type recoverFlags struct {
	timeout time.Duration
	grace   time.Duration
}

func newLedgerRecoverBookieCmd(f *ledgerFlags) *cobra.Command {
	return bookieRecoveryCmd(f, "recover-bookie <bookie-id>",
		"Copy everything a dead bookie held to other bookies now",
		`Re-replicate a bookie that is gone ('bookkeeper shell recover'): mark every ledger
with a segment on it under-replicated, and run a replication worker in this process
until no ledger names the bookie. Autorecovery daemons, if any, share the work. The
bookie must not be registered: a live bookie is decommissioned after it is stopped.`, false)
}

func newLedgerDecommissionCmd(f *ledgerFlags) *cobra.Command {
	return bookieRecoveryCmd(f, "decommission <bookie-id>",
		"Move everything a stopped bookie held to other bookies, then delete its cookie",
		`Decommission a stopped bookie ('bookkeeper shell decommissionbookie'): mark every
ledger with a segment on it under-replicated, run a replication worker in this process
until no ledger names the bookie, then delete the bookie's cookie so that its id can
be used again. The bookie must be stopped first.`, true)
}

func bookieRecoveryCmd(f *ledgerFlags, use, short, long string, decommission bool) *cobra.Command {
	rf := &recoverFlags{}
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b := ledger.BookieID(args[0])
			if err := b.Validate(); err != nil {
				return err
			}
			c, err := f.client(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			return f.withStore(cmd, func(ctx context.Context, st *metadata.Store) error {
				if rf.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, rf.timeout)
					defer cancel()
				}
				n, err := recoverBookie(ctx, st, c, b, rf, cmd)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "bookie %s: %d ledgers re-replicated\n", b, n)
				if decommission {
					if err := autorecovery.DeleteCookie(ctx, st, b); err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "bookie %s: decommissioned\n", b)
				}
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&rf.timeout, "timeout", 0, "give up after this long (0: wait until done)")
	cmd.Flags().DurationVar(&rf.grace, "open-ledger-grace", autorecovery.DefaultOpenLedgerRereplicationGracePeriod,
		"how long an open ledger's writer gets to replace the bookie itself before the ledger is recovered "+
			"(openLedgerRereplicationGracePeriod)")
	return cmd
}

// recoverBookie marks b's ledgers and runs a worker until none names b.
func recoverBookie(ctx context.Context, st *metadata.Store, c *ledgerclient.Client, b ledger.BookieID,
	rf *recoverFlags, cmd *cobra.Command) (int, error) {
	return autorecovery.RecoverBookies(ctx, autorecovery.RecoverConfig{Store: st, Client: c,
		WorkerID: "keeper-ledger-" + strconv.Itoa(os.Getpid()), OpenLedgerRereplicationGracePeriod: rf.grace,
		Logger: quietLogger(cmd)}, []ledger.BookieID{b})
}

// quietLogger logs warnings and errors only, unless --log-level was given:
// a command's output is what it prints.
func quietLogger(cmd *cobra.Command) *slog.Logger {
	if fl := cmd.Root().PersistentFlags().Lookup("log-level"); fl != nil && fl.Changed {
		return newLogger()
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
