package lazyfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"keeper/internal/vfs"
)

// chooser draws the model test's operations: a seeded rand, or a fuzzer's
// bytes.
type chooser interface{ IntN(n int) int }

// byteChooser draws from a fuzzer's bytes; 0 once they run out.
type byteChooser struct{ b []byte }

func (c *byteChooser) IntN(n int) int {
	if len(c.b) == 0 {
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	return v % n
}

func (c *byteChooser) done() bool { return len(c.b) == 0 }

// mfile is the model of one file: its contents, what a kill leaves of it
// when nothing is written back early, and the changes since then.
type mfile struct {
	exists  bool
	data    []byte
	durable []byte
	since   []change
	h       vfs.File // open handle, nil when closed
	pos     int64
}

func apply(data []byte, c change) []byte {
	if c.trunc {
		if c.off <= int64(len(data)) {
			return data[:c.off]
		}
		return append(data, make([]byte, c.off-int64(len(data)))...)
	}
	if end := c.end(); end > int64(len(data)) {
		data = append(data, make([]byte, end-int64(len(data)))...)
	}
	copy(data[c.off:], c.data)
	return data
}

func (m *mfile) change(c change) {
	m.data = apply(m.data, c)
	m.since = append(m.since, c)
}

func (m *mfile) durableNow() {
	m.durable = bytes.Clone(m.data)
	m.since = nil
}

// survivors reports whether got is what a kill may leave of m: the
// durable contents with a prefix of the changes since, the last one
// perhaps torn (any prefix with writeback, none without).
func (m *mfile) survivors(got []byte, writeback bool) bool {
	base := bytes.Clone(m.durable)
	if !writeback {
		return bytes.Equal(got, base)
	}
	for _, c := range m.since {
		if bytes.Equal(got, base) {
			return true
		}
		if !c.trunc {
			for n := 1; n < len(c.data); n++ {
				if bytes.Equal(got, apply(bytes.Clone(base), change{off: c.off, data: c.data[:n]})) {
					return true
				}
			}
		}
		base = apply(base, c)
	}
	return bytes.Equal(got, base)
}

// modelRun drives lfs (over inner, files under dir) with steps random
// operations on three files, checking every read against the model, then
// crashes it and checks what inner holds.
func modelRun(t *testing.T, inner vfs.FS, dir string, ch chooser, steps int, writeback float64, seed uint64) {
	opts := Options{UndoDir: filepath.Join(dir, "undo")}
	if writeback > 0 {
		opts.Writeback, opts.Rand = writeback, rand.New(rand.NewPCG(seed, 1))
	}
	mustOK(t, inner.MkdirAll(opts.UndoDir, 0o755))
	lfs, err := New(inner, opts)
	mustOK(t, err)
	mustOK(t, inner.MkdirAll(dir, 0o755))
	files := make([]*mfile, 3)
	for i := range files {
		files[i] = &mfile{}
	}
	name := func(i int) string { return filepath.Join(dir, fmt.Sprintf("f%d", i)) }
	for step := 0; step < steps; step++ {
		if bc, ok := ch.(*byteChooser); ok && bc.done() {
			break
		}
		i := ch.IntN(len(files))
		m := files[i]
		what := fmt.Sprintf("step %d, file %d", step, i)
		if m.h == nil {
			var f vfs.File
			if m.exists && ch.IntN(2) == 0 {
				f, err = lfs.OpenReadWrite(name(i))
			} else {
				f, err = lfs.Create(name(i))
				m.exists, m.data, m.durable, m.since = true, nil, nil, nil // O_TRUNC reaches the disk at once
			}
			mustOK(t, err)
			m.h, m.pos = f, 0
			continue
		}
		switch op := ch.IntN(9); op {
		case 0: // sequential write
			p := randomBytes(ch)
			_, err = m.h.Write(p)
			m.change(change{off: m.pos, data: p})
			m.pos += int64(len(p))
		case 1: // write anywhere, gaps included
			p := randomBytes(ch)
			off := int64(ch.IntN(len(m.data) + 9))
			_, err = m.h.WriteAt(p, off)
			m.change(change{off: off, data: p})
		case 2:
			size := int64(ch.IntN(len(m.data) + 9))
			err = m.h.Truncate(size)
			m.change(change{off: size, trunc: true})
		case 3:
			err = m.h.Sync()
			m.durableNow()
		case 4:
			err = m.h.SyncData()
			m.durableNow()
		case 5: // a graceful close writes to the disk, not synced
			err = m.h.Close()
			m.h = nil
			m.durableNow()
		case 6: // rename onto a closed or missing file; pending bytes follow
			j := ch.IntN(len(files))
			if j == i || files[j].h != nil {
				continue
			}
			err = lfs.Rename(name(i), name(j))
			files[i], files[j] = &mfile{}, m
		default:
			checkReads(t, lfs, name(i), m, what)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	for i, m := range files {
		if m.exists {
			checkReads(t, lfs, name(i), m, fmt.Sprintf("file %d before the crash", i))
		}
	}
	crashAndCheck(t, lfs, inner, files, name, ch, opts.UndoDir, writeback, seed)
}

// crashAndCheck kills lfs, perhaps while one file's sync is under way,
// recovers, and checks what inner holds of every file.
func crashAndCheck(t *testing.T, lfs *FS, inner vfs.FS, files []*mfile, name func(int) string, ch chooser,
	undoDir string, writeback float64, seed uint64) {
	// The kill may come while one file's sync is under way: its changes
	// are in the wrapped file, its undo record not yet removed.
	interrupted := ch.IntN(len(files) + 1)
	if interrupted < len(files) && files[interrupted].h != nil {
		h := files[interrupted].h.(*file)
		h.node.syncMu.Lock()
		_, err := h.beginSync()
		h.node.syncMu.Unlock()
		mustOK(t, err)
	} else {
		interrupted = -1
	}
	lfs.Crash()
	if _, err := Recover(inner, undoDir, rand.New(rand.NewPCG(seed, 3))); err != nil {
		t.Fatal(err)
	}
	for i, m := range files {
		got, err := vfs.ReadFile(inner, name(i))
		if !m.exists {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("file %d exists after the crash (%v) but was never created", i, err)
			}
			continue
		}
		mustOK(t, err)
		if !m.survivors(got, writeback > 0 || i == interrupted) {
			t.Errorf("after the crash file %d holds %q\nsynced: %q\nchanges since: %v", i, got, m.durable, m.since)
		}
	}
}

func randomBytes(ch chooser) []byte {
	p := make([]byte, 1+ch.IntN(24))
	for k := range p {
		p[k] = byte(1 + ch.IntN(255)) // non-zero, so that a torn write shows
	}
	return p
}

// checkReads compares every way of reading the file with the model.
func checkReads(t *testing.T, lfs *FS, name string, m *mfile, what string) {
	t.Helper()
	if m.h != nil {
		buf := make([]byte, len(m.data)+5)
		n, err := m.h.ReadAt(buf, 0)
		if err != io.EOF || !bytes.Equal(buf[:n], m.data) {
			t.Fatalf("%s: ReadAt = %q, %v; want %q, EOF", what, buf[:n], err, m.data)
		}
		if len(m.data) > 2 {
			n, err := m.h.ReadAt(buf[:2], 1)
			if n != 2 || err != nil || !bytes.Equal(buf[:2], m.data[1:3]) {
				t.Fatalf("%s: ReadAt(2 bytes at 1) = %q, %v", what, buf[:n], err)
			}
		}
	}
	info, err := lfs.Stat(name)
	mustOK(t, err)
	if info.Size() != int64(len(m.data)) {
		t.Fatalf("%s: Stat size %d, want %d", what, info.Size(), len(m.data))
	}
	r, err := lfs.Open(name)
	mustOK(t, err)
	all, err := io.ReadAll(r)
	mustOK(t, err)
	mustOK(t, r.Close())
	if !bytes.Equal(all, m.data) {
		t.Fatalf("%s: a new handle reads %q, want %q", what, all, m.data)
	}
}

// TestModel runs random operations against the model, over the OS and
// over a MemFS, without and with early writebacks.
func TestModel(t *testing.T) {
	for _, writeback := range []float64{0, 0.3, 1} {
		for seed := range uint64(30) {
			t.Run(fmt.Sprintf("wb=%v/seed=%d", writeback, seed), func(t *testing.T) {
				ch := rand.New(rand.NewPCG(seed, 2))
				if seed%2 == 0 {
					modelRun(t, vfs.Default, t.TempDir(), ch, 300, writeback, seed)
				} else {
					modelRun(t, vfs.NewMem(), "/data", ch, 300, writeback, seed)
				}
			})
		}
	}
}

// FuzzModel lets the fuzzer choose the operations; the first byte picks
// the writeback chance and seeds it.
func FuzzModel(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 5, 65, 66, 0, 3, 0, 1, 3, 67})
	f.Add([]byte{1, 1, 0, 1, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 8, 1, 2, 4, 1, 7})
	f.Add([]byte{2, 2, 1, 2, 0, 2, 1, 6, 0, 2, 0, 0, 0, 2, 1, 1, 0, 1, 5, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		writeback := []float64{0, 0.5, 1}[int(data[0])%3]
		modelRun(t, vfs.NewMem(), "/data", &byteChooser{b: data[1:]}, 400, writeback, uint64(data[0]))
	})
}
