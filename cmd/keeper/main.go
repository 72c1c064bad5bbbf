// Command keeper is the one binary of the keeper project: a
// ZooKeeper-compatible coordination server and the tools around it.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "keeper:", userError(err))
		os.Exit(1)
	}
}

// logLevel is set by the --log-level flag of the root command.
var logLevel = new(slog.LevelVar)

func newRootCmd() *cobra.Command {
	var level string
	root := &cobra.Command{
		Use:           "keeper",
		Short:         "A ZooKeeper-compatible coordination service",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return logLevel.UnmarshalText([]byte(level))
		},
	}
	root.PersistentFlags().StringVar(&level, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(newServerCmd(), newSandboxCmd())
	root.AddCommand(newShellCmd())
	root.AddCommand(newToolCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newBookieCmd(), newAutorecoveryCmd())
	root.AddCommand(newLedgerCmd())
	addVersion(root)
	return root
}

// newLogger returns the process logger: text on stderr.
func newLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))
}
