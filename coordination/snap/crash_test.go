package snap

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"keeper/internal/vfs/errorfs"
)

// TestWriteIsDurable: once Write returns, a crash keeps the snapshot,
// even the worst crash the durability model allows.
func TestWriteIsDurable(t *testing.T) {
	tree, sessions := randomTree(t, 3, 200)
	fs := newMemFS()
	name := writeSnap(t, fs, "/d", tree, sessions, Options{})
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range 20 {
		var crashRNG *rand.Rand
		if i > 0 {
			crashRNG = rng
		}
		s, skipped, err := NewestValid(fs.crash(crashRNG), "/d", 0)
		if err != nil || s == nil || s.Name != name || len(skipped) != 0 {
			t.Fatalf("crash %d: NewestValid = %v, %v, %v", i, s, skipped, err)
		}
		if d := diffTrees(tree, s.Tree); d != "" {
			t.Fatalf("crash %d: tree differs:\n%s", i, d)
		}
	}
}

// TestWriteFailures fails each filesystem call of a Write in turn, in a
// directory that already holds an older snapshot. Write must report the
// failure and leave no snapshot.* file behind (unless only the final
// directory sync failed), and a crash afterwards must leave the old or the
// new snapshot, whole, and never a damaged one.
func TestWriteFailures(t *testing.T) {
	tree, sessions := smallTree(t)
	newZ := tree.LastZxid()
	setup := func() *testFS {
		fs := newMemFS()
		if _, err := Write(fs, "/d", 5, sessions, tree, nil, Options{}); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	probe := setup()
	before := probe.Count(errorfs.OpAll)
	writeSnap(t, probe, "/d", tree, sessions, Options{})
	calls := probe.Count(errorfs.OpAll) - before
	if calls < 6 {
		t.Fatalf("a Write made only %d filesystem calls", calls)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for k := range calls {
		fs := setup()
		fs.Add(errorfs.Rule{Ops: errorfs.OpAll, After: k, Times: 1})
		_, err := Write(fs, "/d", newZ, sessions, tree, digestOf(tree, newZ), Options{})
		if !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("call %d failed, yet Write returned %v", k, err)
		}
		syncDirFailed := strings.Contains(err.Error(), "sync directory")
		names, _ := fs.List("/d")
		want := []string{"snapshot.5"}
		if syncDirFailed {
			want = append(want, Name(newZ, CompressionNone))
			slices.Sort(want)
		}
		if !slices.Equal(names, want) {
			t.Errorf("call %d failed (%v): directory holds %v, want %v", k, err, names, want)
		}
		for i := range 5 {
			var crashRNG *rand.Rand
			if i > 0 {
				crashRNG = rng
			}
			s, skipped, err := NewestValid(fs.crash(crashRNG), "/d", 0)
			if err != nil || s == nil || (s.Zxid != 5 && s.Zxid != newZ) || len(skipped) != 0 {
				t.Fatalf("call %d failed, crash %d: NewestValid = %+v, %v, %v", k, i, s, skipped, err)
			}
		}
	}
}
