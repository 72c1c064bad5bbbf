package snap

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/zxid"
	"keeper/internal/invariants"
	"keeper/internal/vfs/errorfs"
)

func TestNames(t *testing.T) {
	for _, tt := range []struct {
		z    zxid.ID
		c    Compression
		name string
	}{
		{0, CompressionNone, "snapshot.0"},
		{0xb, CompressionNone, "snapshot.b"},
		{0x11, CompressionGzip, "snapshot.11.gz"},
		{0x100000001, CompressionNone, "snapshot.100000001"},
		{0x7fffffffffffffff, CompressionSnappy, "snapshot.7fffffffffffffff.snappy"},
	} {
		if got := Name(tt.z, tt.c); got != tt.name {
			t.Errorf("Name(%#x, %v) = %q, want %q", int64(tt.z), tt.c, got, tt.name)
		}
		z, c, ok := ParseName(tt.name)
		if !ok || z != tt.z || c != tt.c {
			t.Errorf("ParseName(%q) = %#x, %v, %v", tt.name, int64(z), c, ok)
		}
	}
	for _, tt := range []struct {
		name string
		z    zxid.ID
		ok   bool
	}{
		{"snapshot.00B", 0xb, true}, // Java's Long.parseLong(s, 16) takes both
		{"snapshot.", 0, false},
		{"snapshot.-1", 0, false},
		{"snapshot.+1", 0, false},
		{"snapshot.8000000000000000", 0, false}, // does not fit a long
		{"snapshot.g", 0, false},
		{"snapshot.1.tmp", 0, false},
		{"snapshot.1.gz.x", 0, false},
		{".snapshot.1.tmp", 0, false},
		{"log.1", 0, false},
		{"snapshot", 0, false},
	} {
		z, _, ok := ParseName(tt.name)
		if ok != tt.ok || z != tt.z {
			t.Errorf("ParseName(%q) = %#x, %v; want %#x, %v", tt.name, int64(z), ok, int64(tt.z), tt.ok)
		}
	}
	if name := tempName("snapshot.1f.gz"); name != ".snapshot.1f.gz.tmp" || !isTempName(name) {
		t.Errorf("tempName = %q", name)
	}
}

// TestRoundTrip writes random trees with sessions and reads them back: the
// trees, sessions and digest must be identical, and writing what was read
// must give the same bytes.
func TestRoundTrip(t *testing.T) {
	for _, opts := range []Options{{}, {Compression: CompressionGzip}, {LastProcessedZxid: true}} {
		for seed := range uint64(8) {
			tree, sessions := randomTree(t, seed, 300)
			fs := newMemFS()
			name := writeSnap(t, fs, "/d", tree, sessions, opts)
			if want := Name(tree.LastZxid(), opts.Compression); name != want {
				t.Fatalf("name %q, want %q", name, want)
			}
			s, err := Read(fs, filepath.Join("/d", name), 0)
			if err != nil {
				t.Fatalf("seed %d %+v: Read: %v", seed, opts, err)
			}
			if d := diffTrees(tree, s.Tree); d != "" {
				t.Fatalf("seed %d %+v: trees differ:\n%s", seed, opts, d)
			}
			wantSessions := slices.Clone(sessions)
			slices.SortFunc(wantSessions, func(a, b SessionEntry) int { return cmp.Compare(a.ID, b.ID) })
			if !slices.Equal(s.Sessions, wantSessions) {
				t.Errorf("sessions %v, want %v", s.Sessions, wantSessions)
			}
			wantLPZ := zxid.None
			if opts.LastProcessedZxid {
				wantLPZ = tree.LastZxid()
			}
			if s.Name != name || s.Zxid != tree.LastZxid() || s.Tree.LastZxid() != tree.LastZxid() ||
				!s.DigestChecked || *s.Digest != *digestOf(tree, tree.LastZxid()) || s.LastProcessedZxid != wantLPZ {
				t.Errorf("read %s: zxid %s, tree zxid %s, digest %+v (checked %v), lpz %s", s.Name, s.Zxid,
					s.Tree.LastZxid(), s.Digest, s.DigestChecked, s.LastProcessedZxid)
			}
			again := newMemFS()
			writeSnap(t, again, "/d", s.Tree, s.Sessions, opts)
			if !bytes.Equal(fs.get("/d/"+name), again.get("/d/"+name)) {
				t.Errorf("seed %d %+v: rewriting what was read changed the bytes", seed, opts)
			}
		}
	}
}

// TestLayout checks the file byte by byte: header, sessions, body, and
// each seal against hash/adler32 of the bytes before it.
func TestLayout(t *testing.T) {
	tree, sessions := smallTree(t)
	z := tree.LastZxid()
	fs := newMemFS()
	name := writeSnap(t, fs, "/d", tree, sessions, Options{LastProcessedZxid: true})
	b := fs.get("/d/" + name)

	var want []byte
	want = append(want, 0x5A, 0x4B, 0x53, 0x4E, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	want = binary.BigEndian.AppendUint32(want, 2)
	for _, id := range []int64{0x0100000000000005, 0x0100000000000006} { // sorted by id
		timeout := map[int64]int32{0x0100000000000005: 30000, 0x0100000000000006: 4000}[id]
		want = binary.BigEndian.AppendUint64(want, uint64(id))
		want = binary.BigEndian.AppendUint32(want, uint32(timeout))
	}
	want = append(want, bodyOf(t, tree)...)
	seal := func() {
		want = binary.BigEndian.AppendUint64(want, uint64(adler32.Checksum(want)))
		want = append(want, 0, 0, 0, 1, '/')
	}
	seal()
	want = binary.BigEndian.AppendUint64(want, uint64(z))
	want = binary.BigEndian.AppendUint32(want, 2)
	want = binary.BigEndian.AppendUint64(want, uint64(tree.Digest()))
	seal()
	want = binary.BigEndian.AppendUint64(want, uint64(z))
	seal()
	if !bytes.Equal(b, want) {
		t.Fatalf("file differs from the snapshot layout (docs/zookeeper-protocol.md):\n got % x\nwant % x", b, want)
	}

	// Without options: seal 2 is the end, as ZooKeeper 3.8 writes.
	fs = newMemFS()
	name = writeSnap(t, fs, "/d", tree, sessions, Options{})
	if b := fs.get("/d/" + name); !bytes.Equal(b, want[:len(want)-lpzBytes-sealBytes]) {
		t.Errorf("default layout is not the 3.8 one")
	}
	// Without a digest: seal 1 is the end.
	fs = newMemFS()
	name, err := Write(fs, "/d", z, sessions, tree, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b := fs.get("/d/" + name); !bytes.Equal(b, want[:len(want)-maxTrailerBytes]) {
		t.Errorf("digest-less layout wrong")
	}
	// Gzip: the same bytes, compressed.
	fs = newMemFS()
	name = writeSnap(t, fs, "/d", tree, sessions, Options{Compression: CompressionGzip})
	zr, err := gzip.NewReader(bytes.NewReader(fs.get("/d/" + name)))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(plain, want[:len(want)-lpzBytes-sealBytes]) {
		t.Errorf("gzip content differs from the plain file (err %v)", err)
	}
}

func TestAdlerUpdate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 20000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, cut := range []int{0, 1, 5551, 5552, 19999, 20000} {
		if got, want := adlerUpdate(adler32.Checksum(data[:cut]), data[cut:]), adler32.Checksum(data); got != want {
			t.Errorf("cut %d: %#x, want %#x", cut, got, want)
		}
	}
}

// TestDigestChecks covers when Read compares the digest record with the
// tree, and that Write refuses a record that contradicts the tree.
func TestDigestChecks(t *testing.T) {
	tree, sessions := smallTree(t)
	z := tree.LastZxid()
	for _, tt := range []struct {
		name    string
		digest  Digest
		checked bool
		err     error
	}{
		{"matching", Digest{z, 2, tree.Digest()}, true, nil},
		// A fuzzy file may hold later txns than its record names: Read
		// cannot tell, so it does not reject; Write still refuses it.
		{"wrong digest", Digest{z, 2, tree.Digest() + 1}, false, ErrDigestMismatch},
		{"fuzzy: newer zxid", Digest{z + 3, 2, 12345}, false, nil},
		{"older zxid is ignored", Digest{z - 1, 2, 12345}, false, nil},
		{"empty record", Digest{0, 2, 0}, false, nil},
		{"unknown version", Digest{z, 3, 12345}, false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := encode(&buf, sessions, tree, &tt.digest, nil); err != nil {
				t.Fatal(err)
			}
			fs := newMemFS()
			fs.put("/d/"+Name(z, CompressionNone), buf.Bytes())
			s, err := Read(fs, "/d/"+Name(z, CompressionNone), 0)
			if err != nil {
				t.Fatalf("Read error %v", err)
			}
			if s == nil || s.DigestChecked != tt.checked || *s.Digest != tt.digest {
				t.Fatalf("Read = %+v", s)
			}
			_, werr := Write(newMemFS(), "/d", z, sessions, tree, &tt.digest, Options{})
			if !errors.Is(werr, tt.err) || (tt.err == nil) != (werr == nil) {
				t.Errorf("Write error %v, want %v", werr, tt.err)
			}
		})
	}
}

func TestWriteRefuses(t *testing.T) {
	tree, sessions := smallTree(t)
	z := tree.LastZxid()
	for _, tt := range []struct {
		name     string
		z        zxid.ID
		sessions []SessionEntry
		tree     *datatree.Tree
		digest   *Digest
		opts     Options
	}{
		{"no tree", z, sessions, nil, nil, Options{}},
		{"negative zxid", -2, sessions, tree, nil, Options{}},
		{"snappy", z, sessions, tree, nil, Options{Compression: CompressionSnappy}},
		{"3.9 trailer without digest", z, sessions, tree, nil, Options{LastProcessedZxid: true}},
		{"duplicate session", z, append(slices.Clone(sessions), sessions[0]), tree, nil, Options{}},
	} {
		fs := newMemFS()
		if _, err := Write(fs, "/d", tt.z, tt.sessions, tt.tree, tt.digest, tt.opts); err == nil {
			t.Errorf("%s: Write succeeded", tt.name)
		}
		if n := fs.Count(errorfs.OpAll); n != 0 {
			t.Errorf("%s: Write made %d filesystem calls", tt.name, n)
		}
	}
}

func TestReadFileErrors(t *testing.T) {
	tree, sessions := smallTree(t)
	fs := newMemFS()
	name := writeSnap(t, fs, "/d", tree, sessions, Options{})
	boom := errors.New("disk on fire")
	fs.Add(errorfs.Rule{Ops: errorfs.OpRead, PathContains: name, Err: boom})
	_, err := Read(fs, "/d/"+name, 0)
	if !errors.Is(err, boom) || errors.Is(err, ErrCorrupt) {
		t.Errorf("Read with a failing disk: %v; want the disk's error, not ErrCorrupt", err)
	}
	fs.Reset()
	if _, err := Read(fs, "/d/snapshot.99", 0); err == nil || errors.Is(err, ErrCorrupt) {
		t.Errorf("Read of a missing file: %v", err)
	}
	fs.put("/d/snapshot.5.snappy", []byte("whatever"))
	if _, err := Read(fs, "/d/snapshot.5.snappy", 0); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Read of snappy: %v", err)
	}
}

func TestBadHeader(t *testing.T) {
	tree, sessions := smallTree(t)
	var buf bytes.Buffer
	if err := encode(&buf, sessions, tree, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		off  int
		val  byte
		want error
	}{
		{"magic", 0, 'X', ErrCorrupt},
		{"version", 7, 3, ErrUnsupported},
		{"negative session count", 16, 0x80, ErrCorrupt},
	} {
		b := slices.Clone(buf.Bytes())
		b[tt.off] = tt.val
		if _, err := decode(bytes.NewReader(b), "x", 1, 0, 64, 0); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	b := slices.Clone(buf.Bytes())
	b[11] ^= 1 // the dbid is not checked, but seal 1 covers it
	if _, err := decode(bytes.NewReader(b), "x", 1, 0, 64, 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("dbid flip: %v", err)
	}
}

func TestTrailerLengths(t *testing.T) {
	tree, sessions := smallTree(t)
	z := tree.LastZxid()
	var buf bytes.Buffer
	if err := encode(&buf, sessions, tree, nil, &z); err != nil { // 3.9 with digests off
		t.Fatal(err)
	}
	s, err := decode(bytes.NewReader(buf.Bytes()), "x", z, 0, 64, 0)
	if err != nil || s.Digest != nil || s.LastProcessedZxid != z {
		t.Fatalf("lpz-only trailer: %+v, %v", s, err)
	}
	for _, extra := range [][]byte{{0}, make([]byte, 13), make([]byte, maxTrailerBytes+1)} {
		b := append(slices.Clone(buf.Bytes()), extra...)
		if _, err := decode(bytes.NewReader(b), "x", z, 0, 64, 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d extra bytes: %v", len(extra), err)
		}
	}
}

// countingWriter counts the bytes written to it and drops them.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// TestEncodeStreams: encoding a large tree allocates a small fraction of
// the bytes it writes, so a snapshot is never built in memory first.
func TestEncodeStreams(t *testing.T) {
	if testing.Short() || invariants.Enabled {
		t.Skip("builds a 40 MB tree (quadratic with -tags invariants, which rehashes the tree per txn)")
	}
	b := newBuilder(t)
	data := bytes.Repeat([]byte("x"), 2000)
	for d := range 100 {
		dir := fmt.Sprintf("/d%03d", d)
		b.create(0, persistent, dir, nil, worldAll)
		for n := range 200 {
			b.create(0, persistent, fmt.Sprintf("%s/n%03d", dir, n), data, worldAll)
		}
	}
	var w countingWriter
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := encode(&w, nil, b.tree, digestOf(b.tree, b.tree.LastZxid()), nil); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	if w.n < 40e6 || allocated > uint64(w.n/20) {
		t.Errorf("wrote %d bytes, allocated %d", w.n, allocated)
	}
	t.Logf("wrote %d bytes, allocated %d", w.n, allocated)
}

// BenchmarkWriteRead writes and reads back the snapshot of a random tree
// built by 40,000 txns.
func BenchmarkWriteRead(b *testing.B) {
	tree, sessions := randomTree(b, 1, 40000)
	fs := newMemFS()
	b.ResetTimer()
	for b.Loop() {
		name := writeSnap(b, fs, "/d", tree, sessions, Options{})
		if _, err := Read(fs, "/d/"+name, 0); err != nil {
			b.Fatal(err)
		}
	}
}
