package vfs_test

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"

	"keeper/internal/vfs"
)

// tree returns every file in fsys as path -> contents; directories are
// listed as path + "/" -> "".
func tree(t *testing.T, fsys vfs.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		names, err := fsys.List(dir)
		mustOK(t, err)
		for _, n := range names {
			p := path.Join(dir, n)
			info, err := fsys.Stat(p)
			mustOK(t, err)
			if info.IsDir() {
				out[p+"/"] = ""
				walk(p)
				continue
			}
			out[p] = readFile(t, fsys, p)
		}
	}
	walk("/")
	return out
}

func create(t *testing.T, m *vfs.MemFS, name, data string, sync bool) vfs.File {
	t.Helper()
	f, err := m.Create(name)
	mustOK(t, err)
	_, err = f.Write([]byte(data))
	mustOK(t, err)
	if sync {
		mustOK(t, f.Sync())
	}
	return f
}

// TestCrashClone checks the worst-case crash (no rng): only what was synced
// survives, for file data and for directory entries.
func TestCrashClone(t *testing.T) {
	tests := []struct {
		name string
		do   func(t *testing.T, m *vfs.MemFS)
		want map[string]string
	}{
		{"unsynced file and entry are lost", func(t *testing.T, m *vfs.MemFS) {
			create(t, m, "/f", "data", false)
		}, map[string]string{}},
		{"synced entry, unsynced data: empty file", func(t *testing.T, m *vfs.MemFS) {
			f, err := m.Create("/f")
			mustOK(t, err)
			mustOK(t, m.SyncDir("/"))
			_, err = f.Write([]byte("data"))
			mustOK(t, err)
		}, map[string]string{"/f": ""}},
		{"synced data, unsynced entry: file lost", func(t *testing.T, m *vfs.MemFS) {
			create(t, m, "/f", "data", true)
		}, map[string]string{}},
		{"synced data and entry", func(t *testing.T, m *vfs.MemFS) {
			create(t, m, "/f", "data", true)
			mustOK(t, m.SyncDir("/"))
		}, map[string]string{"/f": "data"}},
		{"unsynced append is lost", func(t *testing.T, m *vfs.MemFS) {
			f := create(t, m, "/f", "data", true)
			mustOK(t, m.SyncDir("/"))
			_, err := f.Write([]byte("more"))
			mustOK(t, err)
		}, map[string]string{"/f": "data"}},
		{"SyncData persists a grown size", func(t *testing.T, m *vfs.MemFS) {
			f := create(t, m, "/f", "data", true)
			mustOK(t, m.SyncDir("/"))
			_, err := f.WriteAt([]byte("!"), 7)
			mustOK(t, err)
			mustOK(t, f.SyncData())
		}, map[string]string{"/f": "data\x00\x00\x00!"}},
		{"unsynced truncate is undone", func(t *testing.T, m *vfs.MemFS) {
			f := create(t, m, "/f", "data", true)
			mustOK(t, m.SyncDir("/"))
			mustOK(t, f.Truncate(1))
		}, map[string]string{"/f": "data"}},
		{"synced truncate", func(t *testing.T, m *vfs.MemFS) {
			f := create(t, m, "/f", "data", true)
			mustOK(t, m.SyncDir("/"))
			mustOK(t, f.Truncate(1))
			mustOK(t, f.Sync())
		}, map[string]string{"/f": "d"}},
		{"unsynced re-create keeps the old contents", func(t *testing.T, m *vfs.MemFS) {
			create(t, m, "/f", "data", true)
			mustOK(t, m.SyncDir("/"))
			create(t, m, "/f", "new", false)
		}, map[string]string{"/f": "data"}},
		{"unsynced rename is undone", func(t *testing.T, m *vfs.MemFS) {
			create(t, m, "/a", "data", true)
			mustOK(t, m.SyncDir("/"))
			mustOK(t, m.Rename("/a", "/b"))
		}, map[string]string{"/a": "data"}},
		{"synced rename", func(t *testing.T, m *vfs.MemFS) {
			create(t, m, "/a", "data", true)
			create(t, m, "/b", "old", true)
			mustOK(t, m.SyncDir("/"))
			mustOK(t, m.Rename("/a", "/b"))
			mustOK(t, m.SyncDir("/"))
		}, map[string]string{"/b": "data"}},
		{"rename across directories: syncing the target commits it whole", func(t *testing.T, m *vfs.MemFS) {
			mustOK(t, m.MkdirAll("/d1", 0o755))
			mustOK(t, m.MkdirAll("/d2", 0o755))
			create(t, m, "/d1/a", "data", true)
			mustOK(t, m.SyncDir("/d1"))
			mustOK(t, m.Rename("/d1/a", "/d2/b"))
			mustOK(t, m.SyncDir("/d2"))
		}, map[string]string{"/d1/": "", "/d2/": "", "/d2/b": "data"}},
		{"unsynced remove is undone", func(t *testing.T, m *vfs.MemFS) {
			create(t, m, "/f", "data", true)
			mustOK(t, m.SyncDir("/"))
			mustOK(t, m.Remove("/f"))
		}, map[string]string{"/f": "data"}},
		{"synced remove", func(t *testing.T, m *vfs.MemFS) {
			create(t, m, "/f", "data", true)
			mustOK(t, m.SyncDir("/"))
			mustOK(t, m.Remove("/f"))
			mustOK(t, m.SyncDir("/"))
		}, map[string]string{}},
		{"unsynced directories are lost with their files", func(t *testing.T, m *vfs.MemFS) {
			mustOK(t, m.MkdirAll("/x/y", 0o755))
			create(t, m, "/x/y/f", "data", true)
		}, map[string]string{}},
		{"MkdirAllSync, then a synced file", func(t *testing.T, m *vfs.MemFS) {
			mustOK(t, vfs.MkdirAllSync(m, "/x/y", 0o755))
			create(t, m, "/x/y/f", "data", true)
			mustOK(t, m.SyncDir("/x/y"))
		}, map[string]string{"/x/": "", "/x/y/": "", "/x/y/f": "data"}},
		{"directory changes are ordered: a later sync commits earlier changes", func(t *testing.T, m *vfs.MemFS) {
			mustOK(t, m.MkdirAll("/d1", 0o755))
			create(t, m, "/d1/early", "e", true)
			create(t, m, "/late", "l", true)
			mustOK(t, m.SyncDir("/"))
		}, map[string]string{"/d1/": "", "/d1/early": "e", "/late": "l"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vfs.NewMem()
			tt.do(t, m)
			before := tree(t, m)
			got := tree(t, m.CrashClone(nil))
			if !maps.Equal(got, tt.want) {
				t.Errorf("after crash:\n got %q\nwant %q", got, tt.want)
			}
			if after := tree(t, m); !maps.Equal(after, before) {
				t.Errorf("CrashClone changed the original:\n%q\n%q", before, after)
			}
			// A crash of a crash loses nothing more: everything is durable.
			c := m.CrashClone(nil)
			if again := tree(t, c.CrashClone(nil)); !maps.Equal(again, got) {
				t.Errorf("second crash: %q, want %q", again, got)
			}
		})
	}
}

// TestCrashCloneTorn checks crashes that let a random part of the unsynced
// writes through: the file always holds its synced contents followed by a
// prefix of what was written since, and every kind of outcome occurs.
func TestCrashCloneTorn(t *testing.T) {
	m := vfs.NewMem()
	f := create(t, m, "/log", "synced|", true)
	mustOK(t, m.SyncDir("/"))
	full := "synced|"
	for i := range 5 {
		chunk := fmt.Sprintf("write-%d|", i)
		_, err := f.Write([]byte(chunk))
		mustOK(t, err)
		full += chunk
	}
	lengths := map[int]bool{}
	for seed := range uint64(300) {
		c := m.CrashClone(rand.New(rand.NewPCG(seed, 1)))
		got := readFile(t, c, "/log")
		if len(got) < len("synced|") || !strings.HasPrefix(full, got) {
			t.Fatalf("seed %d: %q is not the synced part plus a prefix of %q", seed, got, full)
		}
		lengths[len(got)] = true
	}
	if !lengths[len("synced|")] || !lengths[len(full)] {
		t.Errorf("outcomes never included both extremes: %v", slices.Sorted(maps.Keys(lengths)))
	}
	torn := 0
	for n := range lengths {
		if !strings.HasSuffix(full[:n], "|") {
			torn++
		}
	}
	if torn == 0 {
		t.Errorf("no torn write among %d outcomes", len(lengths))
	}
}

// TestCrashCloneDirectoryPrefix checks that a crash with rng keeps a prefix
// of the unsynced directory changes, and a rename is never half done.
func TestCrashCloneDirectoryPrefix(t *testing.T) {
	m := vfs.NewMem()
	create(t, m, "/moved", "m", true)
	mustOK(t, m.SyncDir("/"))
	var names []string
	for i := range 6 {
		name := fmt.Sprintf("/f%d", i)
		create(t, m, name, "x", true)
		names = append(names, name)
		if i == 2 {
			mustOK(t, m.Rename("/moved", "/renamed"))
		}
	}
	seen := map[int]bool{}
	for seed := range uint64(200) {
		got := tree(t, m.CrashClone(rand.New(rand.NewPCG(seed, 2))))
		k := 0
		for k < len(names) && got[names[k]] != "" {
			k++
		}
		for _, later := range names[k:] {
			if _, ok := got[later]; ok {
				t.Fatalf("seed %d: %s survived but %s did not: not a prefix (%q)", seed, later, names[k], got)
			}
		}
		_, old := got["/moved"]
		_, renamed := got["/renamed"]
		if old == renamed {
			t.Fatalf("seed %d: /moved present %v, /renamed present %v: rename not atomic", seed, old, renamed)
		}
		if (renamed && k < 3) || (!renamed && k > 3) {
			t.Fatalf("seed %d: rename survival %v out of order with %d creates", seed, renamed, k)
		}
		seen[k] = true
	}
	if len(seen) != len(names)+1 {
		t.Errorf("only prefixes %v occurred", slices.Sorted(maps.Keys(seen)))
	}
}

// TestCrashCloneDeterministic checks that a seed decides the outcome.
func TestCrashCloneDeterministic(t *testing.T) {
	m := vfs.NewMem()
	mustOK(t, m.MkdirAll("/d", 0o755))
	for i := range 10 {
		f := create(t, m, fmt.Sprintf("/d/f%d", i), strings.Repeat("x", 10*i), i%2 == 0)
		_, err := f.Write(bytes.Repeat([]byte{'y'}, 100))
		mustOK(t, err)
		if i == 5 {
			mustOK(t, m.SyncDir("/d"))
		}
	}
	for seed := range uint64(20) {
		a := tree(t, m.CrashClone(rand.New(rand.NewPCG(seed, 3))))
		b := tree(t, m.CrashClone(rand.New(rand.NewPCG(seed, 3))))
		if !maps.Equal(a, b) {
			t.Fatalf("seed %d gave two outcomes:\n%q\n%q", seed, a, b)
		}
	}
}

// TestCrashCloneIndependent checks that the clone is a separate filesystem.
func TestCrashCloneIndependent(t *testing.T) {
	m := vfs.NewMem()
	f := create(t, m, "/f", "data", true)
	mustOK(t, m.SyncDir("/"))
	c := m.CrashClone(nil)
	writeFile(t, c, "/f", "clone")
	_, err := f.Write([]byte("+orig"))
	mustOK(t, err)
	if got := readFile(t, m, "/f"); got != "data+orig" {
		t.Errorf("original: %q", got)
	}
	if got := readFile(t, c, "/f"); got != "clone" {
		t.Errorf("clone: %q", got)
	}
}
