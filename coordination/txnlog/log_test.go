package txnlog_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
)

// threeFiles writes a log of three files: 1..10, 11..20 and 21..30.
func threeFiles(t *testing.T) *vfs.MemFS {
	t.Helper()
	m := vfs.NewMem()
	l, err := txnlog.Open(m, "/d", testConfig)
	mustOK(t, err)
	appendSync(t, l, 1, 10)
	mustOK(t, l.Roll())
	appendSync(t, l, 11, 20)
	mustOK(t, l.Roll())
	appendSync(t, l, 21, 30)
	mustOK(t, l.Close())
	return m
}

func fileStarts(t *testing.T, fsys vfs.FS) []zxid.ID {
	t.Helper()
	files, err := txnlog.Files(fsys, "/d")
	mustOK(t, err)
	var starts []zxid.ID
	for _, f := range files {
		starts = append(starts, f.Start)
		if f.Name() != txnlog.FileName(f.Start) {
			t.Errorf("file %s has name %s", f.Path, f.Name())
		}
	}
	return starts
}

func TestRoundTrip(t *testing.T) {
	m := vfs.NewMem()
	l, err := txnlog.Open(m, "/d", testConfig)
	mustOK(t, err)
	if l.LastZxid() != 0 {
		t.Errorf("empty log: LastZxid %v", l.LastZxid())
	}
	want := []*txn.Txn{mkTxn(zxid.Make(1, 1)), mkTxn(zxid.Make(1, 2)), mkTxn(zxid.Make(2, 1))}
	for _, tx := range want {
		mustOK(t, l.Append(tx))
	}
	mustOK(t, l.Sync())
	mustOK(t, l.Close())
	it, err := txnlog.Read(m, "/d", 0, testConfig)
	mustOK(t, err)
	for i, w := range want {
		got, err := it.Next()
		mustOK(t, err)
		if !reflect.DeepEqual(got, w) {
			t.Errorf("txn %d: got %+v, want %+v", i, got, w)
		}
		if !slices.Equal(it.Payload(), txn.Marshal(w)) {
			t.Errorf("txn %d: Payload differs from the appended bytes", i)
		}
		if path, _ := it.Position(); path != "/d/version-2/log.100000001" {
			t.Errorf("txn %d: Position in %s", i, path)
		}
	}
	if _, err := it.Next(); err == nil {
		t.Error("Next after the last txn succeeded")
	}
	mustOK(t, it.Close())
	if _, err := it.Next(); !errors.Is(err, txnlog.ErrClosed) {
		t.Errorf("Next after Close = %v", err)
	}

	l, err = txnlog.Open(m, "/d", testConfig)
	mustOK(t, err)
	if l.LastZxid() != zxid.Make(2, 1) {
		t.Errorf("reopened: LastZxid %v", l.LastZxid())
	}
	appendSync(t, l, zxid.Make(2, 2), zxid.Make(2, 3)) // a restart starts a new file
	mustOK(t, l.Close())
	if got := fileStarts(t, m); !slices.Equal(got, []zxid.ID{zxid.Make(1, 1), zxid.Make(2, 2)}) {
		t.Errorf("files start at %v", got)
	}
}

func TestReadFrom(t *testing.T) {
	m := threeFiles(t)
	if got := fileStarts(t, m); !slices.Equal(got, []zxid.ID{1, 11, 21}) {
		t.Fatalf("files start at %v", got)
	}
	tests := []struct {
		from zxid.ID
		want []zxid.ID
	}{
		{0, seq(1, 30)},
		{1, seq(1, 30)},
		{5, seq(5, 30)},
		{10, seq(10, 30)},
		{11, seq(11, 30)},
		{25, seq(25, 30)},
		{30, seq(30, 30)},
		{31, nil},
	}
	for _, tt := range tests {
		got, err := readZxids(t, m, "/d", tt.from)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("from %v: %v, %v; want %v", tt.from, got, err, tt.want)
		}
	}
	// A missing directory is an empty log.
	if got, err := readZxids(t, m, "/nowhere", 0); err != nil || got != nil {
		t.Errorf("missing log: %v, %v", got, err)
	}
}

// TestReadStartsAtTheRightFile damages a file before the starting one:
// reading from a later zxid must not even open it.
func TestReadStartsAtTheRightFile(t *testing.T) {
	m := threeFiles(t)
	writeRaw(t, m, "/d", "log.1", []byte("garbage"))
	if _, err := readZxids(t, m, "/d", 0); !errors.Is(err, txnlog.ErrCorrupt) {
		t.Errorf("from 0: %v, want ErrCorrupt", err)
	}
	if got, err := readZxids(t, m, "/d", 11); err != nil || !slices.Equal(got, seq(11, 30)) {
		t.Errorf("from 11: %v, %v", got, err)
	}
}

func TestAppendValidation(t *testing.T) {
	m := vfs.NewMem()
	l, err := txnlog.Open(m, "/d", testConfig)
	mustOK(t, err)
	appendSync(t, l, 5, 6)
	for _, bad := range []struct {
		name    string
		payload []byte
	}{
		{"same zxid", payload(6)},
		{"older zxid", payload(2)},
		{"too short", payload(7)[:txn.HeaderSize-1]},
		{"too long", make([]byte, txnlog.DefaultMaxRecordBytes+1)},
	} {
		if err := l.AppendPayload(bad.payload); err == nil {
			t.Errorf("%s: accepted", bad.name)
		}
	}
	if l.Err() != nil {
		t.Fatalf("a refused append poisoned the log: %v", l.Err())
	}
	appendSync(t, l, 7, 7)
	mustOK(t, l.Close())
	if err := l.Append(mkTxn(8)); !errors.Is(err, txnlog.ErrClosed) {
		t.Errorf("Append after Close = %v", err)
	}
	if err := l.Close(); !errors.Is(err, txnlog.ErrClosed) {
		t.Errorf("second Close = %v", err)
	}
	if got, err := readZxids(t, m, "/d", 0); err != nil || !slices.Equal(got, []zxid.ID{5, 6, 7}) {
		t.Errorf("read %v, %v", got, err)
	}
}

// TestSyncWithoutAppends checks that Sync and Roll with nothing appended
// create no file.
func TestSyncWithoutAppends(t *testing.T) {
	m := vfs.NewMem()
	l, err := txnlog.Open(m, "/d", testConfig)
	mustOK(t, err)
	mustOK(t, l.Sync())
	mustOK(t, l.Roll())
	mustOK(t, l.Close())
	if got := fileStarts(t, m); len(got) != 0 {
		t.Errorf("files %v", got)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		z          zxid.ID
		wantStarts []zxid.ID
		wantLast   zxid.ID
	}{
		{35, []zxid.ID{1, 11, 21}, 30},
		{30, []zxid.ID{1, 11, 21}, 30},
		{25, []zxid.ID{1, 11, 21}, 25},
		{21, []zxid.ID{1, 11, 21}, 21},
		{20, []zxid.ID{1, 11}, 20},
		{15, []zxid.ID{1, 11}, 15},
		{10, []zxid.ID{1}, 10},
		{1, []zxid.ID{1}, 1},
		{0, nil, 0},
	}
	for _, tt := range tests {
		for _, viaLog := range []bool{false, true} {
			m := threeFiles(t)
			if viaLog {
				l, err := txnlog.Open(m, "/d", testConfig)
				mustOK(t, err)
				mustOK(t, l.Truncate(tt.z))
				if l.LastZxid() != tt.wantLast {
					t.Errorf("Truncate(%v): LastZxid %v, want %v", tt.z, l.LastZxid(), tt.wantLast)
				}
				appendSync(t, l, tt.wantLast+100, tt.wantLast+101)
				mustOK(t, l.Close())
			} else {
				mustOK(t, txnlog.Truncate(m, "/d", tt.z, testConfig))
			}
			c := m.CrashClone(nil) // everything Truncate did is durable
			want := seq(1, tt.wantLast)
			starts := tt.wantStarts
			if viaLog {
				want = append(want, tt.wantLast+100, tt.wantLast+101)
				starts = append(slices.Clone(starts), tt.wantLast+100)
			}
			if got := fileStarts(t, c); !slices.Equal(got, starts) {
				t.Errorf("Truncate(%v) viaLog=%v: files %v, want %v", tt.z, viaLog, got, starts)
			}
			if got, err := readZxids(t, c, "/d", 0); err != nil || !slices.Equal(got, want) {
				t.Errorf("Truncate(%v) viaLog=%v: read %v, %v; want %v", tt.z, viaLog, got, err, want)
			}
		}
	}
}

// TestTruncateCutsTornTail checks that Truncate past a torn tail cuts the
// torn record too.
func TestTruncateCutsTornTail(t *testing.T) {
	m := vfs.NewMem()
	r2 := frame(payload(2))
	writeRaw(t, m, "/d", "log.1", join(header, frame(payload(1)), r2[:20], zeros(50)))
	mustOK(t, txnlog.Truncate(m, "/d", 100, testConfig))
	if got, err := readZxids(t, m, "/d", 0); err != nil || !slices.Equal(got, []zxid.ID{1}) {
		t.Errorf("read %v, %v", got, err)
	}
}

func TestFilesNeededFrom(t *testing.T) {
	files := []txnlog.File{{Path: "log.5", Start: 5}, {Path: "log.10", Start: 10}, {Path: "log.20", Start: 20}}
	tests := []struct {
		snap zxid.ID
		want []zxid.ID
	}{
		{0, []zxid.ID{5, 10, 20}}, // every file starts after the snapshot
		{3, []zxid.ID{5, 10, 20}}, // 4 < 5: still all
		{4, []zxid.ID{5, 10, 20}}, // the first file starts at snap+1
		{8, []zxid.ID{5, 10, 20}}, // inside the first file
		{9, []zxid.ID{10, 20}},    // the second file starts at snap+1
		{10, []zxid.ID{10, 20}},   // inside the second
		{19, []zxid.ID{20}},       // the third starts at snap+1
		{1000, []zxid.ID{20}},     // the last file is always kept
		{zxid.Make(9, 0), []zxid.ID{20}},
	}
	for _, tt := range tests {
		var got []zxid.ID
		for _, f := range txnlog.FilesNeededFrom(files, tt.snap) {
			got = append(got, f.Start)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("FilesNeededFrom(%v) = %v, want %v", tt.snap, got, tt.want)
		}
	}
	if got := txnlog.FilesNeededFrom(nil, 5); len(got) != 0 {
		t.Errorf("no files: %v", got)
	}
}

func TestFilesIgnoresOtherNames(t *testing.T) {
	m := vfs.NewMem()
	for _, name := range []string{"log.20", "log.3", "snapshot.5", "acceptedEpoch", "log.a", "log.1.tmp"} {
		writeRaw(t, m, "/d", name, nil)
	}
	if got := fileStarts(t, m); !slices.Equal(got, []zxid.ID{3, 0xa, 0x20}) {
		t.Errorf("Files: %v", got)
	}
}

// TestOpenRemovesEmptyTrailingFiles checks that files without records at
// the end of the log are removed on Open, so that the next file is last.
func TestOpenRemovesEmptyTrailingFiles(t *testing.T) {
	m := vfs.NewMem()
	writeRaw(t, m, "/d", "log.1", join(header, frame(payload(1)), frame(payload(2))))
	writeRaw(t, m, "/d", "log.200000001", join(header, zeros(100)))
	writeRaw(t, m, "/d", "log.300000001", header)
	l, err := txnlog.Open(m, "/d", testConfig)
	mustOK(t, err)
	if l.LastZxid() != 2 {
		t.Errorf("LastZxid %v", l.LastZxid())
	}
	appendSync(t, l, 3, 3)
	mustOK(t, l.Close())
	if got := fileStarts(t, m.CrashClone(nil)); !slices.Equal(got, []zxid.ID{1, 3}) {
		t.Errorf("files %v", got)
	}
}

// TestPreallocationWrites checks the writes a file gets: with
// preallocation, one zero byte at the padded size and then the data;
// without it, only the data (nothing written twice).
func TestPreallocationWrites(t *testing.T) {
	for _, tt := range []struct {
		name     string
		prealloc int64
		writes   int
		size     int64
	}{
		{"preallocated", 16 << 10, 2, 16<<10 + txnlog.FileHeaderBytes},
		{"off", -1, 1, 0}, // size: just the data
	} {
		t.Run(tt.name, func(t *testing.T) {
			efs := errorfs.Wrap(vfs.NewMem())
			l, err := txnlog.Open(efs, "/d", txnlog.Config{PreAllocSizeBytes: tt.prealloc})
			mustOK(t, err)
			before := efs.Count(errorfs.OpWrite)
			mustOK(t, l.Append(mkTxn(1)))
			mustOK(t, l.Sync())
			if n := efs.Count(errorfs.OpWrite) - before; n != tt.writes {
				t.Errorf("%d writes, want %d", n, tt.writes)
			}
			info, err := efs.Stat("/d/version-2/log.1")
			mustOK(t, err)
			want := tt.size
			if want == 0 {
				want = txnlog.FileHeaderBytes + txnlog.RecordOverheadBytes + int64(len(txn.Marshal(mkTxn(1))))
			}
			if info.Size() != want {
				t.Errorf("file of %d bytes, want %d", info.Size(), want)
			}
			mustOK(t, l.Close())
		})
	}
}

// TestNoSync is forceSync=no: Sync writes the txns into the file, where a
// reader (and a restarted process) finds them, without syncing it; Roll
// and Close still sync, so every file but the last stays complete on disk.
func TestNoSync(t *testing.T) {
	m := vfs.NewMem()
	efs := errorfs.Wrap(m)
	cfg := testConfig
	cfg.NoSync = true
	l, err := txnlog.Open(efs, "/d", cfg)
	mustOK(t, err)
	syncs := efs.Count(errorfs.OpAnySync)
	appendSync(t, l, 1, 10)
	if n := efs.Count(errorfs.OpAnySync) - syncs; n != 0 {
		t.Fatalf("Sync with NoSync synced %d times", n)
	}
	zs, err := readZxids(t, m, "/d", 1)
	mustOK(t, err)
	if len(zs) != 10 || zs[9] != 10 {
		t.Fatalf("after Sync a reader finds %v, want txns 1 to 10", zs)
	}
	if zs, _ := readZxids(t, m.CrashClone(nil), "/d", 1); len(zs) != 0 {
		t.Fatalf("txns %v survived a machine crash unsynced: the test's crash keeps what it should not", zs)
	}
	mustOK(t, l.Roll())
	if efs.Count(errorfs.OpAnySync) == syncs {
		t.Fatal("Roll did not sync with NoSync")
	}
	if zs, _ := readZxids(t, m.CrashClone(nil), "/d", 1); len(zs) != 10 {
		t.Fatalf("after Roll a crash leaves %v, want txns 1 to 10", zs)
	}
	appendSync(t, l, 11, 12)
	mustOK(t, l.Close())
	if zs, _ := readZxids(t, m.CrashClone(nil), "/d", 1); len(zs) != 12 {
		t.Fatalf("after Close a crash leaves %v, want txns 1 to 12", zs)
	}
}
