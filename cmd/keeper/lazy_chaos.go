//go:build chaos

package main

import (
	"math/rand/v2"
	"os"

	"keeper/internal/vfs"
	"keeper/internal/vfs/lazyfs"
)

// Environment of a chaos build that makes a SIGKILL lose what a power
// loss would (internal/vfs/lazyfs): with KEEPER_DROP_UNSYNCED=1 the storage keeps
// written bytes in the process until they are synced, so a kill drops
// them; KEEPER_DROP_UNSYNCED_UNDO names a directory (outside the data
// directories) for lazyfs's undo records, so that a kill during an fsync
// may also lose a prefix of what that fsync was writing. Both act only
// where KEEPER_FAULTS_FILE is set (storageFS).
const (
	dropUnsyncedEnv     = "KEEPER_DROP_UNSYNCED"
	dropUnsyncedUndoEnv = "KEEPER_DROP_UNSYNCED_UNDO"
)

// dropUnsyncedWriteback is the chance, after each write, that part of a
// file's un-synced bytes reaches the OS early (lazyfs.Options.Writeback),
// so that a kill between a write and its fsync leaves a torn tail rather
// than a clean one.
const dropUnsyncedWriteback = 0.2

// baseFS is the filesystem under the fault injector: the OS's, or with
// KEEPER_DROP_UNSYNCED=1 the OS's behind lazyfs. With an undo directory it
// first rolls back the syncs the previous process's kill interrupted
// (lazyfs.Recover), before anything opens a file.
func baseFS() vfs.FS {
	if v := os.Getenv(dropUnsyncedEnv); v == "" || v == "0" {
		return vfs.Default
	}
	logger := newLogger()
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	undo := os.Getenv(dropUnsyncedUndoEnv)
	if undo != "" {
		st, err := lazyfs.Recover(vfs.Default, undo, rng)
		if err != nil {
			logger.Error("lazyfs: rolling back interrupted syncs failed", "dir", undo, "err", err)
		} else if st.Undone > 0 {
			logger.Warn("lazyfs: rolled back syncs a kill interrupted", "undone", st.Undone, "torn", st.Torn,
				"changes_kept", st.Kept, "files", st.Files)
		}
	}
	fs, err := lazyfs.New(vfs.Default, lazyfs.Options{Writeback: dropUnsyncedWriteback, Rand: rng, UndoDir: undo})
	if err != nil {
		logger.Error("lazyfs: not used", "err", err)
		return vfs.Default
	}
	logger.Info("lazyfs: un-synced bytes are lost on a kill", "writeback", dropUnsyncedWriteback, "undo", undo,
		"seed", seed)
	return fs
}
