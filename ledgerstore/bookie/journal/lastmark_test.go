package journal_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
	"keeper/ledgerstore/bookie/journal"
)

// ledgerDirs makes durable ledger "current" directories.
func ledgerDirs(t *testing.T, fsys vfs.FS, n int) []string {
	t.Helper()
	var dirs []string
	for i := range n {
		d := fmt.Sprintf("/ledgers%d/current", i)
		mustOK(t, vfs.MkdirAllSync(fsys, d, 0o755))
		dirs = append(dirs, d)
	}
	return dirs
}

// TestLastMarkBytes pins the lastMark file: 16 bytes, log id then offset,
// big-endian, and nothing left behind.
func TestLastMarkBytes(t *testing.T) {
	m := vfs.NewMem()
	dirs := ledgerDirs(t, m, 2)
	mark := journal.Position{LogID: 0x18a5b2c3d4e, Offset: 0x1234}
	mustOK(t, journal.WriteLastMark(m, dirs, "lastMark", mark))
	for _, d := range dirs {
		data, err := vfs.ReadFile(m, d+"/lastMark")
		mustOK(t, err)
		if got, want := hex.EncodeToString(data), "0000018a5b2c3d4e"+"0000000000001234"; got != want {
			t.Errorf("%s: %s, want %s", d, got, want)
		}
		names, err := m.List(d)
		mustOK(t, err)
		if !slices.Equal(names, []string{"lastMark"}) {
			t.Errorf("%s holds %v", d, names)
		}
	}
	got, err := journal.ReadLastMark(m, dirs, "lastMark")
	if err != nil || got != mark {
		t.Errorf("ReadLastMark = %v, %v; want %v", got, err, mark)
	}
}

// TestReadLastMark takes the greatest mark across directories, skips
// directories without one, and refuses damaged files.
func TestReadLastMark(t *testing.T) {
	m := vfs.NewMem()
	dirs := ledgerDirs(t, m, 4)
	if got, err := journal.ReadLastMark(m, dirs, "lastMark"); err != nil || got != (journal.Position{}) {
		t.Errorf("no marks: %v, %v; want the zero position", got, err)
	}
	mustOK(t, journal.WriteLastMark(m, dirs[0:1], "lastMark", journal.Position{LogID: 5, Offset: 9000}))
	mustOK(t, journal.WriteLastMark(m, dirs[1:2], "lastMark", journal.Position{LogID: 6, Offset: 512}))
	mustOK(t, journal.WriteLastMark(m, dirs[2:3], "lastMark", journal.Position{LogID: 6, Offset: 100}))
	want := journal.Position{LogID: 6, Offset: 512}
	if got, err := journal.ReadLastMark(m, append(dirs, "/missing"), "lastMark"); err != nil || got != want {
		t.Errorf("ReadLastMark = %v, %v; want %v", got, err, want)
	}
	for name, data := range map[string][]byte{
		"short":           make([]byte, 15),
		"long":            make([]byte, 17),
		"negative id":     bytes.Repeat([]byte{0xff}, 16),
		"negative offset": append(make([]byte, 8), bytes.Repeat([]byte{0xff}, 8)...),
	} {
		f, err := m.Create(dirs[3] + "/lastMark")
		mustOK(t, err)
		_, err = f.Write(data)
		mustOK(t, err)
		mustOK(t, f.Close())
		if _, err := journal.ReadLastMark(m, dirs, "lastMark"); !errors.Is(err, journal.ErrCorrupt) {
			t.Errorf("%s file: %v, want ErrCorrupt", name, err)
		}
	}
	if err := journal.WriteLastMark(m, dirs, "lastMark", journal.Position{LogID: -1}); err == nil {
		t.Error("WriteLastMark accepted a negative log id")
	}
	if got := []string{journal.LastMarkName(0, 1), journal.LastMarkName(2, 3)}; !slices.Equal(got, []string{"lastMark", "lastMark.2"}) {
		t.Errorf("LastMarkName: %v", got)
	}
}

// TestLastMarkCrash fails each operation of a lastMark update in turn and
// then crashes, with and without torn writes: every directory then holds
// the old mark or the new one, never an error or a mix.
func TestLastMarkCrash(t *testing.T) {
	oldMark, newMark := journal.Position{LogID: 7, Offset: 4096}, journal.Position{LogID: 8, Offset: 1024}
	setup := func() (*vfs.MemFS, []string) {
		m := vfs.NewMem()
		dirs := ledgerDirs(t, m, 2)
		mustOK(t, journal.WriteLastMark(m, dirs, "lastMark", oldMark))
		return m, dirs
	}
	probe, dirs := setup()
	pfs := errorfs.Wrap(probe)
	mustOK(t, journal.WriteLastMark(pfs, dirs, "lastMark", newMark))
	total := pfs.Count(errorfs.OpAll)
	for n := 0; n <= total; n++ {
		m, dirs := setup()
		efs := errorfs.Wrap(m)
		efs.Add(errorfs.Rule{Ops: errorfs.OpAll, After: n}) // the disk dies at operation n
		err := journal.WriteLastMark(efs, dirs, "lastMark", newMark)
		if (err == nil) != (n == total) {
			t.Fatalf("operation %d failed, WriteLastMark = %v", n, err)
		}
		for seed := range uint64(4) {
			var rng *rand.Rand
			if seed > 0 {
				rng = rand.New(rand.NewPCG(uint64(n), seed))
			}
			crashed := m.CrashClone(rng)
			for _, d := range dirs {
				got, err := journal.ReadLastMark(crashed, []string{d}, "lastMark")
				if err != nil || (got != oldMark && got != newMark) {
					t.Fatalf("operation %d failed, crash %d: %s holds %v (%v)", n, seed, d, got, err)
				}
				if n == total && rng == nil && got != newMark {
					t.Fatalf("a completed WriteLastMark did not survive a crash: %s holds %v", d, got)
				}
			}
		}
	}
}

// TestRemoveBefore deletes what replay from the mark no longer needs,
// keeps the backups asked for, and replay from the mark still reads every
// record after it.
func TestRemoveBefore(t *testing.T) {
	for _, keep := range []int{0, 2, 5} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			m := vfs.NewMem()
			j, err := journal.Open(m, "/j", testConfig)
			mustOK(t, err)
			var marks []journal.Position
			for i := range 400 {
				_, err := j.Append(entryRec(t, 3, int64(i), 300))
				mustOK(t, err)
				if i%20 == 19 {
					mustOK(t, j.Sync())
					marks = append(marks, j.Mark())
				}
			}
			mark := marks[len(marks)/2]
			want := replay(m, "/j", mark, testConfig)
			mustOK(t, want.err)
			before, err := journal.Files(m, "/j")
			mustOK(t, err)
			removed, err := journal.RemoveBefore(m, "/j", mark, keep)
			mustOK(t, err)
			var wantRemoved []int64
			older := 0
			for _, f := range before {
				if f.LogID < mark.LogID {
					older++
				}
			}
			for _, f := range before[:max(0, older-keep)] {
				wantRemoved = append(wantRemoved, f.LogID)
			}
			if !slices.Equal(removed, wantRemoved) || len(wantRemoved) == 0 && keep == 0 {
				t.Fatalf("removed %x, want %x (mark %v, %d files)", removed, wantRemoved, mark, len(before))
			}
			after, err := journal.Files(m, "/j")
			mustOK(t, err)
			if len(after) != len(before)-len(removed) || after[0].LogID > mark.LogID {
				t.Errorf("left %d of %d files, first %#x, mark %v", len(after), len(before), after[0].LogID, mark)
			}
			got := replay(m, "/j", mark, testConfig)
			if got.err != nil || !slices.EqualFunc(got.bodies, want.bodies, bytes.Equal) {
				t.Errorf("replay from the mark after removal: %d records, %v; want %d", len(got.bodies), got.err, len(want.bodies))
			}
			// The journal goes on writing, and the next checkpoint removes more.
			_, err = j.Append(entryRec(t, 3, 400, 10))
			mustOK(t, err)
			mustOK(t, j.Sync())
			if _, err := journal.RemoveBefore(m, "/j", j.Mark(), keep); err != nil {
				t.Fatal(err)
			}
			if got := replay(m, "/j", j.Mark(), testConfig); got.err != nil || len(got.bodies) != 0 {
				t.Errorf("replay from the final mark: %d records, %v", len(got.bodies), got.err)
			}
			mustOK(t, j.Close())
		})
	}
	if _, err := journal.RemoveBefore(vfs.NewMem(), "/j", journal.Position{}, -1); err == nil {
		t.Error("RemoveBefore accepted a negative backup count")
	}
}

// FuzzReadLastMark reads arbitrary bytes as a lastMark file: the result is
// ErrCorrupt or a mark that WriteLastMark writes back as the same bytes.
func FuzzReadLastMark(f *testing.F) {
	f.Add(make([]byte, journal.LastMarkBytes))
	f.Add(bytes.Repeat([]byte{0xff}, journal.LastMarkBytes))
	f.Add([]byte{0, 0, 1, 0x8a, 0x5b, 0x2c, 0x3d, 0x4e, 0, 0, 0, 0, 0, 0, 0x12, 0x34})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		m := vfs.NewMem()
		dirs := ledgerDirs(t, m, 1)
		f, err := m.Create(dirs[0] + "/lastMark")
		mustOK(t, err)
		_, err = f.Write(data)
		mustOK(t, err)
		mustOK(t, f.Close())
		mark, err := journal.ReadLastMark(m, dirs, "lastMark")
		if err != nil {
			if !errors.Is(err, journal.ErrCorrupt) {
				t.Fatalf("ReadLastMark error %v is not ErrCorrupt", err)
			}
			return
		}
		mustOK(t, journal.WriteLastMark(m, dirs, "lastMark", mark))
		again, err := vfs.ReadFile(m, dirs[0]+"/lastMark")
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("mark %v from %x writes back as %x, %v", mark, data, again, err)
		}
	})
}
