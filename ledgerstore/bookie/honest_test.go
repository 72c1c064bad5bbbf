package bookie

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bkproto"
)

// corruptPayload flips a byte of the stored payload of entry entryID of
// ledgerID in whichever entry log holds it, durably.
func corruptPayload(t *testing.T, fsys *vfs.MemFS, dirs []string, ledgerID, entryID int64) {
	t.Helper()
	needle := payload(ledgerID, entryID, 100)[:40]
	for _, d := range dirs {
		cur := filepath.Join(d, "current")
		names, err := fsys.List(cur)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if !strings.HasSuffix(name, ".log") {
				continue
			}
			path := filepath.Join(cur, name)
			data, err := vfs.ReadFile(fsys, path)
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(data, needle)
			if i < 0 {
				continue
			}
			f, err := fsys.OpenReadWrite(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte{data[i+10] ^ 0xff}, int64(i+10)); err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			return
		}
	}
	t.Fatalf("entry %d/%d is in no entry log", ledgerID, entryID)
}

// TestCorruptEntryIsAnErrorNotAbsence damages a stored entry and checks
// that the bookie answers EIO for it, on a plain read, a fencing read and
// a last-entry read: never NoSuchEntry, which recovery would count as
// proof that the entry was never acknowledged (docs/bookkeeper-protocol.md Appendix A item 1).
func TestCorruptEntryIsAnErrorNotAbsence(t *testing.T) {
	e := newEnv(t, false)
	b := e.start()
	c := dial(t, b)
	addEntries(t, c, 1, 0, 10)
	if err := b.Close(); err != nil { // checkpoints: the entries go to the entry logs
		t.Fatal(err)
	}
	corruptPayload(t, e.fs, e.config().LedgerDirs, 1, 4)
	corruptPayload(t, e.fs, e.config().LedgerDirs, 1, 9)

	c = dial(t, e.start())
	_, err := c.Read(ctx(t), 1, 4)
	wantStatus(t, "read of a corrupt entry", err, bkproto.StatusCode_EIO)
	_, err = c.Read(ctx(t), 1, bkproto.LastAddConfirmed)
	wantStatus(t, "last-entry read when the last entry is corrupt", err, bkproto.StatusCode_EIO)
	_, err = c.FenceRead(ctx(t), 1, 4, testKey)
	wantStatus(t, "recovery (fencing) read of a corrupt entry", err, bkproto.StatusCode_EIO)
	_, err = c.Read(ctx(t), 1, 10)
	wantStatus(t, "read of an entry never stored", err, bkproto.StatusCode_ENOENTRY)
	for _, id := range []int64{0, 3, 5, 8} {
		checkEntry(t, c, 1, id)
	}
}
