package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"keeper/bench"
)

func newBenchNullEnsembleCmd() *cobra.Command {
	var host, dir string
	cmd := &cobra.Command{
		Use:   "null-ensemble",
		Short: "Run a null 3-member ensemble: each write is forwarded, proposed, logged with fdatasync by every member and committed, and nothing else is done",
		Long: `Run three null ensemble members in this process until interrupted. Each
answers the ZooKeeper client protocol as bench null does (every reply empty and
successful, nothing stored, no watches), except that a write is answered only
once it has taken a Zab write's steps: from the client's member to the leader
(the second member), from the leader to both followers, appended to a log file
in --dir and fdatasynced by every member, committed by the leader once two of
the three syncs are done, and the commit seen by the client's member. Members
talk over loopback TCP. bench zk against it measures the floor under an
ensemble's write on this machine: the hops and the syncs, and no server. It
prints the three client addresses on stdout, comma-separated, the leader's
second (a single client of the first is a follower's, as in bench/lib.sh's
ensembles).

  keeper bench null-ensemble --dir /tmp/null-ensemble`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runBenchNullEnsemble(ctx, host, dir, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&host, "host", "127.0.0.1", "address to listen on (each member takes free ports)")
	f.StringVar(&dir, "dir", "", "directory for the members' log files (required; the files must not exist yet)")
	return cmd
}

// runBenchNullEnsemble serves until ctx ends; a failed log or member link
// ends it with that error.
func runBenchNullEnsemble(ctx context.Context, host, dir string, out io.Writer) error {
	if dir == "" {
		return errors.New("bench null-ensemble: --dir is required")
	}
	e, err := bench.StartNullEnsemble(host, dir)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, strings.Join(e.Addrs(), ",")); err != nil {
		e.Close()
		return err
	}
	select {
	case <-ctx.Done():
	case <-e.Failed():
	}
	ferr := e.Err()
	return errors.Join(ferr, e.Close())
}
