package txnlog

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// File is one log file.
type File struct {
	Path  string  // dataLogDir/version-2/log.<hex>
	Start zxid.ID // the zxid of its first txn, from its name
}

// Name returns the file's base name.
func (f File) Name() string { return filepath.Base(f.Path) }

// Files lists the log files of the log in dataLogDir, ordered by starting
// zxid. Other files in the directory (snapshots, epoch files) are ignored.
// A missing directory is an empty log.
func Files(fsys vfs.FS, dataLogDir string) ([]File, error) {
	return listFiles(fsys, filepath.Join(dataLogDir, DirName))
}

func listFiles(fsys vfs.FS, logDir string) ([]File, error) {
	names, err := fsys.List(logDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("txnlog: list %s: %w", logDir, err)
	}
	var files []File
	for _, name := range names {
		if start, ok := ParseFileName(name); ok {
			files = append(files, File{Path: filepath.Join(logDir, name), Start: start})
		}
	}
	slices.SortFunc(files, func(a, b File) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Path, b.Path))
	})
	return files, nil
}

// FilesNeededFrom returns the files that a restore from a snapshot taken at
// snapZxid reads: the file with the greatest start ≤ snapZxid+1 and every
// later one (docs/zookeeper-protocol.md §9.1, §9.2). If every file starts later, all are needed.
// files must be ordered as Files returns them. Purging may delete the
// files before the returned ones, once no kept snapshot needs them.
func FilesNeededFrom(files []File, snapZxid zxid.ID) []File {
	return files[startIndex(files, snapZxid+1):]
}

// startIndex returns the index of the file with the greatest start ≤ z, or
// 0 if there is none: where reading from z begins.
func startIndex(files []File, z zxid.ID) int {
	i, _ := slices.BinarySearchFunc(files, z, func(f File, z zxid.ID) int {
		if f.Start <= z {
			return -1
		}
		return 1
	})
	return max(i-1, 0)
}
