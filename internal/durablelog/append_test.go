package durablelog_test

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"keeper/internal/durablelog"
	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
)

// TestAppender checks what an Appender leaves in the file and which syncs
// it makes: fsync while the file's size changes, fdatasync inside the
// preallocated size, and the directory once.
func TestAppender(t *testing.T) {
	efs := errorfs.Wrap(vfs.NewMem())
	mustOK(t, efs.MkdirAll("/d", 0o755))
	a, err := durablelog.Create(efs, "/d", "f", "test")
	mustOK(t, err)
	a.Append([]byte("head"), []byte("er"))
	mustOK(t, a.Preallocate(64, 4))
	a.Append([]byte("one"))
	if a.Offset() != 9 || a.Buffered() != 9 || a.Flushed() != 0 || a.Size() != 64 || !a.Dirty() {
		t.Fatalf("offset %d buffered %d flushed %d size %d dirty %v", a.Offset(), a.Buffered(), a.Flushed(), a.Size(), a.Dirty())
	}
	mustOK(t, a.Sync())
	a.Append([]byte("two"))
	mustOK(t, a.Sync())
	mustOK(t, a.Sync()) // nothing new: no sync at all
	if got := [3]int{efs.Count(errorfs.OpSync), efs.Count(errorfs.OpSyncData), efs.Count(errorfs.OpSyncDir)}; got != [3]int{1, 1, 1} {
		t.Errorf("fsync, fdatasync, directory syncs = %v, want [1 1 1]", got)
	}
	mustOK(t, a.Preallocate(32, 1)) // smaller: nothing to do
	mustOK(t, a.Close())
	got, err := vfs.ReadFile(efs, "/d/f")
	mustOK(t, err)
	if want := append([]byte("headeronetwo"), make([]byte, 64-12)...); !bytes.Equal(got, want) {
		t.Errorf("file = %q, want %q", got, want)
	}
	if _, err := durablelog.Create(efs, "/d", "f", "test"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over an existing file: %v, want fs.ErrExist", err)
	}
}

// TestAppenderPoison checks that the first failure of a write,
// preallocation, sync or directory sync is returned by every later call,
// whatever the disk does then.
func TestAppenderPoison(t *testing.T) {
	tests := []struct {
		name string
		ops  errorfs.Op
		want string
	}{
		{"write", errorfs.OpWrite, "test: write /d/f at offset 0"},
		{"preallocate", errorfs.OpWrite, "test: preallocate /d/f to 4096 bytes"},
		{"fsync", errorfs.OpSync, "test: sync /d/f"},
		{"directory sync", errorfs.OpSyncDir, "test: sync /d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			efs := errorfs.Wrap(vfs.NewMem())
			mustOK(t, efs.MkdirAll("/d", 0o755))
			a, err := durablelog.Create(efs, "/d", "f", "test")
			mustOK(t, err)
			efs.Add(errorfs.Rule{Ops: tt.ops, Times: 1}) // fails once; the disk then works
			a.Append([]byte("record"))
			if tt.name == "preallocate" {
				err = a.Preallocate(4096, 1)
			} else {
				err = a.Sync()
			}
			if err == nil || !errors.Is(err, errorfs.ErrInjected) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("first failure = %v, want %q...", err, tt.want)
			}
			a.Append([]byte("more"))
			for name, later := range map[string]error{
				"Flush": a.Flush(), "Sync": a.Sync(), "Preallocate": a.Preallocate(1<<20, 1), "Err": a.Err(),
			} {
				if later != err {
					t.Errorf("%s after the failure = %v, want the first error %v", name, later, err)
				}
			}
		})
	}
}

// TestAppenderPreallocateRefusesOverwrite checks that preallocation never
// writes its zeros over bytes already written.
func TestAppenderPreallocateRefusesOverwrite(t *testing.T) {
	m := vfs.NewMem()
	mustOK(t, m.MkdirAll("/d", 0o755))
	a, err := durablelog.Create(m, "/d", "f", "test")
	mustOK(t, err)
	a.Append(make([]byte, 100))
	mustOK(t, a.Flush())
	if err := a.Preallocate(120, 40); err == nil {
		t.Fatal("zeros over written bytes were accepted")
	}
	mustOK(t, a.Preallocate(140, 40))
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
