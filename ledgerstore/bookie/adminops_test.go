package bookie

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/httpadmin"
	"keeper/ledgerstore/bookie/journal"
)

// TestOperatorReadOnly: an operator turns the bookie read-only and back;
// full disks keep it read-only whatever the operator asks; with
// readOnlyModeEnabled=false the request is refused.
func TestOperatorReadOnly(t *testing.T) {
	e := newEnv(t, true)
	b := e.start()
	zc := e.zkConn()
	c := dial(t, b)
	addEntries(t, c, 1, 0, 1)

	if err := b.SetReadOnly(true); err != nil {
		t.Fatal(err)
	}
	if !b.ReadOnly() || registeredAs(t, zc, b.ID()) != "readonly" {
		t.Fatalf("after SetReadOnly(true): read-only %v, registered as %s", b.ReadOnly(), registeredAs(t, zc, b.ID()))
	}
	wantStatus(t, "add while read-only", c.Add(ctx(t), 1, 1, testKey, body(1, 1, 100), false), bkproto.StatusCode_EREADONLY)
	if !b.AvailableForHighPriorityWrites() {
		t.Fatal("recovery adds refused on an operator's read-only bookie")
	}
	if err := b.SetReadOnly(false); err != nil {
		t.Fatal(err)
	}
	if b.ReadOnly() || registeredAs(t, zc, b.ID()) != "writable" {
		t.Fatalf("after SetReadOnly(false): read-only %v, registered as %s", b.ReadOnly(), registeredAs(t, zc, b.ID()))
	}
	addEntries(t, c, 1, 1, 2)

	e.setUsage(0.97)
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if err := b.SetReadOnly(false); err != nil || !b.ReadOnly() {
		t.Fatalf("SetReadOnly(false) with full disks: %v, read-only %v; want it still read-only", err, b.ReadOnly())
	}

	e2 := newEnv(t, true)
	e2.tweak = func(c *Config) { c.ReadOnlyModeDisabled = true }
	b2 := e2.start()
	if err := b2.SetReadOnly(true); !errors.Is(err, httpadmin.ErrReadOnlyDisabled) || b2.ReadOnly() {
		t.Fatalf("SetReadOnly(true) with read-only mode disabled: %v, read-only %v", err, b2.ReadOnly())
	}
}

// TestCompactionSuspension: an operator's suspension and the disk warning
// each suspend major compaction; a resume lifts only the operator's.
func TestCompactionSuspension(t *testing.T) {
	b := newEnv(t, false).start()
	tests := []struct {
		name                 string
		do                   func()
		aboveWarn            bool
		wantMajor, wantMinor bool
	}{
		{"none", func() {}, false, false, false},
		{"suspend major", func() { b.SuspendCompaction(true, false) }, false, true, false},
		{"suspend minor too", func() { b.SuspendCompaction(false, true) }, false, true, true},
		{"resume major", func() { b.ResumeCompaction(true, false) }, false, false, true},
		{"disk warning", func() {}, true, true, true},
		{"resume both above the warning", func() { b.ResumeCompaction(true, true) }, true, true, false},
		{"below the warning", func() {}, false, false, false},
	}
	for _, tc := range tests {
		tc.do()
		b.aboveWarn.Store(tc.aboveWarn)
		if major, minor := b.CompactionSuspended(); major != tc.wantMajor || minor != tc.wantMinor {
			t.Errorf("%s: suspended %v %v, want %v %v", tc.name, major, minor, tc.wantMajor, tc.wantMinor)
		}
	}
}

// TestDiskFilesAndMarks: the journal's files and, after a checkpoint, the
// entry logs are listed, oldest first; the persisted mark names the
// journal file the checkpoint reached.
func TestDiskFilesAndMarks(t *testing.T) {
	e := newEnv(t, false)
	b := e.start()
	c := dial(t, b)
	addEntries(t, c, 1, 0, 5)
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind httpadmin.FileKind
		ext  string
		want func(names []string) bool
	}{
		{httpadmin.JournalFiles, "txn", func(names []string) bool {
			_, ok := journal.ParseFileName(names[len(names)-1])
			return ok
		}},
		{httpadmin.EntryLogFiles, "log", func(names []string) bool { return len(names) > 0 }},
		{httpadmin.IndexFiles, "idx", func(names []string) bool { return len(names) == 0 }},
		{httpadmin.EntryLogFiles, "nope", func(names []string) bool { return len(names) == 0 }},
	}
	for _, tc := range tests {
		names, err := b.DiskFiles(tc.kind, tc.ext)
		if err != nil || (len(names) == 0) != (tc.ext == "idx" || tc.ext == "nope") || !tc.want(names) {
			t.Errorf("DiskFiles(%d, %s) = %v, %v", tc.kind, tc.ext, names, err)
		}
		for _, n := range names {
			if !strings.HasSuffix(n, "."+tc.ext) {
				t.Errorf("DiskFiles(%d, %s) lists %s", tc.kind, tc.ext, n)
			}
		}
	}
	marks := b.LastLogMarks()
	journals, _ := b.DiskFiles(httpadmin.JournalFiles, "txn")
	if len(marks) != 1 || marks[0].Offset <= 0 ||
		!slices.Contains(journals, journal.FileName(marks[0].LogID)) {
		t.Fatalf("marks %v, journal files %v", marks, journals)
	}
	// What the offline commands read: the same marks, and paths.
	onDisk, err := ReadLastMarks(e.config())
	if err != nil || len(onDisk) != 1 || onDisk[0].LogID != marks[0].LogID || onDisk[0].Offset != marks[0].Offset {
		t.Fatalf("ReadLastMarks = %v, %v; the bookie says %v", onDisk, err, marks)
	}
	paths, err := ListDiskFiles(e.config(), httpadmin.JournalFiles, "txn")
	if err != nil || len(paths) != len(journals) || !strings.HasPrefix(paths[0], "/journal/current/") {
		t.Fatalf("ListDiskFiles = %v, %v", paths, err)
	}
	if _, err := ListDiskFiles(Config{LedgerDirs: []string{"/nowhere"}, FS: e.fs}, httpadmin.EntryLogFiles, "log"); err == nil {
		t.Fatal("ListDiskFiles of a directory that does not exist succeeded")
	}
}

// TestCheckCookies: the running bookie's cookies check out until a
// directory loses its cookie; the check never stamps one back.
func TestCheckCookies(t *testing.T) {
	e := newEnv(t, true)
	b := e.start()
	if err := b.CheckCookies(ctx(t)); err != nil {
		t.Fatalf("CheckCookies on a healthy bookie: %v", err)
	}
	if err := e.fs.Remove("/ledgers1/current/" + CookieFileName); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckCookies(ctx(t)); !errors.Is(err, ErrInvalidCookie) {
		t.Fatalf("CheckCookies without a directory's cookie: %v, want ErrInvalidCookie", err)
	}
	if _, err := e.fs.Stat("/ledgers1/current/" + CookieFileName); err == nil {
		t.Fatal("CheckCookies wrote a cookie")
	}
	if err := newEnv(t, false).start().CheckCookies(ctx(t)); err == nil {
		t.Fatal("CheckCookies without a metadata store succeeded")
	}
}

// TestCompactIndex: an index compaction asked for runs on the GC loop and
// is counted; entries stay readable.
func TestCompactIndex(t *testing.T) {
	b := newEnv(t, false).start()
	c := dial(t, b)
	addEntries(t, c, 1, 0, 20)
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := b.CompactIndex(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the index compaction", func() bool {
		return !b.IndexCompacting() && b.GCStatus().EntryLocationCompactions == 1
	})
	if st := b.GCStatus(); st.LastEntryLocationCompaction.Before(st.LastMajorCompaction) {
		t.Fatalf("gc status after an index compaction: %+v", st)
	}
	checkEntry(t, c, 1, 19)
	if b.IndexPath() != "/ledgers0/current/index" {
		t.Fatalf("IndexPath %s", b.IndexPath())
	}
}
