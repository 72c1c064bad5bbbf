package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"keeper/coordination/admin"
)

// addVersion gives root `keeper version` and `keeper --version`, both
// printing the build information srvr and envi report.
func addVersion(root *cobra.Command) {
	root.Version = admin.ReadBuild().FullVersion()
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print keeper's version, VCS revision and build time",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), admin.ReadBuild())
		},
	})
}

// printVersion writes the srvr version line, then the build's parts.
func printVersion(w io.Writer, b admin.Build) error {
	rev := b.Revision
	if rev == "" {
		rev = "unknown"
	}
	if b.Modified {
		rev += " (modified)"
	}
	built := "unknown"
	if !b.Time.IsZero() {
		built = b.Time.UTC().Format("2006-01-02T15:04:05Z")
	}
	_, err := fmt.Fprintf(w, "%s\nzookeeper: %s\nversion:   %s\nrevision:  %s\ntime:      %s\ngo:        %s\n",
		b.FullVersion(), b.ZooKeeperVersion, b.Version, rev, built, b.GoVersion)
	return err
}
