package bookie

import (
	"fmt"

	"keeper/internal/vfs"
)

// lockDirs takes the exclusive lock of every journal, ledger and index
// directory before Start reads or writes anything in them (vfs.LockDirs:
// the file vfs.LockFileName at the top of each directory, recording this
// process's pid and command line). A second bookie on any of them, in this
// process or another, then refuses to start with an error naming the
// directory and the holder's pid. The lock file sits next to current/, so
// neither the cookie check (which wants current/ empty on a new bookie)
// nor pebble's own lock (in current/index) meets it; and since the index
// directory is locked here first, a second bookie gets this error rather
// than pebble's. The bookie releases the lock when it stops.
func (b *Bookie) lockDirs() error {
	dirs := append(append([]string{}, b.cfg.JournalDirs...), b.cfg.LedgerDirs...)
	if b.cfg.IndexDir != "" {
		dirs = append(dirs, b.cfg.IndexDir)
	}
	l, err := vfs.LockDirs(b.cfg.FS, dirs...)
	if err != nil {
		return fmt.Errorf("bookie: %w", err)
	}
	b.dirLock = l
	return nil
}

// unlockDirs releases the lock lockDirs took, if any.
func (b *Bookie) unlockDirs() error {
	err := b.dirLock.Close()
	b.dirLock = nil
	return err
}
