package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"keeper/internal/vfs"
)

// LastMarkBytes is the size of a lastMark file: logFileId int64, then
// offset int64, big-endian.
const LastMarkBytes = 16

// LastMarkName returns the name of the lastMark file of journal number
// journalIndex of journalCount: "lastMark" when there is one journal,
// "lastMark.<index>" otherwise, as BookKeeper names them.
func LastMarkName(journalIndex, journalCount int) string {
	if journalCount <= 1 {
		return "lastMark"
	}
	return "lastMark." + strconv.Itoa(journalIndex)
}

// WriteLastMark persists the log mark p as the file name in every
// directory of dirs (BookKeeper uses every writable ledger directory's
// "current" subdirectory), each atomically: write name.tmp, fsync, rename
// over name, fsync the directory. A crash leaves each directory with its
// old mark or the new one, never a mix. It tries every directory and
// returns the failures joined; a directory that failed keeps its old mark,
// which ReadLastMark's maximum makes harmless, but the caller should treat
// the failure as a failing disk.
//
// p must be a mark captured before a ledger-storage flush that has since
// completed (docs/bookkeeper-protocol.md §7.3, Appendix A item 8), and must not be below a mark
// already written: the caller keeps marks monotonic.
func WriteLastMark(fsys vfs.FS, dirs []string, name string, p Position) error {
	if p.LogID < 0 || p.Offset < 0 {
		return fmt.Errorf("journal: write lastMark: invalid mark %d:%d", p.LogID, p.Offset)
	}
	if len(dirs) == 0 {
		return errors.New("journal: write lastMark: no directory to write it in")
	}
	var b [LastMarkBytes]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(p.LogID))
	binary.BigEndian.PutUint64(b[8:16], uint64(p.Offset))
	var errs []error
	for _, dir := range dirs {
		if err := writeFileAtomic(fsys, dir, name, b[:]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeFileAtomic replaces dir/name with data durably.
func writeFileAtomic(fsys vfs.FS, dir, name string, data []byte) error {
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("journal: create %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close() // the write error is the one to report
		return fmt.Errorf("journal: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("journal: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("journal: close %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("journal: rename %s: %w", tmp, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("journal: sync %s: %w", dir, err)
	}
	return nil
}

// ReadLastMark returns the greatest log mark stored as the file name in
// dirs, or the zero Position if there is none (a new bookie: replay
// everything). A directory without the file is skipped. A file of the
// wrong size or with a negative field is an error wrapping ErrCorrupt:
// BookKeeper skips such a file, but the mark it held may be the greatest,
// and replaying from an older one could need journal files already
// removed, so keeper stops instead of guessing.
func ReadLastMark(fsys vfs.FS, dirs []string, name string) (Position, error) {
	var best Position
	for _, dir := range dirs {
		path := filepath.Join(dir, name)
		data, err := vfs.ReadFile(fsys, path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Position{}, fmt.Errorf("journal: read %s: %w", path, err)
		}
		if len(data) != LastMarkBytes {
			return Position{}, fmt.Errorf("%w: %s holds %d bytes, want %d", ErrCorrupt, path, len(data), LastMarkBytes)
		}
		p := Position{
			LogID:  int64(binary.BigEndian.Uint64(data[0:8])),
			Offset: int64(binary.BigEndian.Uint64(data[8:16])),
		}
		if p.LogID < 0 || p.Offset < 0 {
			return Position{}, fmt.Errorf("%w: %s holds the invalid mark %d:%d", ErrCorrupt, path, p.LogID, p.Offset)
		}
		if p.Compare(best) > 0 {
			best = p
		}
	}
	return best, nil
}
