package journal_test

import (
	"fmt"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bookie/journal"
)

// Example shows the driver's side: group commit, a checkpoint in the
// order Appendix A item 8 asks for, and a restart that replays from the
// persisted mark.
func Example() {
	fsys := vfs.NewMem()
	ledgerDirs := []string{"/ledgers/current"}
	_ = vfs.MkdirAllSync(fsys, ledgerDirs[0], 0o755)
	cfg := journal.Config{FirstLogID: 1}

	j, _ := journal.Open(fsys, "/journal", cfg)
	_, _ = j.Append(journal.NewMasterKeyRecord(42, []byte("0123456789abcdefghij")))
	for entryID := range int64(3) {
		// (The entry went into ledger storage first.)
		rec, _ := journal.NewEntryRecord(entryBody(42, entryID, 10))
		_, _ = j.Append(rec)
	}
	if j.ShouldFlush(0, true) { // the driver's queue is empty: natural group commit closes the batch
		_ = j.Sync() // now the adds may be acknowledged
	}

	// Checkpoint: capture the mark, make storage durable, persist the
	// mark, then drop the journal files replay no longer needs.
	mark := j.Mark()
	// ... flush ledger storage here ...
	_ = journal.WriteLastMark(fsys, ledgerDirs, journal.LastMarkName(0, 1), mark)
	_, _ = journal.RemoveBefore(fsys, "/journal", mark, journal.DefaultMaxBackups)

	_, _ = j.Append(journal.NewFenceRecord(42))
	_ = j.Sync() // the fence may be answered now
	_ = j.Close()

	// Restart: read the mark, open (cutting any torn tail), replay.
	from, _ := journal.ReadLastMark(fsys, ledgerDirs, journal.LastMarkName(0, 1))
	j, _ = journal.Open(fsys, "/journal", cfg)
	end, err := journal.Replay(fsys, "/journal", from, cfg, func(r journal.Record) error {
		fmt.Println("replay", r)
		return nil
	})
	fmt.Println("end at the journal's mark:", end == j.Mark(), err)
	// Output:
	// replay fence ledger=42 entry=-8192 bytes=16
	// end at the journal's mark: true <nil>
}
