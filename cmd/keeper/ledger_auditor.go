package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/metadata"
)

// The BookKeeper shell's commands about the auditor and the replication
// switch: triggeraudit, whoisauditor, lostbookierecoverydelay and
// autorecovery -enable/-disable (docs/autorecovery.md, "Tools").

// withManager runs fn with the under-replication manager of the flags'
// ledgers root.
func (f *ledgerFlags) withManager(cmd *cobra.Command, fn func(ctx context.Context, m *autorecovery.Manager) error) error {
	return f.withStore(cmd, func(ctx context.Context, st *metadata.Store) error {
		m, err := autorecovery.NewManager(ctx, st, "")
		if err != nil {
			return err
		}
		return fn(ctx, m)
	})
}

func newLedgerTriggerAuditCmd(f *ledgerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "triggeraudit",
		Short: "Make the auditor mark the ledgers of every lost bookie now",
		Long: `Make the elected auditor mark the ledgers of every bookie that is gone now, without
waiting for lostBookieRecoveryDelay ('bookkeeper shell triggeraudit'): the delay is
written back unchanged, which the auditor reads as "audit now". Refused when
replication is disabled, when no auditor is elected, or when no delay is stored.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withManager(cmd, func(ctx context.Context, m *autorecovery.Manager) error {
				if err := m.TriggerAudit(ctx); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "audit triggered")
				return nil
			})
		},
	}
}

func newLedgerWhoIsAuditorCmd(f *ledgerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "whoisauditor",
		Short: "Print the autorecovery process elected auditor",
		Long: `Print the id in the lowest vote of the auditor election
(<ledgers root>/underreplication/auditorelection), as 'bookkeeper shell
whoisauditor' does. Fails if nobody votes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withManager(cmd, func(ctx context.Context, m *autorecovery.Manager) error {
				id, ok, err := m.CurrentAuditor(ctx)
				if err != nil {
					return err
				}
				if !ok {
					return autorecovery.ErrNoAuditor
				}
				fmt.Fprintln(cmd.OutOrStdout(), id)
				return nil
			})
		},
	}
}

func newLedgerLostBookieRecoveryDelayCmd(f *ledgerFlags) *cobra.Command {
	var get bool
	var set int
	cmd := &cobra.Command{
		Use:   "lostbookierecoverydelay --get | --set <seconds>",
		Short: "Read or change lostBookieRecoveryDelay in the metadata store",
		Long: `Read (--get) or change (--set) the lostBookieRecoveryDelay stored under
<ledgers root>/underreplication, in seconds ('bookkeeper shell lostbookierecoverydelay').
The auditor follows a change at once; setting the value it already has makes it audit
now (see triggeraudit). Unlike BookKeeper's shell, --set 0 is a value, not "unset".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			setting := cmd.Flags().Changed("set")
			if get == setting {
				return errors.New("give one and only one of --get and --set")
			}
			if setting && set < 0 {
				return fmt.Errorf("--set %d: want whole seconds, not negative", set)
			}
			return f.withManager(cmd, func(ctx context.Context, m *autorecovery.Manager) error {
				if setting {
					if err := m.SetDelay(ctx, set); err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "lostBookieRecoveryDelay set to %d\n", set)
					return nil
				}
				seconds, err := m.StoredDelay(ctx)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), seconds)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&get, "get", false, "print the stored value, in seconds")
	cmd.Flags().IntVar(&set, "set", 0, "store this value, in seconds")
	return cmd
}

func newLedgerAutorecoverySwitchCmd(f *ledgerFlags) *cobra.Command {
	var enable, disable bool
	cmd := &cobra.Command{
		Use:   "autorecovery [--enable | --disable]",
		Short: "Pause or resume every replication worker, or say whether they run",
		Long: `Pause (--disable) or resume (--enable) every replication worker of the cluster by
creating or deleting <ledgers root>/underreplication/disable ('bookkeeper shell
autorecovery -enable|-disable'), then print "enabled" or "disabled". Without a flag
it only prints the state. The auditor still marks ledgers while workers are paused.
To run an autorecovery daemon, see 'keeper autorecovery'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if enable && disable {
				return errors.New("give at most one of --enable and --disable")
			}
			return f.withManager(cmd, func(ctx context.Context, m *autorecovery.Manager) error {
				var err error
				switch {
				case enable:
					err = m.Enable(ctx)
				case disable:
					err = m.Disable(ctx)
				}
				if err != nil && !errors.Is(err, autorecovery.ErrAlreadySet) {
					return err
				}
				on, err := m.ReplicationEnabled(ctx)
				if err != nil {
					return err
				}
				state := "disabled"
				if on {
					state = "enabled"
				}
				fmt.Fprintln(cmd.OutOrStdout(), state)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&enable, "enable", false, "resume the workers")
	cmd.Flags().BoolVar(&disable, "disable", false, "pause the workers")
	return cmd
}
