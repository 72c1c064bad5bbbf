package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"keeper/coordination/jute"
	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// toolEnv is what every tool subcommand works with: the filesystem (the
// real one, vfs.Default), where output goes, how times print, and the
// bound on record sizes.
type toolEnv struct {
	fs             vfs.FS
	out            io.Writer
	loc            *time.Location
	maxRecordBytes int
}

// toolFlags are the flags every tool subcommand shares.
type toolFlags struct {
	utc           bool
	juteMaxBuffer int
}

func (f *toolFlags) env(cmd *cobra.Command) *toolEnv {
	loc := time.Local
	if f.utc {
		loc = time.UTC
	}
	// Reading a multi-GB snapshot or log takes a while: say how far it is
	// on stderr, apart from the output.
	fs := newProgressFS(vfs.Default, cmd.ErrOrStderr(), toolProgressInterval)
	return &toolEnv{fs: fs, out: cmd.OutOrStdout(), loc: loc, maxRecordBytes: f.juteMaxBuffer + 1024}
}

func (e *toolEnv) printf(format string, args ...any) { fmt.Fprintf(e.out, format, args...) }

// logConfig is how the tools read (and truncate) the log: records are
// bounded as the server bounds them.
func (e *toolEnv) logConfig() txnlog.Config {
	return txnlog.Config{MaxRecordBytes: e.maxRecordBytes}
}

func newToolCmd() *cobra.Command {
	flags := &toolFlags{}
	cmd := &cobra.Command{
		Use:   "tool",
		Short: "Inspect and repair a data directory (transaction logs, snapshots, purge)",
		Long: `Offline tools for the files of a keeper or Apache ZooKeeper data directory.
The tools that change files (purge, txnlog truncate --yes, recover --yes) take the directory's
lock (keeper.lock) as a server does, and refuse to run while a keeper process
uses it; the others only read. A directory argument may be the dataDir or
dataLogDir of zoo.cfg, or the version-2 directory inside it.`,
	}
	cmd.PersistentFlags().BoolVar(&flags.utc, "utc", false, "print times in UTC instead of the local zone")
	cmd.PersistentFlags().IntVar(&flags.juteMaxBuffer, "jute-maxbuffer", jute.DefaultMaxBuffer,
		"the server's jute.maxbuffer: the largest record accepted, in bytes")
	cmd.AddCommand(newToolTxnlogCmd(flags), newToolSnapshotCmd(flags), newToolPurgeCmd(flags))
	cmd.AddCommand(newToolJournalCmd(flags), newToolEntrylogCmd(flags))
	cmd.AddCommand(newToolRecoverCmd(flags))
	return cmd
}

// dataDirOf accepts a dataDir or dataLogDir (the directory holding
// version-2) or the version-2 directory itself, and returns the former.
func dataDirOf(fs vfs.FS, path string) (string, error) {
	path = filepath.Clean(path)
	if fi, err := fs.Stat(filepath.Join(path, txnlog.DirName)); err == nil && fi.IsDir() {
		return path, nil
	}
	if filepath.Base(path) == txnlog.DirName {
		if _, err := fs.Stat(path); err != nil {
			return "", err
		}
		return filepath.Dir(path), nil
	}
	if _, err := fs.Stat(path); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s holds no %s directory: not a data directory", path, txnlog.DirName)
}

// parseZxid reads a zxid in hex with 0x (as every tool prints them) or in
// decimal.
func parseZxid(s string) (zxid.ID, error) {
	var v int64
	var err error
	if hex, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		var u uint64
		u, err = strconv.ParseUint(hex, 16, 64)
		v = int64(u)
	} else {
		v, err = strconv.ParseInt(s, 10, 64)
	}
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad zxid %q: want 0x<hex> or a decimal number", s)
	}
	return zxid.ID(v), nil
}

// follows reports whether next may come right after last in a log: the next
// counter of the same epoch, or the first txn of a later epoch.
func follows(last, next zxid.ID) bool {
	return next == last+1 || (next.Counter() == 1 && next.Epoch() > last.Epoch())
}
