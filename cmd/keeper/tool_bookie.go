package main

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/entrystore"
	"keeper/ledgerstore/bookie/journal"
)

// This file is `keeper tool journal dump` and `keeper tool entrylog dump`:
// offline views of a bookie's journal and entry logs. Run them only while
// no bookie uses the directories.

func newToolJournalCmd(flags *toolFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "Inspect a bookie journal (<journalDir>/current/<hex>.txn files)",
	}
	var ledgerDirs []string
	dump := &cobra.Command{
		Use:   "dump <journalDir>",
		Short: "Print one line per journal record: entries, master keys, fences, explicit LACs",
		Long: `Print every record of the journal under <journalDir> (or its current
subdirectory), oldest file first, one line each, then where the data ends.
With --ledger-dirs it first prints the checkpoint (lastMark) stored there; replay
after a restart starts at it. A torn tail is reported and ends the dump; damage
anywhere else is an error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flags.env(cmd).dumpJournal(args[0], ledgerDirs)
		},
	}
	dump.Flags().StringSliceVar(&ledgerDirs, "ledger-dirs", nil, "ledger directories holding lastMark, comma-separated")
	cmd.AddCommand(dump)
	return cmd
}

// journalDirOf accepts a journal directory or its current subdirectory.
func journalDirOf(path string) string {
	path = filepath.Clean(path)
	if filepath.Base(path) == journal.DirName {
		return filepath.Dir(path)
	}
	return path
}

func (e *toolEnv) dumpJournal(path string, ledgerDirs []string) error {
	dir := journalDirOf(path)
	files, err := journal.Files(e.fs, dir)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%s holds no journal files", filepath.Join(dir, journal.DirName))
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f.Path)
	}
	e.printf("journal %s: %d files: %s\n", dir, len(files), strings.Join(names, " "))
	if len(ledgerDirs) > 0 {
		var marks []string
		for _, d := range ledgerDirs {
			marks = append(marks, filepath.Join(d, "current"))
		}
		mark, err := journal.ReadLastMark(e.fs, marks, journal.LastMarkName(0, 1))
		if err != nil {
			return err
		}
		e.printf("lastMark %v\n", mark)
	}
	counts := map[journal.Kind]int{}
	end, err := journal.Replay(e.fs, dir, journal.Position{}, journal.Config{}, func(r journal.Record) error {
		counts[r.Kind()]++
		e.printf("%s\n", describeJournalRecord(r))
		return nil
	})
	e.printf("end %v: %d entries, %d master keys, %d fences, %d explicit LACs\n", end,
		counts[journal.KindEntry], counts[journal.KindMasterKey], counts[journal.KindFence], counts[journal.KindExplicitLAC])
	if errors.Is(err, journal.ErrTorn) {
		e.printf("torn tail (a bookie cuts it at its next start): %v\n", err)
		return nil
	}
	return err
}

// describeJournalRecord formats one record.
func describeJournalRecord(r journal.Record) string {
	switch r.Kind() {
	case journal.KindEntry:
		return "entry " + describeEntry(r.Body())
	case journal.KindMasterKey:
		return fmt.Sprintf("master-key ledger=%d key=%s", r.LedgerID(), hex.EncodeToString(r.MasterKey()))
	case journal.KindFence:
		return fmt.Sprintf("fence ledger=%d", r.LedgerID())
	case journal.KindExplicitLAC:
		body := r.ExplicitLAC()
		lac := "?"
		if len(body) >= bkproto.LACHeaderBytes {
			lac = fmt.Sprint(int64(binary.BigEndian.Uint64(body[8:16])))
		}
		return fmt.Sprintf("explicit-lac ledger=%d lac=%s bytes=%d", r.LedgerID(), lac, len(body))
	}
	return r.String()
}

// describeEntry formats a stored entry's header.
func describeEntry(stored []byte) string {
	h, err := bkproto.ParseEntryHeader(stored)
	if err != nil {
		return fmt.Sprintf("bytes=%d (%v)", len(stored), err)
	}
	return fmt.Sprintf("ledger=%d entry=%d lac=%d length=%d bytes=%d", h.LedgerID, h.EntryID, h.LAC, h.Length, len(stored))
}

func newToolEntrylogCmd(flags *toolFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "entrylog",
		Short: "Inspect bookie entry logs (<ledgerDir>/current/<hex>.log files)",
	}
	var headersOnly bool
	dump := &cobra.Command{
		Use:   "dump <ledgerDir|file.log>",
		Short: "Print an entry log's header, its entries and its ledgers map",
		Long: `Print each entry log of a ledger directory (or one .log file): the header,
one line per entry (offset, ledger, entry, LAC, length, size) and the ledgers
map of a sealed log. Checksums are verified; damage is reported as an error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flags.env(cmd).dumpEntryLogs(args[0], headersOnly)
		},
	}
	dump.Flags().BoolVar(&headersOnly, "headers", false, "print only each log's header and ledgers map")
	cmd.AddCommand(dump)
	return cmd
}

func (e *toolEnv) dumpEntryLogs(path string, headersOnly bool) error {
	path = filepath.Clean(path)
	if strings.HasSuffix(path, ".log") {
		return e.dumpEntryLog(path, true, headersOnly)
	}
	dir := path
	if fi, err := e.fs.Stat(filepath.Join(path, "current")); err == nil && fi.IsDir() {
		dir = filepath.Join(path, "current")
	}
	names, err := e.fs.List(dir)
	if err != nil {
		return err
	}
	type logName struct {
		id   uint64
		name string
	}
	var logs []logName
	for _, n := range names {
		hexID, ok := strings.CutSuffix(n, ".log")
		if !ok {
			continue
		}
		var id uint64
		if _, err := fmt.Sscanf(hexID, "%x", &id); err == nil {
			logs = append(logs, logName{id, n})
		}
	}
	if len(logs) == 0 {
		return fmt.Errorf("%s holds no entry logs", dir)
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i].id < logs[j].id })
	var errs []error
	for i, l := range logs {
		errs = append(errs, e.dumpEntryLog(filepath.Join(dir, l.name), i == len(logs)-1, headersOnly))
	}
	return errors.Join(errs...)
}

// dumpEntryLog prints one log. newest says whether it is its directory's
// newest, the only one a torn tail is normal in.
func (e *toolEnv) dumpEntryLog(path string, newest, headersOnly bool) error {
	f, err := e.fs.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	sc := entrystore.NewScanner(f, path, fi.Size(), newest)
	h, err := sc.Header()
	if err != nil {
		// A bookie killed after creating its newest log and before its
		// header was written leaves it short (even empty): the scanner
		// calls that torn only in the newest log, and the bookie's start
		// repairs it, so it is reported, not an error.
		if errors.Is(err, entrystore.ErrTorn) {
			e.printf("entry log %s: %d bytes, damaged at offset 0: %v\n", path, fi.Size(), err)
			return nil
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	state := "unsealed (no ledgers map yet)"
	if h.Sealed() {
		state = fmt.Sprintf("sealed, ledgers map at %d for %d ledgers", h.LedgersMapOffset, h.LedgersCount)
	}
	e.printf("entry log %s: %d bytes, version %d, %s\n", path, fi.Size(), h.Version, state)
	if headersOnly && h.Sealed() {
		if _, err := sc.SeekLedgersMap(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	entries := 0
	for {
		rec, err := sc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			e.printf("  damaged at offset %d: %v\n", sc.Offset(), err)
			if errors.Is(err, entrystore.ErrTorn) {
				return nil
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		switch rec.Kind {
		case entrystore.KindEntry:
			entries++
			if !headersOnly {
				e.printf("  %d entry %s\n", rec.Offset, describeEntry(rec.Entry))
			}
		case entrystore.KindLedgersMap:
			for _, p := range rec.Ledgers {
				e.printf("  ledgers-map ledger=%d bytes=%d\n", p.LedgerID, p.Bytes)
			}
		}
	}
	if !headersOnly {
		e.printf("  %d entries\n", entries)
	}
	return nil
}
