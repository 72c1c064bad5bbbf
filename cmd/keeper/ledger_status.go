package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/metadata"
)

// The BookKeeper shell's cluster views: clusterinfo and
// queryautorecoverystatus.

// withStoreManager runs fn with a metadata store and the under-replication
// manager on it.
func (f *ledgerFlags) withStoreManager(cmd *cobra.Command,
	fn func(ctx context.Context, st *metadata.Store, m *autorecovery.Manager) error) error {
	return f.withStore(cmd, func(ctx context.Context, st *metadata.Store) error {
		m, err := autorecovery.NewManager(ctx, st, "")
		if err != nil {
			return err
		}
		return fn(ctx, st, m)
	})
}

// clusterInfo is BookKeeper's ClusterInfo, in its field order: what the
// bookie's /api/v1/bookie/cluster_info answers too.
type clusterInfo struct {
	AuditorElected           bool   `json:"auditorElected"`
	AuditorID                string `json:"auditorId"`
	ClusterUnderReplicated   bool   `json:"clusterUnderReplicated"`
	LedgerReplicationEnabled bool   `json:"ledgerReplicationEnabled"`
	TotalBookiesCount        int    `json:"totalBookiesCount"`
	WritableBookiesCount     int    `json:"writableBookiesCount"`
	ReadonlyBookiesCount     int    `json:"readonlyBookiesCount"`
	UnavailableBookiesCount  int    `json:"unavailableBookiesCount"`
}

func newLedgerClusterInfoCmd(f *ledgerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "clusterinfo",
		Short: "Print the cluster's auditor, replication state and bookie counts as JSON",
		Long: `Print what 'bookkeeper shell clusterinfo' prints, as a JSON object: whether an
auditor is elected and its id, whether any ledger is marked under-replicated, whether
replication is enabled, and the bookies counted: every bookie with a cookie (total),
the registered writable and read-only ones, and the rest (unavailable).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStoreManager(cmd, func(ctx context.Context, st *metadata.Store, m *autorecovery.Manager) error {
				var info clusterInfo
				marked, err := m.List(ctx)
				if err != nil {
					return err
				}
				info.ClusterUnderReplicated = len(marked) > 0
				if info.LedgerReplicationEnabled, err = m.ReplicationEnabled(ctx); err != nil {
					return err
				}
				// As in BookKeeper, an auditor that cannot be read counts as none.
				if id, ok, err := m.CurrentAuditor(ctx); err == nil && ok {
					info.AuditorElected, info.AuditorID = true, id
				}
				all, err := st.CookieBookies(ctx)
				if err != nil {
					return err
				}
				reg, err := st.Bookies(ctx)
				if err != nil {
					return err
				}
				info.TotalBookiesCount = len(all)
				info.WritableBookiesCount, info.ReadonlyBookiesCount = len(reg.Writable), len(reg.ReadOnly)
				info.UnavailableBookiesCount = len(all) - len(reg.Writable) - len(reg.ReadOnly)
				out, err := json.MarshalIndent(info, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), string(out))
				return nil
			})
		},
	}
}

func newLedgerQueryAutorecoveryStatusCmd(f *ledgerFlags) *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "queryautorecoverystatus [-v]",
		Short: "List the under-replicated ledgers a replication worker is copying now",
		Long: `List the ledgers marked under-replicated whose lock a replication worker holds,
that is, those being re-replicated now ('bookkeeper shell queryautorecoverystatus'):
a heading, then a line per ledger with its id and the worker; -v (--verbose) adds the
ledger's length in bytes from its metadata. "No Ledger is being recovered" if none.`,
		Args: cobra.NoArgs,
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return f.withStoreManager(cmd, func(ctx context.Context, st *metadata.Store, m *autorecovery.Manager) error {
			marked, err := m.List(ctx)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, "CurrentRecoverLedgerInfo:")
			n := 0
			for _, l := range marked {
				worker, locked, err := m.Locked(ctx, l.LedgerID)
				if err != nil {
					return err
				}
				if !locked {
					continue
				}
				n++
				if !verbose {
					fmt.Fprintf(out, "\tLedgerId: %d\tBookieId: %s\n", l.LedgerID, worker)
					continue
				}
				md, _, err := st.Read(ctx, l.LedgerID)
				if err != nil {
					return fmt.Errorf("ledger %d: %w", l.LedgerID, err)
				}
				fmt.Fprintf(out, "\tLedgerId: %d\tBookieId: %s\tLedgerSize: %d\n", l.LedgerID, worker, md.Length)
			}
			if n == 0 {
				fmt.Fprintln(out, "No Ledger is being recovered")
			}
			return nil
		})
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "add each ledger's length in bytes")
	return cmd
}
