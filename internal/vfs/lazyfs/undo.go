package lazyfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"keeper/internal/vfs"
)

// A sync is not atomic: between the write of its pending changes to the
// wrapped file and the return of the wrapped fsync, a power loss may keep
// any prefix of them. A SIGKILL in that window keeps them all, because
// they are in the kernel already. With Options.UndoDir set, the FS closes
// that gap: before a sync writes a file's pending changes, it saves an
// undo record (the file's size and the bytes the changes overwrite, and
// the changes themselves) in UndoDir, without syncing it (a kill keeps
// it), and removes the record once the wrapped sync returned. Recover,
// run when the next process starts, finds the records of the syncs the
// kill interrupted and turns each file back into what a power loss could
// leave: the state before the sync with a random prefix of its changes,
// the last one perhaps torn.
//
// An undo record:
//
//	magic "LAZYUNDO" | path (u32 length, bytes) | old size i64
//	| n u32 | n × (off i64, length u32, zero u8, bytes unless zero)   the overwritten bytes
//	| m u32 | m × (trunc u8, off i64, length u32, bytes)              the changes, in order
//	| crc32c u32 of everything before it
//
// Integers are little-endian. A record that is cut short or fails its
// checksum was being written when the process died, before the sync wrote
// anything: Recover removes it and leaves its file alone.

const undoMagic = "LAZYUNDO"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// span is a range of the old file's bytes a sync overwrites; zero means
// they were all zero (a preallocated region) and data is not kept.
type span struct {
	off  int64
	data []byte
	zero bool
	n    int64
}

// undoRecord is what Recover needs to undo one interrupted sync.
type undoRecord struct {
	path    string
	oldSize int64
	old     []span
	changes []change
}

// overwritten returns the ranges of [0, size) that applying changes to a
// file of that size overwrites or cuts away, merged and in order.
func overwritten(changes []change, size int64) [][2]int64 {
	var rs [][2]int64
	for _, c := range changes {
		lo, hi := c.off, c.end()
		if c.trunc {
			hi = size
		}
		if hi = min(hi, size); lo < hi {
			rs = append(rs, [2]int64{lo, hi})
		}
	}
	if len(rs) == 0 {
		return nil
	}
	sortRanges(rs)
	merged := rs[:1]
	for _, r := range rs[1:] {
		if last := &merged[len(merged)-1]; r[0] <= last[1] {
			last[1] = max(last[1], r[1])
		} else {
			merged = append(merged, r)
		}
	}
	return merged
}

func sortRanges(rs [][2]int64) {
	for i := 1; i < len(rs); i++ { // few ranges: insertion sort
		for j := i; j > 0 && rs[j][0] < rs[j-1][0]; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// undoLocked builds the undo record of flushing n's pending changes,
// reading the bytes they overwrite through r. Caller holds n.mu.
func (n *node) undoLocked(r io.ReaderAt, path string) (*undoRecord, error) {
	rec := &undoRecord{path: path, oldSize: n.innerSize, changes: n.pending}
	for _, rg := range overwritten(n.pending, n.innerSize) {
		b := make([]byte, rg[1]-rg[0])
		if got, err := r.ReadAt(b, rg[0]); got < len(b) {
			return nil, fmt.Errorf("lazyfs: read %s at %d for the undo record: %w", path, rg[0], err)
		}
		s := span{off: rg[0], n: int64(len(b))}
		if bytes.Count(b, []byte{0}) == len(b) {
			s.zero = true
		} else {
			s.data = b
		}
		rec.old = append(rec.old, s)
	}
	return rec, nil
}

func (rec *undoRecord) encode() []byte {
	b := []byte(undoMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec.path)))
	b = append(b, rec.path...)
	b = binary.LittleEndian.AppendUint64(b, uint64(rec.oldSize))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec.old)))
	for _, s := range rec.old {
		b = binary.LittleEndian.AppendUint64(b, uint64(s.off))
		b = binary.LittleEndian.AppendUint32(b, uint32(s.n))
		if s.zero {
			b = append(b, 1)
		} else {
			b = append(append(b, 0), s.data...)
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec.changes)))
	for _, c := range rec.changes {
		t := byte(0)
		if c.trunc {
			t = 1
		}
		b = append(b, t)
		b = binary.LittleEndian.AppendUint64(b, uint64(c.off))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(c.data)))
		b = append(b, c.data...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// errBadRecord marks a record cut short or damaged.
var errBadRecord = errors.New("lazyfs: incomplete undo record")

// decoder reads a record's fields; the first short read sets err.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errBadRecord
		return nil
	}
	if n == 0 {
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) u8() byte { b := d.take(1); return at(b, 0) }
func (d *decoder) u32() int { return int(binary.LittleEndian.Uint32(pad(d.take(4), 4))) }
func (d *decoder) i64() int64 {
	return int64(binary.LittleEndian.Uint64(pad(d.take(8), 8)))
}

func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

func pad(b []byte, n int) []byte {
	if len(b) < n {
		return make([]byte, n)
	}
	return b
}

func decodeUndo(b []byte) (*undoRecord, error) {
	if len(b) < len(undoMagic)+4 || string(b[:len(undoMagic)]) != undoMagic {
		return nil, errBadRecord
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, errBadRecord
	}
	d := &decoder{b: body[len(undoMagic):]}
	rec := &undoRecord{}
	rec.path = string(d.take(d.u32()))
	rec.oldSize = d.i64()
	for range min(d.u32(), len(body)) {
		s := span{off: d.i64(), n: int64(d.u32())}
		if s.zero = d.u8() == 1; !s.zero {
			s.data = d.take(int(s.n))
		}
		rec.old = append(rec.old, s)
	}
	for range min(d.u32(), len(body)) {
		c := change{trunc: d.u8() == 1, off: d.i64()}
		c.data = d.take(d.u32())
		rec.changes = append(rec.changes, c)
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, errBadRecord
	}
	return rec, nil
}

// writeUndo saves rec as the next record in the undo directory and
// returns its path. It is not synced: a kill keeps it, and a power loss
// is not what this package simulates.
func (f *FS) writeUndo(rec *undoRecord) (string, error) {
	path := filepath.Join(f.undoDir, fmt.Sprintf("%016x.undo", f.undoSeq.Add(1)))
	w, err := f.inner.Create(path)
	if err != nil {
		return "", fmt.Errorf("lazyfs: undo record: %w", err)
	}
	_, err = w.WriteAt(rec.encode(), 0)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("lazyfs: undo record %s: %w", path, err)
	}
	return path, nil
}

// RecoverStats says what Recover did.
type RecoverStats struct {
	// Undone counts the interrupted syncs rolled back; Torn counts those
	// whose kept prefix ends inside a write; Kept sums the changes kept.
	Undone, Torn, Kept int
	// Files names the files rolled back, in the order of the records.
	Files []string
}

// Recover rolls back, in inner, the syncs a kill interrupted (see
// Options.UndoDir): each file is put back as it was before the sync, then
// a random prefix of the sync's changes is applied again (drawn from rng),
// the last perhaps torn, and the file is synced. Records are removed once
// applied. Run it before anything opens the files; a missing undoDir is
// created.
func Recover(inner vfs.FS, undoDir string, rng *rand.Rand) (RecoverStats, error) {
	var st RecoverStats
	if err := vfs.MkdirAllSync(inner, undoDir, 0o755); err != nil {
		return st, err
	}
	names, err := inner.List(undoDir)
	if err != nil {
		return st, err
	}
	for _, name := range names {
		if !strings.HasSuffix(name, ".undo") {
			continue
		}
		path := filepath.Join(undoDir, name)
		b, err := vfs.ReadFile(inner, path)
		if err != nil {
			return st, err
		}
		if rec, derr := decodeUndo(b); derr == nil {
			kept, torn, err := rec.apply(inner, rng)
			if err != nil {
				return st, err
			}
			if kept >= 0 {
				st.Undone++
				st.Kept += kept
				st.Files = append(st.Files, rec.path)
				if torn {
					st.Torn++
				}
			}
		}
		if err := inner.Remove(path); err != nil {
			return st, err
		}
	}
	return st, inner.SyncDir(undoDir)
}

// apply rolls rec's file back and reapplies a random prefix of its
// changes; kept is how many changes were applied whole (-1: the file is
// gone, nothing to do).
func (rec *undoRecord) apply(inner vfs.FS, rng *rand.Rand) (kept int, torn bool, err error) {
	f, err := inner.OpenReadWrite(rec.path)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := f.Truncate(rec.oldSize); err != nil {
		return 0, false, err
	}
	for _, s := range rec.old {
		data := s.data
		if s.zero {
			data = make([]byte, s.n)
		}
		if _, err := f.WriteAt(data, s.off); err != nil {
			return 0, false, err
		}
	}
	kept = rng.IntN(len(rec.changes) + 1)
	for i, c := range rec.changes {
		if i > kept {
			break
		}
		switch {
		case i == kept && (c.trunc || len(c.data) < 2):
			// the first change left out: nothing of it reached the disk
		case c.trunc:
			err = f.Truncate(c.off)
		case i == kept:
			n := rng.IntN(len(c.data)) // a strict prefix: the write tore
			torn = n > 0
			_, err = f.WriteAt(c.data[:n], c.off)
		default:
			_, err = f.WriteAt(c.data, c.off)
		}
		if err != nil {
			return 0, false, err
		}
	}
	return kept, torn, f.Sync()
}
