package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// purgeDir lays out dataDir /d (snapshots) and dataLogDir /l (logs) in a
// MemFS with dummy files: the purge tests decide validity themselves.
func purgeDir(t *testing.T, snaps, logs []zxid.ID) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMem()
	for _, dir := range []string{"/d/version-2", "/l/version-2"} {
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	put := func(path string) {
		f, err := fs.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("x"))
		f.Close()
	}
	for _, z := range snaps {
		put(filepath.Join("/d/version-2", snap.Name(z, snap.CompressionNone)))
	}
	for _, z := range logs {
		put(filepath.Join("/l/version-2", txnlog.FileName(z)))
	}
	return fs
}

// listNames returns the file names in dir.
func listNames(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestPurgePlanKeepsWhatRetainedSnapshotsNeed(t *testing.T) {
	tests := []struct {
		name        string
		snaps, logs []zxid.ID
		invalid     []zxid.ID // snapshots the validity check rejects
		retain      int
		wantSnaps   []string // left afterwards
		wantLogs    []string
	}{
		{
			name:  "keeps the newest three and the log holding the oldest's next txn",
			snaps: []zxid.ID{0x10, 0x20, 0x30, 0x40, 0x50}, logs: []zxid.ID{1, 0x11, 0x21, 0x2a, 0x31, 0x41, 0x51},
			retain:    3,
			wantSnaps: []string{"snapshot.30", "snapshot.40", "snapshot.50"},
			wantLogs:  []string{"log.2a", "log.31", "log.41", "log.51"},
		},
		{
			name:  "a log starting exactly at the snapshot stays with its predecessor gone",
			snaps: []zxid.ID{0x10, 0x20, 0x30, 0x40}, logs: []zxid.ID{1, 0x20, 0x30, 0x40},
			retain:    3,
			wantSnaps: []string{"snapshot.20", "snapshot.30", "snapshot.40"},
			wantLogs:  []string{"log.20", "log.30", "log.40"},
		},
		{
			name:  "fewer snapshots than retained: only logs before the oldest go",
			snaps: []zxid.ID{0x20, 0x30}, logs: []zxid.ID{1, 0x11, 0x21, 0x31},
			retain:    3,
			wantSnaps: []string{"snapshot.20", "snapshot.30"},
			wantLogs:  []string{"log.11", "log.21", "log.31"},
		},
		{
			name:  "invalid snapshots do not count; older invalid ones go, newer stay",
			snaps: []zxid.ID{0x10, 0x20, 0x30, 0x40, 0x50, 0x60}, logs: []zxid.ID{1, 0x11, 0x21, 0x31, 0x41, 0x51, 0x61},
			invalid:   []zxid.ID{0x60, 0x40, 0x10},
			retain:    3,
			wantSnaps: []string{"snapshot.20", "snapshot.30", "snapshot.40", "snapshot.50", "snapshot.60"},
			wantLogs:  []string{"log.11", "log.21", "log.31", "log.41", "log.51", "log.61"},
		},
		{
			name:  "no valid snapshot: nothing is removed",
			snaps: []zxid.ID{0x10, 0x20}, logs: []zxid.ID{1, 0x11, 0x21},
			invalid:   []zxid.ID{0x10, 0x20},
			retain:    3,
			wantSnaps: []string{"snapshot.10", "snapshot.20"},
			wantLogs:  []string{"log.1", "log.11", "log.21"},
		},
		{
			name:     "no snapshot at all: nothing is removed",
			logs:     []zxid.ID{1, 0x11},
			retain:   3,
			wantLogs: []string{"log.1", "log.11"},
		},
		{
			name:  "the newest log stays even when every log predates the snapshots",
			snaps: []zxid.ID{0x40, 0x50, 0x60}, logs: []zxid.ID{1, 0x11},
			retain:    3,
			wantSnaps: []string{"snapshot.40", "snapshot.50", "snapshot.60"},
			wantLogs:  []string{"log.11"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := purgeDir(t, tc.snaps, tc.logs)
			valid := func(info snap.Info) error {
				if slices.Contains(tc.invalid, info.Zxid) {
					return snap.ErrCorrupt
				}
				return nil
			}
			res, err := Purge(fs, "/d", "/l", tc.retain, 0, valid)
			if err != nil {
				t.Fatal(err)
			}
			gotSnaps := listNames(t, fs, "/d/version-2")
			gotLogs := listNames(t, fs, "/l/version-2")
			slices.SortFunc(gotSnaps, byZxidName)
			slices.SortFunc(gotLogs, byZxidName)
			slices.SortFunc(tc.wantSnaps, byZxidName)
			if !slices.Equal(gotSnaps, tc.wantSnaps) || !slices.Equal(gotLogs, tc.wantLogs) {
				t.Fatalf("left snapshots %v and logs %v; want %v and %v", gotSnaps, gotLogs, tc.wantSnaps, tc.wantLogs)
			}
			if n := len(tc.snaps) + len(tc.logs) - len(gotSnaps) - len(gotLogs); len(res.Snapshots)+len(res.Logs) != n {
				t.Fatalf("result lists %d files, %d were removed: %+v", len(res.Snapshots)+len(res.Logs), n, res)
			}
		})
	}
}

// byZxidName orders snapshot.<hex> and log.<hex> names by their zxid.
func byZxidName(a, b string) int {
	za, zb := nameZxid(a), nameZxid(b)
	switch {
	case za < zb:
		return -1
	case za > zb:
		return 1
	}
	return strings.Compare(a, b)
}

func nameZxid(name string) zxid.ID {
	if z, _, ok := snap.ParseName(name); ok {
		return z
	}
	z, _ := txnlog.ParseFileName(name)
	return z
}

// TestPurgeDefaultValidityReadsSnapshots checks that, without a validity
// function, a damaged snapshot is not counted as retained: the older
// intact one stays, with the logs it needs.
func TestPurgeDefaultValidityReadsSnapshots(t *testing.T) {
	fs := vfs.NewMem()
	if err := vfs.MkdirAllSync(fs, "/d/version-2", 0o755); err != nil {
		t.Fatal(err)
	}
	tree := datatree.New()
	var names []string
	for _, z := range []zxid.ID{0x10, 0x20, 0x30, 0x40} {
		tree.SetLastZxid(z)
		name, err := snap.Write(fs, "/d/version-2", z, nil, tree, nil, snap.Options{})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	for _, z := range []zxid.ID{1, 0x11, 0x21, 0x31, 0x41} {
		f, err := fs.Create(filepath.Join("/d/version-2", txnlog.FileName(z)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	// Damage the body of the newest snapshot; its seal still ends the file,
	// so only a full read finds it.
	newest := filepath.Join("/d/version-2", filepath.Base(names[3]))
	flipBit(t, fs, newest, 20)
	if err := snap.QuickCheck(fs, "/d/version-2", snap.Info{Name: filepath.Base(newest)}); err != nil {
		t.Fatalf("the damage should pass the quick check: %v", err)
	}
	if _, err := Purge(fs, "/d", "", 3, 0, nil); err != nil {
		t.Fatal(err)
	}
	got := listNames(t, fs, "/d/version-2")
	// Counting the damaged snapshot would keep 0x20 to 0x40 and drop
	// snapshot.10 and log.1; skipping it keeps 0x10 and everything it needs.
	want := []string{"log.1", "log.11", "log.21", "log.31", "log.41", "snapshot.10", "snapshot.20", "snapshot.30", "snapshot.40"}
	if !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
}

// TestPurgeReportsRemoveErrors checks that a failed remove is reported
// with the file's path.
func TestPurgeReportsRemoveErrors(t *testing.T) {
	fs := purgeDir(t, []zxid.ID{0x10, 0x20, 0x30, 0x40}, []zxid.ID{1, 0x11, 0x41})
	wrapped := &failingRemoveFS{FS: fs, path: "/l/version-2/log.1"}
	res, err := Purge(wrapped, "/d", "/l", 3, 0, func(snap.Info) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "/l/version-2/log.1") || !errors.Is(err, errRemove) {
		t.Fatalf("err = %v, want one naming log.1", err)
	}
	if !slices.Equal(res.Snapshots, []string{"/d/version-2/snapshot.10"}) {
		t.Fatalf("result %+v should list what was removed before the failure", res)
	}
}

var errRemove = errors.New("remove refused")

// failingRemoveFS refuses to remove one path.
type failingRemoveFS struct {
	vfs.FS
	path string
}

func (f *failingRemoveFS) Remove(name string) error {
	if name == f.path {
		return errRemove
	}
	return f.FS.Remove(name)
}

// TestAutopurge runs autopurge every few milliseconds while a client
// writes and snapshots come every ~20 txns: three snapshots stay, with the
// logs the oldest of them needs, and a restart from that oldest snapshot
// rebuilds the tree the server had.
func TestAutopurge(t *testing.T) {
	mem := vfs.NewMem()
	var logs logBuffer
	s := mustStartDurable(t, durableConfig(mem, logTo(&logs), func(c *Config) {
		c.Storage.SnapCount = 20
		c.Storage.PurgeInterval = 5 * time.Millisecond
		c.Storage.SnapRetainCount = 1 // raised to 3, as ZooKeeper does
	}))
	c := zkOpen(t, s)
	acks := newAckLog()
	for round := 0; strings.Count(logs.String(), "snapshot taken") < 8; round++ {
		if round == 40 {
			t.Fatalf("only %d snapshots after %d rounds of writes", strings.Count(logs.String(), "snapshot taken"), round)
		}
		acks.merge(writeSequentially(t, c, fmt.Sprintf("p%d", round), 30))
		waitSnapshotIdle(t, s)
	}
	eventually(t, waitTimeout, func() bool { return len(snapshots(t, mem)) == MinSnapRetainCount },
		"autopurge to leave %d snapshots", MinSnapRetainCount)
	before := inspectImage(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "autopurge removed old files") {
		t.Fatalf("autopurge never removed anything:\n%s", logs.String())
	}

	infos := snapshots(t, mem)
	files, err := txnlog.Files(mem, durableDataDir)
	if err != nil {
		t.Fatal(err)
	}
	oldest := infos[len(infos)-1].Zxid
	if files[0].Start > oldest+1 {
		t.Fatalf("the logs start at %v, after %v: snapshot %s cannot be restored", files[0].Start, oldest+1, infos[len(infos)-1].Name)
	}
	if extra := len(files) - len(txnlog.FilesNeededFrom(files, oldest)); extra > 1 {
		t.Fatalf("%d log files older than any kept snapshot needs were left: %v", extra, files)
	}

	// Restore from the oldest kept snapshot alone.
	for _, info := range infos[:len(infos)-1] {
		if err := mem.Remove(filepath.Join(durableSnapDir, info.Name)); err != nil {
			t.Fatal(err)
		}
	}
	s = mustStartDurable(t, durableConfig(mem))
	if d := diffImages(before, inspectImage(t, s)); d != "" {
		t.Fatalf("tree restored from %s differs:\n%s", infos[len(infos)-1].Name, d)
	}
	checkAcked(t, s, acks)
}
