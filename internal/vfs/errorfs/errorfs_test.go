package errorfs_test

import (
	"errors"
	"syscall"
	"testing"

	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
)

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRules(t *testing.T) {
	tests := []struct {
		name string
		rule errorfs.Rule
		ops  errorfs.Op // the ops run, one per step, in this order
		want []bool     // whether each step fails
	}{
		{"every sync", errorfs.Rule{Ops: errorfs.OpSync}, errorfs.OpSync, []bool{true, true, true}},
		{"after two", errorfs.Rule{Ops: errorfs.OpSync, After: 2}, errorfs.OpSync, []bool{false, false, true, true}},
		{"once", errorfs.Rule{Ops: errorfs.OpSync, After: 1, Times: 1}, errorfs.OpSync, []bool{false, true, false, false}},
		{"other op unaffected", errorfs.Rule{Ops: errorfs.OpSyncData}, errorfs.OpSync, []bool{false, false}},
		{"path filter", errorfs.Rule{Ops: errorfs.OpSync, PathContains: "other"}, errorfs.OpSync, []bool{false}},
		{"path match", errorfs.Rule{Ops: errorfs.OpAnySync, PathContains: "/f"}, errorfs.OpSync, []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			efs := errorfs.Wrap(vfs.NewMem())
			f, err := efs.Create("/f")
			mustOK(t, err)
			efs.Add(tt.rule)
			for i, wantFail := range tt.want {
				err := f.Sync()
				if (err != nil) != wantFail {
					t.Fatalf("step %d: err %v, want failure %v", i, err, wantFail)
				}
				if err != nil && (!errors.Is(err, errorfs.ErrInjected) || !errors.Is(err, syscall.EIO)) {
					t.Errorf("step %d: %v does not match ErrInjected and EIO", i, err)
				}
			}
			if got := efs.Count(tt.ops); got != len(tt.want) {
				t.Errorf("Count = %d, want %d", got, len(tt.want))
			}
		})
	}
}

func TestEveryOpCanFail(t *testing.T) {
	m := vfs.NewMem()
	mustOK(t, m.MkdirAll("/d", 0o755))
	f0, err := m.Create("/d/f")
	mustOK(t, err)
	mustOK(t, f0.Close())
	efs := errorfs.Wrap(m)
	file, err := efs.OpenReadWrite("/d/f")
	mustOK(t, err)
	steps := []struct {
		op  errorfs.Op
		run func() error
	}{
		{errorfs.OpCreate, func() error { _, err := efs.Create("/d/g"); return err }},
		{errorfs.OpOpen, func() error { _, err := efs.Open("/d/f"); return err }},
		{errorfs.OpOpenReadWrite, func() error { _, err := efs.OpenReadWrite("/d/f"); return err }},
		{errorfs.OpRemove, func() error { return efs.Remove("/d/f") }},
		{errorfs.OpRename, func() error { return efs.Rename("/d/f", "/d/h") }},
		{errorfs.OpMkdirAll, func() error { return efs.MkdirAll("/e", 0o755) }},
		{errorfs.OpList, func() error { _, err := efs.List("/d"); return err }},
		{errorfs.OpStat, func() error { _, err := efs.Stat("/d/f"); return err }},
		{errorfs.OpSyncDir, func() error { return efs.SyncDir("/d") }},
		{errorfs.OpRead, func() error { _, err := file.ReadAt(make([]byte, 1), 0); return err }},
		{errorfs.OpWrite, func() error { _, err := file.Write([]byte("x")); return err }},
		{errorfs.OpSync, file.Sync},
		{errorfs.OpSyncData, file.SyncData},
		{errorfs.OpTruncate, func() error { return file.Truncate(0) }},
		{errorfs.OpClose, file.Close},
	}
	for _, s := range steps {
		efs.Reset()
		efs.Add(errorfs.Rule{Ops: s.op, Err: syscall.EROFS, Times: 1})
		err := s.run()
		var inj *errorfs.Error
		if !errors.As(err, &inj) || inj.Op != s.op || !errors.Is(err, syscall.EROFS) {
			t.Errorf("%v: got %v", s.op, err)
		}
	}
	if got := errorfs.OpAll.String(); got != "create|open|openrw|remove|rename|mkdirall|list|stat|syncdir|read|write|sync|syncdata|truncate|close" {
		t.Errorf("OpAll = %s", got)
	}
	if _, err := m.Stat("/d/h"); err == nil {
		t.Error("a failed rename reached the wrapped FS")
	}
}

// TestLimitSpace checks the full-disk simulation: the write that crosses the
// limit is short and fails with ENOSPC, later ones fail outright, and only
// what fitted reached the wrapped FS.
func TestLimitSpace(t *testing.T) {
	m := vfs.NewMem()
	efs := errorfs.Wrap(m)
	f, err := efs.Create("/f")
	mustOK(t, err)
	efs.LimitSpace(10)
	if n, err := f.Write([]byte("0123456")); n != 7 || err != nil {
		t.Fatalf("first write = %d, %v", n, err)
	}
	n, err := f.Write([]byte("789abc"))
	if n != 3 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("crossing write = %d, %v; want 3, ENOSPC", n, err)
	}
	if n, err := f.WriteAt([]byte("z"), 0); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk = %d, %v", n, err)
	}
	if got, _ := vfs.ReadFile(m, "/f"); string(got) != "0123456789" {
		t.Errorf("wrapped file holds %q", got)
	}
	efs.LimitSpace(-1)
	if _, err := f.WriteAt([]byte("z"), 0); err != nil {
		t.Errorf("write after lifting the limit: %v", err)
	}
}

// TestFailedSyncLosesDataOnCrash checks that an injected sync failure does
// not sync: a crash of the wrapped MemFS then drops the data.
func TestFailedSyncLosesDataOnCrash(t *testing.T) {
	m := vfs.NewMem()
	efs := errorfs.Wrap(m)
	f, err := efs.Create("/f")
	mustOK(t, err)
	mustOK(t, efs.SyncDir("/"))
	_, err = f.Write([]byte("data"))
	mustOK(t, err)
	efs.Add(errorfs.Rule{Ops: errorfs.OpSyncData})
	if err := f.SyncData(); err == nil {
		t.Fatal("SyncData succeeded")
	}
	if got, _ := vfs.ReadFile(m.CrashClone(nil), "/f"); len(got) != 0 {
		t.Errorf("after a failed sync and a crash the file holds %q", got)
	}
}
