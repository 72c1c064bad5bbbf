package durablelog_test

import (
	"errors"
	"io/fs"
	"testing"

	"keeper/internal/durablelog"
	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
)

// TestCutAndRemove checks the repairs: Cut truncates and syncs the file;
// Remove removes the files, the last first, and syncs the directory.
func TestCutAndRemove(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	mustOK(t, efs.MkdirAll("/d", 0o755))
	for _, name := range []string{"/d/a", "/d/b", "/d/c"} {
		f, err := efs.Create(name)
		mustOK(t, err)
		_, err = f.Write([]byte("0123456789"))
		mustOK(t, err)
		mustOK(t, f.Close())
	}
	mustOK(t, durablelog.Cut(efs, "/d/a", 4, "test"))
	got, err := vfs.ReadFile(efs, "/d/a")
	if err != nil || string(got) != "0123" {
		t.Errorf("after Cut: %q, %v", got, err)
	}
	if n := efs.Count(errorfs.OpSync); n != 1 {
		t.Errorf("Cut synced %d times, want 1", n)
	}
	// The second removal fails: the last file went first, so what is left
	// is a prefix of the log.
	efs.Add(errorfs.Rule{Ops: errorfs.OpRemove, After: 1, Times: 1})
	if err := durablelog.Remove(efs, "/d", "test", "/d/b", "/d/c"); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Remove = %v, want the injected failure", err)
	}
	if _, err := efs.Stat("/d/c"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("/d/c is still there: %v", err)
	}
	mustOK(t, durablelog.Remove(efs, "/d", "test", "/d/b"))
	names, err := efs.List("/d")
	if err != nil || len(names) != 1 || names[0] != "a" {
		t.Errorf("left %v, %v; want [a]", names, err)
	}
	if n := efs.Count(errorfs.OpSyncDir); n != 1 {
		t.Errorf("Remove synced the directory %d times, want 1", n)
	}
	mustOK(t, durablelog.Remove(efs, "/d", "test")) // nothing to remove: no sync
}
