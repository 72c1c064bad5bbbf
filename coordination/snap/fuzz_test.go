package snap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"slices"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/zxid"
)

// fuzzSeeds are complete snapshots for the fuzzers to mutate: with and
// without a digest record and the 3.9 trailer. They are small on purpose:
// the fuzzing engine minimises each new input in time quadratic in its
// length.
func fuzzSeeds(f *testing.F) [][]byte {
	tree := datatree.New()
	z := zxid.ID(0x100000009)
	sessions := []SessionEntry{{ID: 0x0100000000000005, TimeoutMs: 30000}}
	var out [][]byte
	for _, v := range []struct {
		sessions []SessionEntry
		digest   *Digest
		lpz      *zxid.ID
	}{{nil, nil, nil}, {sessions, digestOf(tree, z), nil}, {nil, digestOf(tree, z), &z}, {sessions, nil, &z}} {
		var buf bytes.Buffer
		if err := encode(&buf, v.sessions, tree, v.digest, v.lpz); err != nil {
			f.Fatal(err)
		}
		out = append(out, buf.Bytes())
	}
	return out
}

// FuzzDecode feeds arbitrary bytes to the snapshot decoder. Rejecting them
// is fine; panicking or allocating far beyond the input is not, and
// whatever it accepts must survive encoding and decoding again unchanged.
func FuzzDecode(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed, int64(0x100000009))
	}
	f.Fuzz(func(t *testing.T, data []byte, z int64) {
		s, err := decode(bytes.NewReader(data), "fuzz", zxid.ID(z), 1<<16, 512, int64(len(data)))
		if err != nil && !errors.Is(err, ErrDigestMismatch) {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error is neither ErrCorrupt nor ErrUnsupported: %v", err)
			}
			return
		}
		var lpz *zxid.ID
		if s.LastProcessedZxid != zxid.None {
			lpz = &s.LastProcessedZxid
		}
		var buf bytes.Buffer
		if err := encode(&buf, s.Sessions, s.Tree, s.Digest, lpz); err != nil {
			t.Fatal(err)
		}
		again, err2 := decode(bytes.NewReader(buf.Bytes()), "again", zxid.ID(z), 1<<16, 512, 0)
		if (err == nil) != (err2 == nil) || again == nil {
			t.Fatalf("first decode: %v; second: %v", err, err2)
		}
		if d := diffTrees(s.Tree, again.Tree); d != "" {
			t.Fatalf("trees differ after a round trip:\n%s", d)
		}
		if !slices.Equal(s.Sessions, again.Sessions) || (s.Digest == nil) != (again.Digest == nil) ||
			(s.Digest != nil && *s.Digest != *again.Digest) || s.LastProcessedZxid != again.LastProcessedZxid {
			t.Fatalf("round trip changed %+v into %+v", s, again)
		}
	})
}

// FuzzReadGzip feeds arbitrary bytes to Read as a gzip snapshot.
func FuzzReadGzip(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(seed)
		_ = zw.Close()
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := newMemFS()
		fs.put("/d/snapshot.100000009.gz", data)
		_, err := Read(fs, "/d/snapshot.100000009.gz", 1<<16)
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrDigestMismatch) {
			t.Fatalf("unexpected error class: %v", err)
		}
	})
}
