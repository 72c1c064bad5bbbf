package durablelog

import (
	"fmt"

	"keeper/internal/vfs"
)

// Cut truncates the file at path to size bytes, durably: how a torn tail
// is repaired, and how a log is cut back to a record boundary. prefix
// starts its error messages.
func Cut(fsys vfs.FS, path string, size int64, prefix string) error {
	f, err := fsys.OpenReadWrite(path)
	if err != nil {
		return fmt.Errorf("%s: open %s: %w", prefix, path, err)
	}
	if err := f.Truncate(size); err != nil {
		_ = f.Close() // the truncate error is the one to report
		return fmt.Errorf("%s: truncate %s to %d bytes: %w", prefix, path, size, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("%s: sync %s: %w", prefix, path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: close %s: %w", prefix, path, err)
	}
	return nil
}

// Remove removes the files at paths in dir, last first, so that a crash
// part way leaves a prefix of the log, then syncs dir. prefix starts its
// error messages.
func Remove(fsys vfs.FS, dir, prefix string, paths ...string) error {
	if len(paths) == 0 {
		return nil
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if err := fsys.Remove(paths[i]); err != nil {
			return fmt.Errorf("%s: remove %s: %w", prefix, paths[i], err)
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("%s: sync %s: %w", prefix, dir, err)
	}
	return nil
}
