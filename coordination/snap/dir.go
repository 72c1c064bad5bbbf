package snap

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// Info describes a snapshot file in a directory.
type Info struct {
	// Name is the file name, without the directory.
	Name string
	// Zxid is the zxid in the name.
	Zxid zxid.ID
	// Size is the file size in bytes.
	Size int64
	// Compression is what the name's suffix says.
	Compression Compression
}

// List returns the snapshot files in dir, newest (highest zxid) first;
// files with equal zxids are in name order. Temporary files and other
// names are left out.
func List(fs vfs.FS, dir string) ([]Info, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("snap: list %s: %w", dir, err)
	}
	var out []Info
	for _, name := range names {
		z, c, ok := ParseName(name)
		if !ok {
			continue
		}
		fi, err := fs.Stat(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("snap: stat %s: %w", filepath.Join(dir, name), err)
		}
		if fi.IsDir() {
			continue
		}
		out = append(out, Info{Name: name, Zxid: z, Size: fi.Size(), Compression: c})
	}
	slices.SortFunc(out, func(a, b Info) int {
		return cmp.Or(cmp.Compare(b.Zxid, a.Zxid), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// minPlainBytes is the smallest size Java's quick check accepts for a plain
// snapshot.
const minPlainBytes = 10

// gzipMagic starts every gzip stream.
var gzipMagic = [2]byte{0x1f, 0x8b}

// QuickCheck applies Java's cheap test of whether a snapshot file is
// complete, without reading it: a plain file is at least 10 bytes long and
// ends with the bytes 00 00 00 01 2f (the "/" of its last seal); a gzip
// file starts with the gzip magic. A file written up to its last seal passes
// even if its content is damaged; only Read tells. The error wraps
// ErrCorrupt or ErrUnsupported, or is a filesystem error.
func QuickCheck(fs vfs.FS, dir string, info Info) error {
	path := filepath.Join(dir, info.Name)
	if info.Compression == CompressionSnappy {
		return fmt.Errorf("%w: %s: snappy compression", ErrUnsupported, path)
	}
	f, err := fs.Open(path)
	if err != nil {
		return fmt.Errorf("snap: open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("snap: stat %s: %w", path, err)
	}
	size := fi.Size()
	if info.Compression == CompressionGzip {
		var b [2]byte
		if err := readAt(f, b[:], 0, size); err != nil {
			return fmt.Errorf("snap: %s: %w", path, err)
		}
		if b != gzipMagic {
			return corruptf("%s: no gzip magic", path)
		}
		return nil
	}
	if size < minPlainBytes {
		return corruptf("%s: only %d bytes", path, size)
	}
	var b [len(sealMarker)]byte
	if err := readAt(f, b[:], size-int64(len(b)), size); err != nil {
		return fmt.Errorf("snap: %s: %w", path, err)
	}
	if !bytes.Equal(b[:], sealMarker[:]) {
		return corruptf("%s: ends with % x, not a seal", path, b)
	}
	return nil
}

// readAt fills b from offset off of a file of the given size.
func readAt(f vfs.File, b []byte, off, size int64) error {
	if off < 0 || off+int64(len(b)) > size {
		return fmt.Errorf("%w: only %d bytes", ErrCorrupt, size)
	}
	n, err := f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == io.EOF {
		return fmt.Errorf("%w: only %d bytes", ErrCorrupt, off+int64(n))
	}
	return err
}

// Skipped is a snapshot NewestValid passed over, and why.
type Skipped struct {
	// Info is the file.
	Info Info
	// Err says why it was skipped; it wraps ErrCorrupt, ErrUnsupported or
	// ErrDigestMismatch, or is a filesystem error.
	Err error
}

// NewestValid returns the newest snapshot in dir that passes QuickCheck and
// Read without error, and the newer ones it skipped with the reasons, for
// the caller to log. A snapshot whose digest record does not match its tree
// is skipped too: an older snapshot plus a longer replay of the log gives
// the same state, as long as the log has not been purged past it. With no
// usable snapshot it returns a nil Snapshot and no error; whether starting
// from an empty tree is then right is the caller's decision (it is not if
// the log does not start at zxid 1).
//
// Like Java, NewestValid skips a snapshot it cannot read for any reason,
// filesystem errors included; only failing to list dir is an error.
func NewestValid(fs vfs.FS, dir string, maxLen int) (*Snapshot, []Skipped, error) {
	infos, err := List(fs, dir)
	if err != nil {
		return nil, nil, err
	}
	var skipped []Skipped
	for _, info := range infos {
		s, err := ReadValid(fs, dir, info, maxLen)
		if err != nil {
			skipped = append(skipped, Skipped{Info: info, Err: err})
			continue
		}
		return s, skipped, nil
	}
	return nil, skipped, nil
}

// ReadValid reads the snapshot info names in dir as start-up would use
// it: QuickCheck first (cheap refusals), then Read in full.
func ReadValid(fs vfs.FS, dir string, info Info, maxLen int) (*Snapshot, error) {
	if err := QuickCheck(fs, dir, info); err != nil {
		return nil, err
	}
	return Read(fs, filepath.Join(dir, info.Name), maxLen)
}

// RemoveTemp removes the temporary files that Writes interrupted by a crash
// left in dir, and returns their names. Call it only while no Write into
// dir is running.
func RemoveTemp(fs vfs.FS, dir string) ([]string, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("snap: list %s: %w", dir, err)
	}
	var removed []string
	for _, name := range names {
		if !isTempName(name) {
			continue
		}
		if err := fs.Remove(filepath.Join(dir, name)); err != nil {
			return removed, fmt.Errorf("snap: remove %s: %w", filepath.Join(dir, name), err)
		}
		removed = append(removed, name)
	}
	return removed, nil
}

// LogFile is a transaction log file as PurgePlan needs to know it.
type LogFile struct {
	// Name is the file name.
	Name string
	// StartZxid is the zxid of its first txn (the zxid in its name).
	StartZxid zxid.ID
}

// PurgePlan decides, as ZooKeeper's PurgeTxnLog does, which files a purge
// that keeps the newest retain snapshots removes (docs/zookeeper-protocol.md §9.1). Let Z be the
// zxid of the oldest snapshot kept. Snapshots older than Z go. Logs that
// start before Z go, except the newest of those starting at or before Z:
// it may hold the txns after Z. Retain below 1 counts as 1, and with no
// snapshots nothing is removed. Like Java, it does not ask whether the
// snapshots it keeps are valid; pass only the valid ones (those
// NewestValid would accept) for a stricter plan. Names come back oldest
// first.
func PurgePlan(snaps []Info, logs []LogFile, retain int) (removeSnaps, removeLogs []string) {
	if len(snaps) == 0 {
		return nil, nil
	}
	retain = max(retain, 1)
	zxids := make([]zxid.ID, 0, len(snaps))
	for _, s := range snaps {
		zxids = append(zxids, s.Zxid)
	}
	slices.Sort(zxids)
	slices.Reverse(zxids)
	oldestKept := zxids[min(retain, len(zxids))-1]

	byAge := slices.SortedFunc(slices.Values(snaps), func(a, b Info) int {
		return cmp.Or(cmp.Compare(a.Zxid, b.Zxid), cmp.Compare(a.Name, b.Name))
	})
	for _, s := range byAge {
		if s.Zxid < oldestKept {
			removeSnaps = append(removeSnaps, s.Name)
		}
	}

	// keepFrom is the start of the log that holds the txns right after the
	// oldest kept snapshot; every log from it on stays.
	keepFrom, found := zxid.ID(0), false
	for _, l := range logs {
		if l.StartZxid <= oldestKept && (!found || l.StartZxid > keepFrom) {
			keepFrom, found = l.StartZxid, true
		}
	}
	if !found {
		return removeSnaps, nil
	}
	logsByAge := slices.SortedFunc(slices.Values(logs), func(a, b LogFile) int {
		return cmp.Or(cmp.Compare(a.StartZxid, b.StartZxid), cmp.Compare(a.Name, b.Name))
	})
	for _, l := range logsByAge {
		if l.StartZxid < keepFrom {
			removeLogs = append(removeLogs, l.Name)
		}
	}
	return removeSnaps, removeLogs
}
