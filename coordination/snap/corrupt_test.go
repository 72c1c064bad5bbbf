package snap

import (
	"bytes"
	"errors"
	"testing"
)

// TestTruncation cuts a snapshot at every length. A prefix that ends
// exactly after seal 1 or seal 2 is itself a complete snapshot of the same
// tree (the format cannot tell it from a file written without the
// trailer), so it must read back unchanged; every other prefix must be
// rejected, by Read and by NewestValid, without panicking.
func TestTruncation(t *testing.T) {
	tree, sessions := smallTree(t)
	for _, opts := range []Options{{LastProcessedZxid: true}, {Compression: CompressionGzip}} {
		full := newMemFS()
		name := writeSnap(t, full, "/d", tree, sessions, opts)
		b := full.get("/d/" + name)
		seal1End := len(b) - maxTrailerBytes
		seal2End := len(b) - lpzBytes - sealBytes
		for n := range len(b) {
			fs := newMemFS()
			fs.put("/d/"+name, b[:n])
			complete := opts.Compression == CompressionNone && (n == seal1End || n == seal2End)
			s, err := Read(fs, "/d/"+name, 0)
			switch {
			case complete && err != nil:
				t.Fatalf("%v: prefix %d ends at a seal, but Read failed: %v", opts, n, err)
			case complete && diffTrees(tree, s.Tree) != "":
				t.Fatalf("%v: prefix %d: tree differs", opts, n)
			case !complete && !errors.Is(err, ErrCorrupt):
				t.Fatalf("%v: prefix %d of %d: Read error %v, want ErrCorrupt", opts, n, len(b), err)
			}
			newest, skipped, err := NewestValid(fs, "/d", 0)
			if err != nil {
				t.Fatal(err)
			}
			wantSkipped := 1
			if complete {
				wantSkipped = 0
			}
			if (newest != nil) != complete || len(skipped) != wantSkipped {
				t.Fatalf("%v: prefix %d: NewestValid = %v, skipped %v", opts, n, newest != nil, skipped)
			}
		}
	}
}

// TestBitFlips flips every bit of a plain snapshot: Adler-32 catches every
// single-bit error, so each must be rejected.
func TestBitFlips(t *testing.T) {
	tree, sessions := smallTree(t)
	z := tree.LastZxid()
	var buf bytes.Buffer
	if err := encode(&buf, sessions, tree, digestOf(tree, z), &z); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	for i := range len(b) * 8 {
		flipped := bytes.Clone(b)
		flipped[i/8] ^= 1 << (i % 8)
		if s, err := decode(bytes.NewReader(flipped), "x", z, 0, 64, 0); err == nil {
			t.Fatalf("bit %d (byte %d of %d) flipped, yet decoded: %+v", i, i/8, len(b), s)
		}
	}
}

// TestGzipBitFlips flips every bit of a gzip snapshot. Some header bytes
// (the mtime, the OS) are covered by nothing, so a flip may be harmless;
// but whatever reads must read the original tree.
func TestGzipBitFlips(t *testing.T) {
	tree, sessions := smallTree(t)
	fs := newMemFS()
	name := writeSnap(t, fs, "/d", tree, sessions, Options{Compression: CompressionGzip})
	b := fs.get("/d/" + name)
	for i := range len(b) * 8 {
		flipped := bytes.Clone(b)
		flipped[i/8] ^= 1 << (i % 8)
		fs.put("/d/"+name, flipped)
		s, err := Read(fs, "/d/"+name, 0)
		if err == nil && diffTrees(tree, s.Tree) != "" {
			t.Fatalf("bit %d flipped: read a different tree", i)
		}
	}
}
