package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/bookie/httpadmin"
)

// `keeper bookie lastmark` and `keeper bookie listfilesondisc`: the
// BookKeeper shell's offline views of a bookie's directories, named by a
// bookkeeper.conf (or --journal-dirs and --ledger-dirs). They only read,
// so they may run beside the bookie.

// offlineBookieConfig reads the directories of a bookie's configuration.
func offlineBookieConfig(cmd *cobra.Command, args []string, f *bookieFlags) (bookie.Config, error) {
	return loadBookieConfig(cmd, args, f, quietLogger(cmd))
}

func addDirFlags(cmd *cobra.Command, f *bookieFlags) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.journalDirs, "journal-dirs", nil, "journal directories, comma-separated (journalDirectories)")
	fl.StringSliceVar(&f.ledgerDirs, "ledger-dirs", nil, "ledger directories, comma-separated (ledgerDirectories)")
}

func newBookieLastMarkCmd() *cobra.Command {
	f := &bookieFlags{}
	cmd := &cobra.Command{
		Use:   "lastmark [bookkeeper.conf]",
		Short: "Print each journal's last checkpointed mark",
		Long: `Print, for each journal directory, the mark the bookie's last checkpoint persisted
(the lastMark files in the ledger directories): replay after a restart starts there
('bookkeeper shell lastmark'). One line per journal:

  LastLogMark : Journal Id - <id>(<hex id>.txn), Pos - <offset>`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := offlineBookieConfig(cmd, args, f)
			if err != nil {
				return err
			}
			marks, err := bookie.ReadLastMarks(cfg)
			if err != nil {
				return err
			}
			for _, m := range marks {
				fmt.Fprintf(cmd.OutOrStdout(), "LastLogMark : Journal Id - %d(%x.txn), Pos - %d\n", m.LogID, m.LogID, m.Offset)
			}
			return nil
		},
	}
	addDirFlags(cmd, f)
	return cmd
}

func newBookieListFilesCmd() *cobra.Command {
	f := &bookieFlags{}
	var journal, entrylog, index bool
	cmd := &cobra.Command{
		Use:   "listfilesondisc [--journal] [--entrylog] [--index] [bookkeeper.conf]",
		Short: "List the journal, entry log and index files of a bookie",
		Long: `List the files of a bookie's directories, searched recursively, oldest first, one
absolute path a line under a heading per kind ('bookkeeper shell listfilesondisc',
which spells the flags -txn, -log and -idx; both spellings work):

  --journal (-txn)   the .txn files below the journal directories
  --entrylog (-log)  the .log files below the ledger directories (pebble's write-ahead
                     logs below the index among them, as BookKeeper lists RocksDB's)
  --index (-idx)     the .idx files below the index directory (keeper's index is a
                     pebble database and has none, as BookKeeper's DbLedgerStorage)

Give at least one.`,
		Args: cobra.MaximumNArgs(1),
	}
	withSingleDashFlags(cmd, []string{"-txn", "-log", "-idx"}, func(cmd *cobra.Command, args []string) error {
		if !journal && !entrylog && !index {
			return errors.New("give at least one of --journal, --entrylog and --index")
		}
		cfg, err := offlineBookieConfig(cmd, args, f)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		for _, k := range []struct {
			on         bool
			kind       httpadmin.FileKind
			ext, title string
		}{
			{journal, httpadmin.JournalFiles, "txn", "Journal Files"},
			{entrylog, httpadmin.EntryLogFiles, "log", "EntryLog/Ledger Files"},
			{index, httpadmin.IndexFiles, "idx", "Index Files"},
		} {
			if !k.on {
				continue
			}
			paths, err := bookie.ListDiskFiles(cfg, k.kind, k.ext)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "--------- Printing the list of %s ---------\n", k.title)
			for _, p := range paths {
				if abs, err := filepath.Abs(p); err == nil {
					p = abs
				}
				fmt.Fprintln(out, p)
			}
			fmt.Fprintln(out)
		}
		return nil
	})
	fl := cmd.Flags()
	fl.BoolVar(&journal, "journal", false, "list the journal files")
	fl.BoolVar(&journal, "txn", false, "the same as --journal")
	fl.BoolVar(&entrylog, "entrylog", false, "list the entry log files")
	fl.BoolVar(&entrylog, "log", false, "the same as --entrylog")
	fl.BoolVar(&index, "index", false, "list the index files")
	fl.BoolVar(&index, "idx", false, "the same as --index")
	addDirFlags(cmd, f)
	return cmd
}
