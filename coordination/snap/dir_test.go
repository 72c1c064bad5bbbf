package snap

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/zxid"
)

// TestNewestValid fills a directory with snapshots, broken ones newer than
// the good ones, and files that are not snapshots at all.
func TestNewestValid(t *testing.T) {
	fs := newMemFS()
	if err := fs.MkdirAll("/d/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	tree, sessions := smallTree(t)
	good := writeSnapAt(t, fs, tree, sessions, 0x9, Options{})
	goodGz := writeSnapAt(t, fs, tree, sessions, 0xa, Options{Compression: CompressionGzip})
	whole := fs.get("/d/" + good)

	fs.put("/d/snapshot.b", whole[:len(whole)-1])                              // torn: fails QuickCheck
	fs.put("/d/snapshot.c", append(make([]byte, 20), 0, 0, 0, 1, '/'))         // passes QuickCheck only
	fs.put("/d/snapshot.d.snappy", whole)                                      // unsupported
	fs.put("/d/snapshot.e.gz", whole)                                          // no gzip magic
	fs.put("/d/snapshot.f", append(append([]byte{}, whole[:30]...), whole...)) // passes QuickCheck only
	fs.put("/d/.snapshot.1f.tmp", whole)                                       // a crash's leftover
	fs.put("/d/log.100", []byte("not a snapshot"))
	fs.put("/d/snapshot.zz", whole)

	infos, err := List(fs, "/d")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
	}
	wantNames := []string{"snapshot.f", "snapshot.e.gz", "snapshot.d.snappy", "snapshot.c", "snapshot.b", goodGz, good}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("List = %v, want %v", names, wantNames)
	}
	if infos[len(infos)-1] != (Info{Name: good, Zxid: 9, Size: int64(len(whole))}) {
		t.Errorf("info %+v", infos[len(infos)-1])
	}

	s, skipped, err := NewestValid(fs, "/d", 0)
	if err != nil || s == nil || s.Name != goodGz || s.Zxid != 0xa {
		t.Fatalf("NewestValid = %+v, %v", s, err)
	}
	wantErrs := map[string]error{
		"snapshot.f": ErrCorrupt, "snapshot.e.gz": ErrCorrupt, "snapshot.d.snappy": ErrUnsupported,
		"snapshot.c": ErrCorrupt, "snapshot.b": ErrCorrupt,
	}
	if len(skipped) != len(wantErrs) {
		t.Fatalf("skipped %v", skipped)
	}
	for _, sk := range skipped {
		if !errors.Is(sk.Err, wantErrs[sk.Info.Name]) {
			t.Errorf("%s skipped for %v, want %v", sk.Info.Name, sk.Err, wantErrs[sk.Info.Name])
		}
	}

	removed, err := RemoveTemp(fs, "/d")
	if err != nil || !slices.Equal(removed, []string{".snapshot.1f.tmp"}) || fs.get("/d/.snapshot.1f.tmp") != nil {
		t.Errorf("RemoveTemp = %v, %v", removed, err)
	}
}

func writeSnapAt(t *testing.T, fs *testFS, tree *datatree.Tree, sessions []SessionEntry, z zxid.ID, opts Options) string {
	t.Helper()
	name, err := Write(fs, "/d", z, sessions, tree, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func TestNewestValidEmpty(t *testing.T) {
	fs := newMemFS()
	s, skipped, err := NewestValid(fs, "/d", 0)
	if s != nil || skipped != nil || err != nil {
		t.Errorf("empty dir: %v, %v, %v", s, skipped, err)
	}
	if _, _, err := NewestValid(fs, "/missing", 0); err == nil {
		t.Error("missing dir: no error")
	}
}

// TestNewestValidKeepsFuzzyDigest: a digest record at the snapshot's own
// zxid that does not match its tree is what a fuzzy Apache ZooKeeper
// snapshot can hold (and every ZooKeeper snapshot.0 does), so the file is
// still used.
func TestNewestValidKeepsFuzzyDigest(t *testing.T) {
	fs := newMemFS()
	tree, sessions := smallTree(t)
	writeSnapAt(t, fs, tree, sessions, 5, Options{})
	bad := *digestOf(tree, 6)
	bad.TreeDigest++
	var buf []byte
	w := &appendWriter{b: &buf}
	if err := encode(w, sessions, tree, &bad, nil); err != nil {
		t.Fatal(err)
	}
	fs.put("/d/snapshot.6", buf)
	s, skipped, err := NewestValid(fs, "/d", 0)
	if err != nil || s == nil || s.Zxid != 6 || len(skipped) != 0 || s.DigestChecked {
		t.Errorf("NewestValid = %+v, %v, %v", s, skipped, err)
	}
}

type appendWriter struct{ b *[]byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	*w.b = append(*w.b, p...)
	return len(p), nil
}

func TestPurgePlan(t *testing.T) {
	snaps := func(zs ...zxid.ID) []Info {
		var out []Info
		for _, z := range zs {
			out = append(out, Info{Name: Name(z, CompressionNone), Zxid: z})
		}
		return out
	}
	logs := func(zs ...zxid.ID) []LogFile {
		var out []LogFile
		for _, z := range zs {
			out = append(out, LogFile{Name: "log." + Name(z, CompressionNone)[len(Prefix):], StartZxid: z})
		}
		return out
	}
	for _, tt := range []struct {
		name               string
		snaps              []Info
		logs               []LogFile
		retain             int
		wantSnaps, wantLog []string
	}{
		{"nothing", nil, logs(1, 5), 3, nil, nil},
		{"fewer than retain", snaps(0x10, 0x20), logs(1, 0x11), 3, nil, nil},
		{"keep 3 of 5, the log before the oldest kept stays",
			snaps(0x10, 0x20, 0x30, 0x40, 0x50), logs(1, 0x11, 0x21, 0x31, 0x41), 3,
			[]string{"snapshot.10", "snapshot.20"}, []string{"log.1", "log.11"}},
		{"a log starting at the oldest kept zxid is the one kept",
			snaps(0x10, 0x20, 0x30), logs(1, 0x11, 0x20, 0x21), 2,
			[]string{"snapshot.10"}, []string{"log.1", "log.11"}},
		{"unordered input, retain 0 means 1",
			snaps(0x30, 0x10, 0x20), logs(0x31, 1, 0x11), 0,
			[]string{"snapshot.10", "snapshot.20"}, []string{"log.1"}},
		{"all logs newer than the oldest kept snapshot",
			snaps(0x10, 0x20), logs(0x21, 0x31), 1, []string{"snapshot.10"}, nil},
	} {
		gotSnaps, gotLogs := PurgePlan(tt.snaps, tt.logs, tt.retain)
		if !slices.Equal(gotSnaps, tt.wantSnaps) || !slices.Equal(gotLogs, tt.wantLog) {
			t.Errorf("%s: PurgePlan = %v, %v; want %v, %v", tt.name, gotSnaps, gotLogs, tt.wantSnaps, tt.wantLog)
		}
	}
}

func TestTrigger(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 0))
	for range 50 {
		tr := NewTrigger(1000, 0, rng)
		if tr.txnRoll < 0 || tr.txnRoll >= 500 || tr.byteRoll != 0 {
			t.Fatalf("rolls %d, %d", tr.txnRoll, tr.byteRoll)
		}
		at := 500 + tr.txnRoll
		if tr.Due(at, 1<<62) || !tr.Due(at+1, 0) {
			t.Fatalf("roll %d: due at %d or not after", tr.txnRoll, at)
		}
	}
	tr := NewTrigger(1, 0, rng) // raised to 2: due after more than one txn
	if tr.Due(1, 0) || !tr.Due(2, 0) {
		t.Error("snapCount 1 is not treated as 2")
	}
	tr = NewTrigger(DefaultSnapCount, 1000, rng)
	if tr.byteRoll < 0 || tr.byteRoll >= 500 {
		t.Fatalf("byte roll %d", tr.byteRoll)
	}
	if tr.Due(0, 500+tr.byteRoll) || !tr.Due(0, 501+tr.byteRoll) {
		t.Errorf("size rule wrong at roll %d", tr.byteRoll)
	}
	seen := map[int]bool{}
	for range 200 {
		tr.Reset(rng)
		seen[tr.txnRoll/10000] = true
	}
	if len(seen) != 5 {
		t.Errorf("txn rolls cover %d of 5 tenths of [0, snapCount/2)", len(seen))
	}
	a, b := NewTrigger(100, 1<<20, rand.New(rand.NewPCG(1, 1))), NewTrigger(100, 1<<20, rand.New(rand.NewPCG(1, 1)))
	if *a != *b {
		t.Error("the same seed gave different rolls")
	}
}
