package txnlog

import (
	"errors"
	"io"
	"path/filepath"

	"keeper/coordination/txn"
	"keeper/coordination/zxid"
	"keeper/internal/durablelog"
	"keeper/internal/vfs"
)

// RepairTornTail cuts a torn tail (see the package doc) off the log in
// dataLogDir and returns the error that described it, or nil if the log's
// last file was not torn. A file torn before its first complete record is
// removed; otherwise the file is truncated where the torn record starts,
// and the change is synced. Corruption is never repaired: it is returned
// as an error and nothing changes. Open calls this itself; never call it
// while a Log has the directory open, since a live log's last record may
// be half written.
func RepairTornTail(fsys vfs.FS, dataLogDir string, cfg Config) (*RecordError, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return repairTornTail(fsys, filepath.Join(dataLogDir, DirName), cfg.withDefaults())
}

func repairTornTail(fsys vfs.FS, logDir string, cfg Config) (*RecordError, error) {
	files, err := listFiles(fsys, logDir)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	last := files[len(files)-1]
	_, _, err = scanFile(fsys, last, true, cfg)
	var torn *RecordError
	if err == nil || !errors.Is(err, ErrTorn) || !errors.As(err, &torn) {
		return nil, err
	}
	if torn.Offset <= FileHeaderBytes {
		err = removeFiles(fsys, logDir, last)
	} else {
		err = cutFile(fsys, last.Path, torn.Offset)
	}
	if err != nil {
		return nil, err
	}
	return torn, nil
}

// Truncate removes every txn with a zxid above z from the log in
// dataLogDir: the files that start after z are removed, newest first, and
// the file holding z is cut after z's record (or, if z is missing, after
// the last record below it). A torn tail goes with the rest. A crash part
// way leaves a prefix of the original history, so Truncate can simply be
// run again. Zab's TRUNC and `keeper tool txnlog truncate` use it.
func Truncate(fsys vfs.FS, dataLogDir string, z zxid.ID, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	return truncateLog(fsys, filepath.Join(dataLogDir, DirName), z, cfg.withDefaults())
}

func truncateLog(fsys vfs.FS, logDir string, z zxid.ID, cfg Config) error {
	files, err := listFiles(fsys, logDir)
	if err != nil {
		return err
	}
	keep := len(files)
	for keep > 0 && files[keep-1].Start > z {
		keep--
	}
	if err := removeFiles(fsys, logDir, files[keep:]...); err != nil {
		return err
	}
	if keep == 0 {
		return nil
	}
	file := files[keep-1]
	cut, records, size, err := cutPoint(fsys, file, z, cfg)
	switch {
	case err != nil:
		return err
	case records == 0:
		return removeFiles(fsys, logDir, file)
	case cut < size:
		return cutFile(fsys, file.Path, cut)
	}
	return nil
}

// cutPoint returns the offset just after the last record with zxid ≤ z in
// file, how many such records there are, and the file's size. What follows
// z is not checked, since it is about to go.
func cutPoint(fsys vfs.FS, file File, z zxid.ID, cfg Config) (cut int64, records int, size int64, err error) {
	r, err := openFileReader(fsys, file, true, cfg.MaxRecordBytes, newRepeats())
	if errors.Is(err, ErrTorn) {
		return FileHeaderBytes, 0, 0, nil // not even a header: the file goes
	}
	if err != nil {
		return 0, 0, 0, err
	}
	defer r.close()
	cut = FileHeaderBytes
	var prev zxid.ID
	for {
		_, rz, err := r.next(prev)
		if err == io.EOF || errors.Is(err, ErrTorn) {
			break
		}
		if err != nil {
			return 0, 0, 0, err
		}
		if rz > z {
			break
		}
		prev, cut = rz, r.sc.Offset()
		records++
	}
	return cut, records, r.sc.Size(), nil
}

// recoverLast finds the log's last zxid (0 for an empty log), checking the
// last file with records in full. Trailing files with no records (a crash
// right after a file was created) are removed, so that the next file the
// writer creates is the last.
func recoverLast(fsys vfs.FS, logDir string, cfg Config) (zxid.ID, error) {
	files, err := listFiles(fsys, logDir)
	if err != nil {
		return 0, err
	}
	for i := len(files) - 1; i >= 0; i-- {
		last, records, err := scanFile(fsys, files[i], true, cfg)
		if err != nil {
			return 0, err
		}
		if records > 0 {
			return last, removeFiles(fsys, logDir, files[i+1:]...)
		}
		cfg.Logger.Warn("removing log file without records", "file", files[i].Path)
	}
	return 0, removeFiles(fsys, logDir, files...)
}

// scanFile reads a whole file with every check Next makes, and returns its
// last zxid and how many records it holds. Records of unknown types are
// intact, so they count.
func scanFile(fsys vfs.FS, file File, last bool, cfg Config) (zxid.ID, int, error) {
	it := &Iterator{fsys: fsys, files: []File{file}, maxRecordBytes: cfg.MaxRecordBytes, rep: newRepeats()}
	if last {
		it.lastPath = file.Path
	}
	defer it.Close()
	records := 0
	for {
		_, err := it.Next()
		if err == io.EOF {
			return it.prev, records, nil
		}
		if err != nil && !errors.Is(err, txn.ErrUnknownType) {
			return 0, records, err
		}
		records++
	}
}

// removeFiles removes files, newest first, then syncs the directory.
func removeFiles(fsys vfs.FS, logDir string, files ...File) error {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	return durablelog.Remove(fsys, logDir, "txnlog", paths...)
}

// cutFile truncates the file at path to size bytes, durably.
func cutFile(fsys vfs.FS, path string, size int64) error {
	return durablelog.Cut(fsys, path, size, "txnlog")
}
