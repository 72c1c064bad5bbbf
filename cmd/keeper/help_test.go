package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandHelp runs every command and subcommand of keeper with
// --help and with -h, with no server anywhere: each must print its help,
// exit 0, and do nothing else (no file created in the working directory,
// no connection, no ledger).
func TestEveryCommandHelp(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	root := newRootCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	walk(root, nil)
	if len(paths) < 20 {
		t.Fatalf("walked only %d commands: %v", len(paths), paths)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for _, path := range paths {
		for _, flag := range []string{"--help", "-h"} {
			args := append(append([]string(nil), path...), flag)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var out bytes.Buffer
				root := newRootCmd()
				root.SetArgs(args)
				root.SetOut(&out)
				root.SetErr(&out)
				root.SetIn(strings.NewReader("an entry that must not be written\n"))
				if err := root.Execute(); err != nil {
					t.Fatalf("keeper %v: %v\n%s", args, err, out.String())
				}
				if !strings.Contains(out.String(), "Usage:") {
					t.Fatalf("keeper %v printed no usage:\n%s", args, out.String())
				}
				if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
					t.Fatalf("keeper %v left %v in the working directory (%v)", args, entries, err)
				}
			})
		}
	}
}
