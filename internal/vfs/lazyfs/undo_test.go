package lazyfs

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"keeper/internal/vfs"
)

// TestKillDuringSync kills the process while a sync is under way (its
// changes written to the OS, the fsync not returned): Recover must leave
// the synced contents before it plus a prefix of its changes, the last
// perhaps torn, and over many seeds every kind of outcome shows up.
func TestKillDuringSync(t *testing.T) {
	const synced = "rec1rec2"
	changes := []string{"rec3", "rec4", "rec5"}
	outcomes := map[string]bool{}
	for seed := range uint64(60) {
		dir := t.TempDir()
		undo := filepath.Join(dir, "undo")
		lfs, err := New(vfs.Default, Options{UndoDir: undo})
		mustOK(t, err)
		mustOK(t, os.MkdirAll(undo, 0o755))
		name := filepath.Join(dir, "log")
		f, err := lfs.Create(name)
		mustOK(t, err)
		_, err = f.WriteAt([]byte(synced+"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), 0) // preallocated
		mustOK(t, err)
		mustOK(t, f.Sync())
		if names, _ := os.ReadDir(undo); len(names) != 0 {
			t.Fatalf("a finished sync left %d undo records", len(names))
		}
		for i, c := range changes {
			_, err = f.WriteAt([]byte(c), int64(len(synced)+4*i))
			mustOK(t, err)
		}
		h := f.(*file)
		h.node.syncMu.Lock()
		_, err = h.beginSync()
		h.node.syncMu.Unlock()
		mustOK(t, err)
		if got := osFile(t, name); got != synced+"rec3rec4rec5" {
			t.Fatalf("mid-sync the OS holds %q", got)
		}
		lfs.Crash()
		st, err := Recover(vfs.Default, undo, rand.New(rand.NewPCG(seed, seed)))
		mustOK(t, err)
		if st.Undone != 1 || !reflect.DeepEqual(st.Files, []string{name}) {
			t.Fatalf("Recover: %+v", st)
		}
		got := osFile(t, name)
		if len(got) != len(synced)+12 || got[:len(synced)] != synced {
			t.Fatalf("after recovery: %q", got)
		}
		tail := bytes.TrimRight([]byte(got[len(synced):]), "\x00")
		if !bytes.HasPrefix([]byte("rec3rec4rec5"), tail) {
			t.Fatalf("after recovery the tail %q is not a prefix of the sync's writes", tail)
		}
		switch {
		case len(tail) == 12:
			outcomes["all kept"] = true
		case len(tail) == 0:
			outcomes["all lost"] = true
		case len(tail)%4 != 0:
			outcomes["torn"] = true
		default:
			outcomes["some kept"] = true
		}
		if names, _ := os.ReadDir(undo); len(names) != 0 {
			t.Fatalf("Recover left %d records", len(names))
		}
	}
	if len(outcomes) != 4 {
		t.Errorf("outcomes over 60 seeds: %v; want all four kinds", outcomes)
	}
}

// TestRecoverIgnoresPartialRecord: a record cut short was being written
// when the process died, before its sync wrote anything.
func TestRecoverIgnoresPartialRecord(t *testing.T) {
	dir := t.TempDir()
	undo := filepath.Join(dir, "undo")
	name := filepath.Join(dir, "f")
	mustOK(t, os.WriteFile(name, []byte("intact"), 0o644))
	rec := &undoRecord{path: name, oldSize: 2, changes: []change{{off: 2, data: []byte("zz")}}}
	b := rec.encode()
	mustOK(t, os.MkdirAll(undo, 0o755))
	mustOK(t, os.WriteFile(filepath.Join(undo, "1.undo"), b[:len(b)-3], 0o644))
	mustOK(t, os.WriteFile(filepath.Join(undo, "2.undo"), b, 0o644))
	mustOK(t, os.Remove(name)) // the second record's file is gone: nothing to do
	mustOK(t, os.WriteFile(filepath.Join(dir, "g"), []byte("intact"), 0o644))
	st, err := Recover(vfs.Default, undo, rand.New(rand.NewPCG(1, 1)))
	mustOK(t, err)
	if st.Undone != 0 {
		t.Errorf("Recover undid %+v", st)
	}
	if names, _ := os.ReadDir(undo); len(names) != 0 {
		t.Errorf("Recover left %d records", len(names))
	}
}

func TestUndoRoundTrip(t *testing.T) {
	rec := &undoRecord{path: "/a/b", oldSize: 40,
		old:     []span{{off: 0, n: 3, data: []byte("abc")}, {off: 10, n: 30, zero: true}},
		changes: []change{{off: 5, data: []byte("xyz")}, {off: 7, trunc: true}, {off: 9, data: []byte("q")}}}
	got, err := decodeUndo(rec.encode())
	mustOK(t, err)
	if !reflect.DeepEqual(got, rec) {
		t.Errorf("round trip: %+v, want %+v", got, rec)
	}
	if got := overwritten(rec.changes, 8); !reflect.DeepEqual(got, [][2]int64{{5, 8}}) {
		t.Errorf("overwritten = %v", got)
	}
}

// FuzzDecodeUndo feeds arbitrary bytes to the record decoder: it must
// refuse garbage without panicking, and what it accepts must round-trip.
func FuzzDecodeUndo(f *testing.F) {
	f.Add((&undoRecord{path: "/x", oldSize: 4, old: []span{{off: 0, n: 2, data: []byte("ab")}},
		changes: []change{{off: 1, data: []byte("c")}}}).encode())
	f.Add([]byte(undoMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeUndo(b)
		if err != nil {
			return
		}
		again, err := decodeUndo(rec.encode())
		if err != nil || !reflect.DeepEqual(rec, again) {
			t.Fatalf("round trip of %+v: %+v, %v", rec, again, err)
		}
	})
}
