package entrystore

import (
	"errors"
	"io"
	"testing"

	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
)

// findRecord returns the log path and record of ledger/entry, scanning
// the logs as a tool would.
func findRecord(t *testing.T, fsys vfs.FS, ledgerID, entryID int64) (string, Record) {
	t.Helper()
	for _, p := range logFiles(t, fsys) {
		f, err := fsys.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := f.Stat()
		sc := NewScanner(f, p, info.Size(), false)
		for {
			rec, err := sc.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("scan %s: %v", p, err)
			}
			if rec.Kind == KindEntry && rec.LedgerID == ledgerID && rec.EntryID == entryID {
				_ = f.Close()
				return p, rec
			}
		}
		_ = f.Close()
	}
	t.Fatalf("no record of ledger %d entry %d", ledgerID, entryID)
	return "", Record{}
}

// flipByte flips the bits of the byte at off in path.
func flipByte(t *testing.T, fsys vfs.FS, path string, off int64) {
	t.Helper()
	f, err := fsys.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptByteIsError flips one byte of a stored record, in each of its
// fields, and checks that Get reports ErrCorrupt (never absence), that the
// neighbours still read (also through read-ahead), and that the damaged
// entry is not served from the read cache.
func TestCorruptByteIsError(t *testing.T) {
	for name, at := range map[string]int64{
		"size field":    -8,
		"crc field":     -3,
		"ledger id":     2,
		"entry id":      15,
		"lac":           20,
		"payload":       500,
		"last byte":     999,
		"size low byte": -5,
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv()
			s := e.open(t, e.config())
			m := model{}
			for i := range int64(10) {
				m.put(1, i, mustAdd(t, s, 1, i, i-1, 1000))
			}
			mustFlush(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path, rec := findRecord(t, e.fs, 1, 5)
			flipByte(t, e.fs, path, rec.Offset+at)

			s = e.open(t, e.config())
			mustGet(t, s, 1, 4, m[1][4]) // reads ahead over entry 5
			for range 2 {
				_, err := s.Get(1, 5)
				if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNoEntry) {
					t.Fatalf("Get of damaged entry = %v, want ErrCorrupt", err)
				}
			}
			for i := int64(6); i < 10; i++ {
				mustGet(t, s, 1, i, m[1][i])
			}
			if _, err := s.LAC(1); err != nil {
				t.Fatalf("LAC: %v", err)
			}
		})
	}
}

// TestReadErrorIsNotAbsence checks that an I/O error on an entry log is
// reported as such.
func TestReadErrorIsNotAbsence(t *testing.T) {
	e := newEnv()
	efs := errorfs.Wrap(e.fs)
	cfg := e.config()
	cfg.FS = efs
	s := e.open(t, cfg)
	mustAdd(t, s, 1, 0, -1, 100)
	mustFlush(t, s)
	efs.Add(errorfs.Rule{Ops: errorfs.OpRead, PathContains: ".log"})
	for _, id := range []int64{0, LastEntry} {
		_, err := s.Get(1, id)
		if !errors.Is(err, errorfs.ErrInjected) || errors.Is(err, ErrNoEntry) || errors.Is(err, ErrNoLedger) {
			t.Fatalf("Get(1, %d) with failing reads = %v", id, err)
		}
	}
	if _, err := s.LAC(1); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("LAC with failing reads = %v", err)
	}
}

// TestMissingLogIsCorrupt removes an entry log behind the store's back:
// the index still names it, so reads of its entries are ErrCorrupt.
func TestMissingLogIsCorrupt(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	mustAdd(t, s, 1, 0, -1, 100)
	mustFlush(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path, _ := findRecord(t, e.fs, 1, 0)
	if err := e.fs.Remove(path); err != nil {
		t.Fatal(err)
	}
	s = e.open(t, e.config())
	if _, err := s.Get(1, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get from a removed log = %v, want ErrCorrupt", err)
	}
}

// TestDamagedLogAtOpen damages the middle of the newest log before a
// crash (no seal): Open keeps the log as damaged instead of cutting it,
// intact entries still read, the damaged one is ErrCorrupt, and GC and
// compaction leave the log alone.
func TestDamagedLogAtOpen(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	m := model{}
	for i := range int64(10) {
		m.put(1, i, mustAdd(t, s, 1, i, i-1, 1000))
	}
	mustFlush(t, s)
	c := e.crash(nil) // unsealed, as after a crash
	path, rec := findRecord(t, c.fs, 1, 3)
	flipByte(t, c.fs, path, rec.Offset+100)
	before := logBytes(t, c.fs)

	s2 := c.open(t, c.config())
	if _, err := s2.Get(1, 3); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of damaged entry = %v", err)
	}
	for i := range int64(10) {
		if i != 3 {
			mustGet(t, s2, 1, i, m[1][i])
		}
	}
	var damaged bool
	for _, u := range s2.LogUsage() {
		damaged = damaged || !u.Known
	}
	if !damaged {
		t.Fatal("damaged log not reported in LogUsage")
	}
	if err := s2.DeleteLedger(1); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.GC(nil, func(int64) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Compact(1.1, 0); err != nil {
		t.Fatal(err)
	}
	if after := logBytes(t, c.fs); after < before {
		t.Fatalf("damaged log collected: %d bytes -> %d", before, after)
	}
}
