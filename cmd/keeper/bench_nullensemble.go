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
	cfg := bench.NullEnsembleConfig{}
	cmd := &cobra.Command{
		Use:   "null-ensemble",
		Short: "Run a null 3-member ensemble: each write is forwarded, proposed, logged with fdatasync by every member and committed, and nothing else is done",
		Long: `Run null ensemble members until interrupted: all three in this process, or
with --members the ones given, the others in other processes (as three servers
run), linked through --peer-addr, where the leader listens. Each answers the ZooKeeper client protocol as bench null does (every reply empty and
successful, nothing stored, no watches), except that a write is answered only
once it has taken a Zab write's steps: from the client's member to the leader
(the second member), from the leader to both followers, appended to a log file
in --dir and fdatasynced by every member, committed by the leader once two of
the three syncs are done, and the commit seen by the client's member. Members
talk over TCP. bench zk against it measures the floor under an ensemble's
write on this machine: the hops and the syncs, and no server. It prints the
client addresses of its members on stdout, comma-separated, in member order
(with all three, the leader's second: a single client of the first is a
follower's, as in bench/lib.sh's ensembles), once the members are linked.

  keeper bench null-ensemble --dir /tmp/null-ensemble
  keeper bench null-ensemble --dir /tmp/ne --members 2 --peer-addr 127.0.0.1:2888 &
  keeper bench null-ensemble --dir /tmp/ne --members 1 --peer-addr 127.0.0.1:2888 &
  keeper bench null-ensemble --dir /tmp/ne --members 3 --peer-addr 127.0.0.1:2888 &`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runBenchNullEnsemble(ctx, cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Host, "host", "127.0.0.1", "address the clients' listeners take free ports on")
	f.StringVar(&cfg.Dir, "dir", "", "directory for the members' log files, member<N>.log (required; the files must not exist yet)")
	f.IntSliceVar(&cfg.Members, "members", nil, "the members to run here, of 1, 2 and 3 (2 leads); default all three")
	f.StringVar(&cfg.PeerAddr, "peer-addr", "", "where the leader listens for its followers' links (required unless all three run here)")
	return cmd
}

// runBenchNullEnsemble serves until ctx ends; a failed log or member link
// ends it with that error.
func runBenchNullEnsemble(ctx context.Context, cfg bench.NullEnsembleConfig, out io.Writer) error {
	if cfg.Dir == "" {
		return errors.New("bench null-ensemble: --dir is required")
	}
	e, err := bench.StartNullEnsemble(cfg)
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
