package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"keeper/coordination/server"
	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/internal/vfs"
)

func newToolPurgeCmd(flags *toolFlags) *cobra.Command {
	var retain int
	cmd := &cobra.Command{
		Use:   "purge <dataDir> [<dataLogDir>] -n N",
		Short: "Keep the newest N snapshots and the logs they need; remove the rest",
		Long: `Remove old snapshots and transaction logs, as Apache ZooKeeper's PurgeTxnLog
does: keep the newest N (at least 3) valid snapshots and every log file a
restore from the oldest of them reads. Snapshots that fail to read do not count
towards N. dataLogDir defaults to dataDir. It locks the directories as a server
does, so it refuses to run while a server uses them.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			logArg := ""
			if len(args) == 2 {
				logArg = args[1]
			}
			return flags.env(cmd).purge(args[0], logArg, retain)
		},
	}
	cmd.Flags().IntVarP(&retain, "count", "n", 0, "how many snapshots to keep (at least 3)")
	return cmd
}

func (e *toolEnv) purge(dataArg, logArg string, retain int) error {
	if retain < server.MinSnapRetainCount {
		return fmt.Errorf("-n must be at least %d, got %d", server.MinSnapRetainCount, retain)
	}
	dataDir, err := dataDirOf(e.fs, dataArg)
	if err != nil {
		return err
	}
	logDir := dataDir
	if logArg != "" {
		if logDir, err = dataDirOf(e.fs, logArg); err != nil {
			return err
		}
	}
	lock, err := vfs.LockDirs(e.fs, dataDir, logDir) // a running server purges its own files
	if err != nil {
		return err
	}
	defer lock.Close() // releasing the lock loses nothing
	res, err := server.Purge(e.fs, dataDir, logDir, retain, e.maxRecordBytes, nil)
	for _, p := range res.Snapshots {
		e.printf("removed %s\n", p)
	}
	for _, p := range res.Logs {
		e.printf("removed %s\n", p)
	}
	if err != nil {
		return err
	}
	snaps, err := snap.List(e.fs, filepath.Join(dataDir, txnlog.DirName))
	if err != nil {
		return err
	}
	logs, err := txnlog.Files(e.fs, logDir)
	if err != nil {
		return err
	}
	e.printf("removed %d snapshots and %d log files; %d snapshots and %d log files remain\n",
		len(res.Snapshots), len(res.Logs), len(snaps), len(logs))
	return nil
}
