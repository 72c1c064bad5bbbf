package chaos

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkproto"
	"keeper/internal/vfs"
)

// testDataDir writes a log of n txns and a fake snapshot into a new data
// directory.
func testDataDir(t *testing.T, n uint32) string {
	t.Helper()
	dir := t.TempDir()
	l, err := txnlog.Open(vfs.Default, dir, txnlog.Config{PreAllocSizeBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint32(1); i <= n; i++ {
		if err := l.Append(tx(i, int32(i), zkproto.OpSetData, &txn.SetData{Path: "/k", Data: []byte("value"), Version: int32(i)})); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, txnlog.DirName, "snapshot.100000005")
	if err := os.WriteFile(snap, bytes.Repeat([]byte("snapshot"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// dirState is every file's content.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, txnlog.DirName, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

func TestCorruptions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cor := range Corruptions {
		t.Run(cor.Name, func(t *testing.T) {
			dir := testDataDir(t, 20)
			before := dirState(t, dir)
			desc, err := cor.Apply(dir, rng)
			if err != nil {
				t.Fatal(err)
			}
			after := dirState(t, dir)
			changed := len(before) != len(after)
			for name, b := range before {
				changed = changed || after[name] != b
			}
			if !changed {
				t.Fatalf("%s (%s) changed nothing", cor.Name, desc)
			}
			_, lastLogErr := lastLogged(dir)
			t.Logf("%s; the log now reads: %v", desc, lastLogErr)
		})
	}
	if _, err := Corruptions[0].Apply(t.TempDir(), rng); err == nil {
		t.Fatal("corrupting an empty directory did not fail")
	}
}
