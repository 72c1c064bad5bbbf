package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
)

// implementations runs a test against every FS: the OS one in a temp dir,
// MemFS, and MemFS behind an errorfs with no rules.
func implementations(t *testing.T, test func(t *testing.T, fsys vfs.FS, root string)) {
	t.Run("os", func(t *testing.T) { test(t, vfs.Default, t.TempDir()) })
	t.Run("mem", func(t *testing.T) { test(t, vfs.NewMem(), "/data") })
	t.Run("errorfs", func(t *testing.T) { test(t, errorfs.Wrap(vfs.NewMem()), "/data") })
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, fsys vfs.FS, name, data string) {
	t.Helper()
	f, err := fsys.Create(name)
	mustOK(t, err)
	_, err = f.Write([]byte(data))
	mustOK(t, err)
	mustOK(t, f.Close())
}

func readFile(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	b, err := vfs.ReadFile(fsys, name)
	mustOK(t, err)
	return string(b)
}

func TestFileOps(t *testing.T) {
	implementations(t, func(t *testing.T, fsys vfs.FS, root string) {
		mustOK(t, fsys.MkdirAll(root, 0o755))
		name := filepath.Join(root, "f")
		f, err := fsys.Create(name)
		mustOK(t, err)
		if _, err := f.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("XY"), 8); err != nil { // leaves a zero-filled gap
			t.Fatal(err)
		}
		mustOK(t, f.SyncData())
		mustOK(t, f.Sync())
		info, err := f.Stat()
		mustOK(t, err)
		if info.Size() != 10 || info.IsDir() || info.Name() != "f" {
			t.Errorf("stat: size %d dir %v name %q", info.Size(), info.IsDir(), info.Name())
		}
		buf := make([]byte, 10)
		if n, err := f.ReadAt(buf, 0); n != 10 || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt = %d, %v", n, err)
		}
		if want := "hello\x00\x00\x00XY"; string(buf) != want {
			t.Errorf("contents %q, want %q", buf, want)
		}
		if n, err := f.ReadAt(buf, 6); n != 4 || err != io.EOF {
			t.Errorf("short ReadAt = %d, %v; want 4, EOF", n, err)
		}
		mustOK(t, f.Truncate(3))
		mustOK(t, f.Truncate(5))
		mustOK(t, f.Close())
		if got := readFile(t, fsys, name); got != "hel\x00\x00" {
			t.Errorf("after truncates: %q", got)
		}
		if err := f.Close(); err == nil {
			t.Error("second Close succeeded")
		}

		r, err := fsys.Open(name)
		mustOK(t, err)
		if _, err := r.Write([]byte("x")); err == nil {
			t.Error("write to a file opened read-only succeeded")
		}
		all, err := io.ReadAll(r)
		mustOK(t, err)
		if string(all) != "hel\x00\x00" {
			t.Errorf("Read: %q", all)
		}
		mustOK(t, r.Close())

		w, err := fsys.OpenReadWrite(name)
		mustOK(t, err)
		_, err = w.WriteAt([]byte("J"), 0)
		mustOK(t, err)
		mustOK(t, w.Close())
		if got := readFile(t, fsys, name); got != "Jel\x00\x00" {
			t.Errorf("after OpenReadWrite: %q", got)
		}
		writeFile(t, fsys, name, "new") // Create truncates
		if got := readFile(t, fsys, name); got != "new" {
			t.Errorf("after re-create: %q", got)
		}
	})
}

func TestDirOps(t *testing.T) {
	implementations(t, func(t *testing.T, fsys vfs.FS, root string) {
		sub := filepath.Join(root, "a", "b")
		mustOK(t, vfs.MkdirAllSync(fsys, sub, 0o755))
		mustOK(t, vfs.MkdirAllSync(fsys, sub, 0o755)) // exists: nothing to do
		for _, n := range []string{"z", "m", "c"} {
			writeFile(t, fsys, filepath.Join(sub, n), n)
		}
		names, err := fsys.List(sub)
		mustOK(t, err)
		if !slices.Equal(names, []string{"c", "m", "z"}) {
			t.Errorf("List = %v", names)
		}
		mustOK(t, fsys.Rename(filepath.Join(sub, "c"), filepath.Join(sub, "z"))) // replaces z
		if got := readFile(t, fsys, filepath.Join(sub, "z")); got != "c" {
			t.Errorf("renamed file holds %q", got)
		}
		if _, err := fsys.Stat(filepath.Join(sub, "c")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat of renamed-away name: %v", err)
		}
		if err := fsys.Rename(filepath.Join(sub, "nope"), filepath.Join(sub, "x")); err == nil {
			t.Error("rename of a missing file succeeded")
		}
		if err := fsys.Remove(sub); err == nil {
			t.Error("remove of a non-empty directory succeeded")
		}
		mustOK(t, fsys.Remove(filepath.Join(sub, "m")))
		mustOK(t, fsys.Remove(filepath.Join(sub, "z")))
		mustOK(t, fsys.SyncDir(sub))
		mustOK(t, fsys.Remove(sub))
		info, err := fsys.Stat(filepath.Join(root, "a"))
		mustOK(t, err)
		if !info.IsDir() {
			t.Error("Stat of a directory: not a directory")
		}
		if _, err := fsys.Open(filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open of a missing file: %v", err)
		}
		if _, err := fsys.List(filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("List of a missing directory: %v", err)
		}
		if _, err := fsys.Create(filepath.Join(root, "missing", "f")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Create in a missing directory: %v", err)
		}
	})
}

func TestRemovedFileStaysOpen(t *testing.T) {
	implementations(t, func(t *testing.T, fsys vfs.FS, root string) {
		mustOK(t, fsys.MkdirAll(root, 0o755))
		name := filepath.Join(root, "f")
		writeFile(t, fsys, name, "data")
		f, err := fsys.Open(name)
		mustOK(t, err)
		defer f.Close()
		mustOK(t, fsys.Remove(name))
		got, err := io.ReadAll(f)
		mustOK(t, err)
		if !bytes.Equal(got, []byte("data")) {
			t.Errorf("read after remove: %q", got)
		}
	})
}

// TestConcurrentUse runs writers on separate files and a lister at once;
// under -race this checks that MemFS and errorfs guard their state.
func TestConcurrentUse(t *testing.T) {
	implementations(t, func(t *testing.T, fsys vfs.FS, root string) {
		mustOK(t, fsys.MkdirAll(root, 0o755))
		done := make(chan error, 5)
		for w := range 4 {
			go func() {
				f, err := fsys.Create(filepath.Join(root, string(rune('a'+w))))
				if err != nil {
					done <- err
					return
				}
				for range 50 {
					if _, err := f.Write([]byte("x")); err != nil {
						done <- err
						return
					}
				}
				if err := f.SyncData(); err != nil {
					done <- err
					return
				}
				done <- f.Close()
			}()
		}
		go func() {
			for range 50 {
				if _, err := fsys.List(root); err != nil {
					done <- err
					return
				}
			}
			done <- fsys.SyncDir(root)
		}()
		for range 5 {
			mustOK(t, <-done)
		}
		for w := range 4 {
			if got := readFile(t, fsys, filepath.Join(root, string(rune('a'+w)))); len(got) != 50 {
				t.Errorf("file %d holds %d bytes", w, len(got))
			}
		}
	})
}
