package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// MkdirAllSync creates dir and any missing parents durably: after creating
// them it syncs the parent of each directory it created, top down, so that
// a crash cannot lose a directory that files were then synced into.
func MkdirAllSync(fsys FS, dir string, perm os.FileMode) error {
	var missing []string // deepest first
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		_, err := fsys.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, perm); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}
