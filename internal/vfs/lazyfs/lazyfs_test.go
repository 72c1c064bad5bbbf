package lazyfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"keeper/internal/vfs"
)

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// osFile reads name through the OS, as a restarted process would.
func osFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	mustOK(t, err)
	return string(b)
}

// readAll reads the whole file through f from offset 0.
func readAll(t *testing.T, f vfs.File) string {
	t.Helper()
	info, err := f.Stat()
	mustOK(t, err)
	b := make([]byte, info.Size()+3) // ask past the end: EOF, not an error
	n, err := f.ReadAt(b, 0)
	if err != io.EOF {
		t.Fatalf("ReadAt past the end: n=%d err=%v, want io.EOF", n, err)
	}
	if int64(n) != info.Size() {
		t.Fatalf("ReadAt returned %d bytes of a %d-byte file", n, info.Size())
	}
	return string(b[:n])
}

// step is one operation of a table test on file "f", through the handle
// the test holds. Each returns what it observed, to be compared.
type step struct {
	op   string // write, writeat, truncate, sync, syncdata, close, reopen, create, read
	data string
	off  int64
	// want is the contents read back through the wrapper after the step;
	// disk is what the OS holds after it (what a kill would leave).
	want, disk string
}

// TestSteps runs scripts of file operations and checks, after every step,
// the contents seen through the wrapper (the same as without it) and the
// contents on the OS (only what was synced or closed).
func TestSteps(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"writes wait for sync", []step{
			{op: "write", data: "hello", want: "hello", disk: ""},
			{op: "write", data: " world", want: "hello world", disk: ""},
			{op: "sync", want: "hello world", disk: "hello world"},
			{op: "write", data: "!", want: "hello world!", disk: "hello world"},
			{op: "syncdata", want: "hello world!", disk: "hello world!"},
		}},
		{"writeat leaves a zero-filled gap", []step{
			{op: "write", data: "ab", want: "ab", disk: ""},
			{op: "writeat", data: "XY", off: 5, want: "ab\x00\x00\x00XY", disk: ""},
			{op: "sync", want: "ab\x00\x00\x00XY", disk: "ab\x00\x00\x00XY"},
			{op: "writeat", data: "c", off: 2, want: "abc\x00\x00XY", disk: "ab\x00\x00\x00XY"},
		}},
		{"overwrite synced bytes", []step{
			{op: "write", data: "0123456789", want: "0123456789", disk: ""},
			{op: "sync", want: "0123456789", disk: "0123456789"},
			{op: "writeat", data: "ab", off: 3, want: "012ab56789", disk: "0123456789"},
			{op: "writeat", data: "Z", off: 4, want: "012aZ56789", disk: "0123456789"},
			{op: "sync", want: "012aZ56789", disk: "012aZ56789"},
		}},
		{"truncate waits for sync", []step{
			{op: "write", data: "hello", want: "hello"},
			{op: "sync", want: "hello", disk: "hello"},
			{op: "truncate", off: 2, want: "he", disk: "hello"},
			{op: "truncate", off: 4, want: "he\x00\x00", disk: "hello"},
			{op: "sync", want: "he\x00\x00", disk: "he\x00\x00"},
		}},
		{"truncate then write past the cut", []step{
			{op: "write", data: "abcdefgh", want: "abcdefgh"},
			{op: "sync", want: "abcdefgh", disk: "abcdefgh"},
			{op: "truncate", off: 3, want: "abc", disk: "abcdefgh"},
			{op: "writeat", data: "Z", off: 5, want: "abc\x00\x00Z", disk: "abcdefgh"},
			{op: "sync", want: "abc\x00\x00Z", disk: "abc\x00\x00Z"},
		}},
		{"preallocate with one zero byte, as the txn log does", []step{
			{op: "writeat", data: "\x00", off: 15, want: strings.Repeat("\x00", 16)},
			{op: "writeat", data: "head", off: 0, want: "head" + strings.Repeat("\x00", 12)},
			{op: "syncdata", want: "head" + strings.Repeat("\x00", 12), disk: "head" + strings.Repeat("\x00", 12)},
		}},
		{"close writes to the OS without a sync", []step{
			{op: "write", data: "abc", want: "abc"},
			{op: "close", want: "abc", disk: "abc"},
			{op: "reopen", want: "abc", disk: "abc"},
			{op: "writeat", data: "d", off: 3, want: "abcd", disk: "abc"},
			{op: "close", want: "abcd", disk: "abcd"},
		}},
		{"create truncates at once", []step{
			{op: "write", data: "old", want: "old"},
			{op: "sync", want: "old", disk: "old"},
			{op: "write", data: "er", want: "older", disk: "old"},
			{op: "create", want: "", disk: ""},
			{op: "write", data: "new", want: "new", disk: ""},
		}},
		{"read position", []step{
			{op: "write", data: "abcdef", want: "abcdef"},
			{op: "read", data: "", want: "abcdef"}, // position is at the end
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			name := filepath.Join(dir, "f")
			lfs := Wrap(vfs.Default)
			f, err := lfs.Create(name)
			mustOK(t, err)
			defer func() { _ = f.Close() }()
			for i, s := range tt.steps {
				switch s.op {
				case "write":
					_, err = f.Write([]byte(s.data))
				case "writeat":
					_, err = f.WriteAt([]byte(s.data), s.off)
				case "truncate":
					err = f.Truncate(s.off)
				case "sync":
					err = f.Sync()
				case "syncdata":
					err = f.SyncData()
				case "close":
					err = f.Close()
				case "reopen":
					f, err = lfs.OpenReadWrite(name)
				case "create":
					f, err = lfs.Create(name)
				case "read":
					var got []byte
					got, err = io.ReadAll(f)
					if string(got) != s.data {
						t.Errorf("step %d: Read from the position = %q, want %q", i, got, s.data)
					}
				default:
					t.Fatalf("unknown op %q", s.op)
				}
				mustOK(t, err)
				r, err := lfs.Open(name) // another handle sees the pending bytes too
				mustOK(t, err)
				if got := readAll(t, r); got != s.want {
					t.Errorf("step %d (%s): read %q through the wrapper, want %q", i, s.op, got, s.want)
				}
				info, err := lfs.Stat(name)
				mustOK(t, err)
				if info.Size() != int64(len(s.want)) {
					t.Errorf("step %d (%s): FS.Stat size %d, want %d", i, s.op, info.Size(), len(s.want))
				}
				mustOK(t, r.Close())
				if got := osFile(t, name); got != s.disk {
					t.Errorf("step %d (%s): the OS holds %q, want %q", i, s.op, got, s.disk)
				}
			}
		})
	}
}

// TestCrashDropsUnsynced writes to several files, syncs some of it, and
// crashes: reopened through the OS, each file holds exactly what was
// synced, or written by a graceful close.
func TestCrashDropsUnsynced(t *testing.T) {
	dir := t.TempDir()
	lfs := Wrap(vfs.Default)
	path := func(n string) string { return filepath.Join(dir, n) }

	log, err := lfs.Create(path("log"))
	mustOK(t, err)
	_, err = log.WriteAt([]byte("rec1rec2"), 0)
	mustOK(t, err)
	mustOK(t, log.SyncData())
	_, err = log.WriteAt([]byte("rec3"), 8) // acknowledged? no: not synced
	mustOK(t, err)

	closed, err := lfs.Create(path("closed"))
	mustOK(t, err)
	_, err = closed.Write([]byte("kept by close"))
	mustOK(t, err)
	mustOK(t, closed.Close())

	tmp, err := lfs.Create(path("snap.tmp"))
	mustOK(t, err)
	_, err = tmp.Write([]byte("synced snapshot"))
	mustOK(t, err)
	mustOK(t, tmp.Sync())
	_, err = tmp.Write([]byte(" and an unsynced tail"))
	mustOK(t, err)
	mustOK(t, lfs.Rename(path("snap.tmp"), path("snap"))) // pending bytes move with the file

	trunc, err := lfs.Create(path("trunc"))
	mustOK(t, err)
	_, err = trunc.Write([]byte("0123456789"))
	mustOK(t, err)
	mustOK(t, trunc.Sync())
	mustOK(t, trunc.Truncate(4)) // a repair that was never synced

	if got := readAll(t, log); got != "rec1rec2rec3" {
		t.Fatalf("before the crash the log reads %q", got)
	}
	lfs.Crash()

	for name, want := range map[string]string{
		"log": "rec1rec2", "closed": "kept by close", "snap": "synced snapshot", "trunc": "0123456789",
	} {
		if got := osFile(t, path(name)); got != want {
			t.Errorf("after the crash %s holds %q, want %q", name, got, want)
		}
	}
	if _, err := log.WriteAt([]byte("x"), 0); !errors.Is(err, ErrCrashed) {
		t.Errorf("write after the crash: %v, want ErrCrashed", err)
	}
	if _, err := lfs.Open(path("log")); !errors.Is(err, ErrCrashed) {
		t.Errorf("open after the crash: %v, want ErrCrashed", err)
	}
	if err := log.Close(); !errors.Is(err, ErrCrashed) {
		t.Errorf("close after the crash: %v, want ErrCrashed", err)
	}
}

// TestHandles checks what handles share and what they do not: pending
// bytes and syncs are the file's, positions and modes the handle's.
func TestHandles(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	lfs := Wrap(vfs.Default)
	w, err := lfs.Create(name)
	mustOK(t, err)
	_, err = w.Write([]byte("abc"))
	mustOK(t, err)

	r, err := lfs.Open(filepath.Join(dir, ".", "f")) // the same file by another spelling
	mustOK(t, err)
	if _, err := r.Write([]byte("x")); err == nil {
		t.Error("write through a read-only handle succeeded")
	}
	if err := r.Truncate(0); err == nil {
		t.Error("truncate through a read-only handle succeeded")
	}
	b := make([]byte, 2)
	if n, err := r.Read(b); n != 2 || err != nil || string(b) != "ab" {
		t.Errorf("Read = %d %v %q", n, err, b)
	}
	mustOK(t, r.Sync()) // any handle's sync covers the file's pending bytes
	if got := osFile(t, name); got != "abc" {
		t.Errorf("after a sync through the reader the OS holds %q", got)
	}
	_, err = w.Write([]byte("def"))
	mustOK(t, err)
	if n, err := r.Read(b); n != 2 || err != nil || string(b) != "cd" {
		t.Errorf("second Read = %d %v %q; the reader's position is its own", n, err, b)
	}
	mustOK(t, r.Close()) // a reader's close writes nothing
	if got := osFile(t, name); got != "abc" {
		t.Errorf("after the reader's close the OS holds %q", got)
	}
	if err := r.Close(); err == nil {
		t.Error("second Close succeeded")
	}
	if _, err := r.ReadAt(b, 0); err == nil {
		t.Error("ReadAt on a closed handle succeeded")
	}
	seeker := w.(io.Seeker)
	if off, err := seeker.Seek(-2, io.SeekEnd); off != 4 || err != nil {
		t.Errorf("Seek(-2, End) = %d, %v", off, err)
	}
	_, err = w.Write([]byte("XYZ"))
	mustOK(t, err)
	mustOK(t, w.Close())
	if got := osFile(t, name); got != "abcdXYZ" {
		t.Errorf("after the writer's close the OS holds %q", got)
	}
	if got := lfs.PendingBytes(); got != 0 {
		t.Errorf("%d bytes pending with no file open", got)
	}
}

// TestRemoveAndRename checks that names follow the OS and pending bytes
// follow the file.
func TestRemoveAndRename(t *testing.T) {
	dir := t.TempDir()
	lfs := Wrap(vfs.Default)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	fa, err := lfs.Create(a)
	mustOK(t, err)
	_, err = fa.Write([]byte("AAAA"))
	mustOK(t, err)
	fb, err := lfs.Create(b)
	mustOK(t, err)
	_, err = fb.Write([]byte("BB"))
	mustOK(t, err)
	mustOK(t, lfs.Rename(a, b)) // replaces b; fb keeps its (now nameless) file
	info, err := lfs.Stat(b)
	mustOK(t, err)
	if info.Size() != 4 {
		t.Errorf("renamed file's size %d, want 4 (its pending bytes)", info.Size())
	}
	if _, err := lfs.Stat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of the old name: %v", err)
	}
	r, err := lfs.Open(b)
	mustOK(t, err)
	if got := readAll(t, r); got != "AAAA" {
		t.Errorf("reading the new name: %q", got)
	}
	mustOK(t, r.Close())
	if got := readAll(t, fb); got != "BB" {
		t.Errorf("the replaced file's handle reads %q", got)
	}
	mustOK(t, fb.Close())
	mustOK(t, lfs.Remove(b))
	_, err = fa.Write([]byte("more")) // a removed file stays writable while open
	mustOK(t, err)
	mustOK(t, fa.Close())
	if _, err := lfs.Stat(b); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat after remove: %v", err)
	}
	names, err := lfs.List(dir)
	mustOK(t, err)
	if len(names) != 0 {
		t.Errorf("List = %v after removing everything", names)
	}
	mustOK(t, lfs.MkdirAll(filepath.Join(dir, "x", "y"), 0o755))
	mustOK(t, lfs.SyncDir(filepath.Join(dir, "x")))
}

// TestMaxPendingBytes checks the memory bound: past it, a file's pending
// bytes go to the OS (not synced).
func TestMaxPendingBytes(t *testing.T) {
	dir := t.TempDir()
	lfs, err := New(vfs.Default, Options{MaxPendingBytes: 10})
	mustOK(t, err)
	name := filepath.Join(dir, "f")
	f, err := lfs.Create(name)
	mustOK(t, err)
	_, err = f.Write([]byte("0123456789"))
	mustOK(t, err)
	if got := osFile(t, name); got != "" {
		t.Errorf("at the bound the OS holds %q", got)
	}
	_, err = f.Write([]byte("A"))
	mustOK(t, err)
	if got := osFile(t, name); got != "0123456789A" {
		t.Errorf("past the bound the OS holds %q", got)
	}
	if got := lfs.PendingBytes(); got != 0 {
		t.Errorf("%d bytes still pending", got)
	}
	if s := lfs.Stats(); s.Overflows != 1 {
		t.Errorf("stats %+v, want one overflow", s)
	}
	mustOK(t, f.Close())
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{Writeback: -0.1}, {Writeback: 2}, {Writeback: 0.5}, {MaxPendingBytes: -1}} {
		if _, err := New(vfs.Default, o); err == nil {
			t.Errorf("New accepted %+v", o)
		}
	}
	if _, err := New(vfs.Default, Options{Writeback: 0.5, Rand: rand.New(rand.NewPCG(1, 2))}); err != nil {
		t.Error(err)
	}
}

// TestConcurrentUse has writers, readers and syncs of one file race;
// under -race it checks the locking, and every reader sees a prefix.
func TestConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	lfs, err := New(vfs.Default, Options{Writeback: 0.3, Rand: rand.New(rand.NewPCG(7, 7))})
	mustOK(t, err)
	name := filepath.Join(dir, "f")
	w, err := lfs.Create(name)
	mustOK(t, err)
	want := bytes.Repeat([]byte("0123456789"), 100)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < len(want); i += 10 {
			if _, err := w.WriteAt(want[i:i+10], int64(i)); err != nil {
				errs <- err
				return
			}
			if i%100 == 0 {
				if err := w.SyncData(); err != nil {
					errs <- err
					return
				}
			}
		}
	}()
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := lfs.Open(name)
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			buf := make([]byte, len(want))
			for range 50 {
				n, err := r.ReadAt(buf, 0)
				if err != nil && err != io.EOF {
					errs <- err
					return
				}
				if !bytes.Equal(buf[:n], want[:n]) {
					errs <- errors.New("a reader saw bytes that were never written")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustOK(t, w.Close())
	if got := osFile(t, name); got != string(want) {
		t.Errorf("the OS holds %d bytes, want %d", len(got), len(want))
	}
}
