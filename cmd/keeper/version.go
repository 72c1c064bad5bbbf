package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"keeper/coordination/admin"
)

// addVersion gives root `keeper version` and `keeper --version`, both
// printing the build information srvr and envi report.
func addVersion(root *cobra.Command) {
	root.Version = admin.ReadBuild().FullVersion()
	root.SetVersionTemplate("{{.Version}}\n")
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print keeper's version, VCS revision and build time",
		Long: `Print keeper's version line (the one srvr and stat report), then the
ZooKeeper release it speaks, the module version, the VCS revision, the commit
time and the Go toolchain; with --json, the same as one JSON record.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return printVersionJSON(cmd.OutOrStdout(), admin.ReadBuild())
			}
			return printVersion(cmd.OutOrStdout(), admin.ReadBuild())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the build information as a JSON record")
	root.AddCommand(cmd)
}

// versionRecord is `keeper version --json`'s output; an unknown revision
// or time is empty.
type versionRecord struct {
	FullVersion      string `json:"full_version"`
	ZooKeeperVersion string `json:"zookeeper_version"`
	Version          string `json:"version"`
	Revision         string `json:"revision"`
	Modified         bool   `json:"modified"`
	Time             string `json:"time"`
	GoVersion        string `json:"go_version"`
}

func printVersionJSON(w io.Writer, b admin.Build) error {
	rec := versionRecord{FullVersion: b.FullVersion(), ZooKeeperVersion: b.ZooKeeperVersion, Version: b.Version,
		Revision: b.Revision, Modified: b.Modified, GoVersion: b.GoVersion}
	if !b.Time.IsZero() {
		rec.Time = b.Time.UTC().Format(time.RFC3339)
	}
	return json.NewEncoder(w).Encode(rec)
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
