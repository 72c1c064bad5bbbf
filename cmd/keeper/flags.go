package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// withSingleDashFlags lets cmd take the long flags named in dashed with
// one dash, as the tools keeper stands in for spell them (zkCli's -server,
// the BookKeeper shell's -Qw), where pflag would read "-server" as the
// shorthands s, e, r, ... It parses the flags itself, rewriting those
// names to their two-dash forms, and then runs run, or prints the help
// for --help and -h and does nothing else.
func withSingleDashFlags(cmd *cobra.Command, dashed []string, run func(cmd *cobra.Command, args []string) error) {
	cmd.DisableFlagParsing = true
	validate := cmd.Args
	cmd.Args = cobra.ArbitraryArgs // the flags are still among them
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		fs := cmd.Flags()
		fs.AddFlagSet(cmd.InheritedFlags())
		norm := make([]string, 0, len(args))
		for i, a := range args {
			if a == "--" {
				norm = append(norm, args[i:]...)
				break
			}
			for _, name := range dashed {
				if a == name || strings.HasPrefix(a, name+"=") {
					a = "-" + a
				}
			}
			norm = append(norm, a)
		}
		err := fs.Parse(norm)
		if help, _ := fs.GetBool("help"); help || errors.Is(err, pflag.ErrHelp) {
			return cmd.Help()
		}
		if err != nil {
			return err
		}
		if validate != nil {
			if err := validate(cmd, fs.Args()); err != nil {
				return err
			}
		}
		// The root's hook ran before these flags were parsed; run it again
		// so that --log-level after the subcommand applies.
		if pre := cmd.Root().PersistentPreRunE; pre != nil {
			if err := pre(cmd, fs.Args()); err != nil {
				return err
			}
		}
		return run(cmd, fs.Args())
	}
}
