package journal

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"keeper/internal/durablelog"
	"keeper/internal/vfs"
)

// File is one journal file.
type File struct {
	Path  string // journalDir/current/<hex log id>.txn
	LogID int64  // from its name
}

// Files lists the journal files under journalDir, ordered by log id.
// Other files in the directory are ignored. A missing directory is an
// empty journal.
func Files(fsys vfs.FS, journalDir string) ([]File, error) {
	return listFiles(fsys, filepath.Join(journalDir, DirName))
}

func listFiles(fsys vfs.FS, dir string) ([]File, error) {
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: list %s: %w", dir, err)
	}
	var files []File
	for _, name := range names {
		if id, ok := ParseFileName(name); ok {
			files = append(files, File{Path: filepath.Join(dir, name), LogID: id})
		}
	}
	// Two names can parse to one id ("a.txn", "0a.txn"); keep the order total.
	slices.SortFunc(files, func(a, b File) int {
		return cmp.Or(cmp.Compare(a.LogID, b.LogID), cmp.Compare(a.Path, b.Path))
	})
	return files, nil
}

// RemoveBefore deletes journal files that replay from mark no longer
// needs: those whose log id is below mark.LogID, except the keepBackups
// newest of them (journalMaxBackups; DefaultMaxBackups is BookKeeper's
// default). It returns the log ids it removed, oldest first.
//
// Call it only after mark is durable in lastMark (WriteLastMark), which in
// turn must wait until ledger storage holds everything before mark (docs/bookkeeper-protocol.md
// §7.3, Appendix A item 8). It touches only files before mark.LogID, never
// the one a Journal appends to (whose id is at least its Mark's), so it
// may run while the Journal is in use.
func RemoveBefore(fsys vfs.FS, journalDir string, mark Position, keepBackups int) ([]int64, error) {
	if keepBackups < 0 {
		return nil, fmt.Errorf("journal: keepBackups %d is negative", keepBackups)
	}
	dir := filepath.Join(journalDir, DirName)
	files, err := listFiles(fsys, dir)
	if err != nil {
		return nil, err
	}
	before, _ := slices.BinarySearchFunc(files, mark.LogID, func(f File, id int64) int {
		return cmp.Compare(f.LogID, id)
	})
	if before <= keepBackups {
		return nil, nil
	}
	var removed []int64
	for _, f := range files[:before-keepBackups] {
		if err := fsys.Remove(f.Path); err != nil {
			return removed, fmt.Errorf("journal: remove %s: %w", f.Path, err)
		}
		removed = append(removed, f.LogID)
	}
	// Not needed for correctness (a resurrected old file is ignored and
	// removed again), but it keeps a crash from bringing back disk usage.
	if err := fsys.SyncDir(dir); err != nil {
		return removed, fmt.Errorf("journal: sync %s: %w", dir, err)
	}
	return removed, nil
}

// removeFile removes one file and syncs its directory.
func removeFile(fsys vfs.FS, f File) error {
	return durablelog.Remove(fsys, filepath.Dir(f.Path), "journal", f.Path)
}

// cutFile truncates the file at path to size bytes, durably.
func cutFile(fsys vfs.FS, path string, size int64) error {
	return durablelog.Cut(fsys, path, size, "journal")
}
