package entrystore

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"keeper/internal/vfs"
)

// TestIndexCodecs pins the index's key and value bytes and the lastId
// file, and checks that each decoder inverts its encoder and refuses what
// it cannot have written.
func TestIndexCodecs(t *testing.T) {
	for _, tc := range []struct {
		ledgerID, entryID int64
		key               string
	}{
		{0, 0, "65" + "0000000000000000" + "0000000000000000"},
		{1, 2, "65" + "0000000000000001" + "0000000000000002"},
		{math.MaxInt64, math.MaxInt64, "65" + "7fffffffffffffff" + "7fffffffffffffff"},
	} {
		k := locationKey(tc.ledgerID, tc.entryID)
		if got := hexString(k); got != tc.key {
			t.Errorf("locationKey(%d, %d) = %s, want %s", tc.ledgerID, tc.entryID, got, tc.key)
		}
		l, e, ok := decodeLocationKey(k)
		if !ok || l != tc.ledgerID || e != tc.entryID {
			t.Errorf("decodeLocationKey(%s) = %d, %d, %v", tc.key, l, e, ok)
		}
	}
	for _, bad := range [][]byte{nil, ledgerKey(1), append(locationKey(1, 2), 0), locationKey(1, 2)[:16]} {
		if _, _, ok := decodeLocationKey(bad); ok {
			t.Errorf("decodeLocationKey(%x) accepted", bad)
		}
	}
	lower, upper := ledgerLocationBounds(7)
	if hexString(lower) != "65"+"0000000000000007"+"0000000000000000" ||
		hexString(upper) != "65"+"0000000000000007"+"8000000000000000" {
		t.Errorf("ledgerLocationBounds(7) = %x, %x", lower, upper)
	}
	for _, loc := range []uint64{0, 1, 1<<32 | 1024, math.MaxUint64} {
		got, err := decodeLocation(encodeLocation(loc))
		if err != nil || got != loc {
			t.Errorf("decodeLocation(encodeLocation(%#x)) = %#x, %v", loc, got, err)
		}
	}
	for _, bad := range [][]byte{nil, make([]byte, 7), make([]byte, 9)} {
		if _, err := decodeLocation(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeLocation(%x) = %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestLastIDFile(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{0, 10, math.MaxInt64} {
		if err := writeLastID(fsys, "/d", id); err != nil {
			t.Fatal(err)
		}
		if got, err := readLastID(fsys, "/d/"+lastIDFile); err != nil || got != id {
			t.Errorf("lastId %d read back as %d, %v", id, got, err)
		}
	}
	data, err := vfs.ReadFile(fsys, "/d/"+lastIDFile)
	if err != nil || string(data) != "7fffffffffffffff\n" {
		t.Errorf("lastId file holds %q, %v", data, err)
	}
	for _, bad := range []string{"", "\n", "-1\n", "xyz\n", "8000000000000000\n"} {
		writeRaw(t, fsys, "/d/bad", []byte(bad))
		if _, err := readLastID(fsys, "/d/bad"); !errors.Is(err, ErrCorrupt) {
			t.Errorf("lastId %q: %v, want ErrCorrupt", bad, err)
		}
	}
}

// FuzzIndexValues decodes arbitrary index keys, index values and lastId
// files: what decodes must encode back to the same bytes (lastId: to the
// same id).
func FuzzIndexValues(f *testing.F) {
	f.Add(locationKey(1, 2))
	f.Add(encodeLocation(42))
	f.Add([]byte("1f\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if l, e, ok := decodeLocationKey(b); ok && hexString(locationKey(l, e)) != hexString(b) {
			t.Fatalf("location key %x decodes to %d/%d, which encodes as %x", b, l, e, locationKey(l, e))
		}
		if loc, err := decodeLocation(b); err == nil && hexString(encodeLocation(loc)) != hexString(b) {
			t.Fatalf("location %x decodes to %#x", b, loc)
		} else if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeLocation error %v is not ErrCorrupt", err)
		}
		fsys := vfs.NewMem()
		writeRaw(t, fsys, "/lastId", b)
		id, err := readLastID(fsys, "/lastId")
		switch {
		case err != nil && !errors.Is(err, ErrCorrupt):
			t.Fatalf("readLastID error %v is not ErrCorrupt", err)
		case err == nil && id < 0:
			t.Fatalf("readLastID(%q) = %d", b, id)
		}
	})
}

func hexString(b []byte) string { return fmt.Sprintf("%x", b) }

// writeRaw writes data as the file path.
func writeRaw(t *testing.T, fsys vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fsys.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
