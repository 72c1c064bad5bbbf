package server

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
	"keeper/internal/failpoint"
	"keeper/internal/vfs"
)

// Epoch files, named as Apache ZooKeeper names them (docs/zookeeper-protocol.md §9.1): decimal,
// no newline, in dataDir/version-2.
const (
	acceptedEpochFile = "acceptedEpoch"
	currentEpochFile  = "currentEpoch"
)

// diskLog is the replicated log of a quorum member on disk: Apache
// ZooKeeper's transaction log, snapshots and epoch files. It implements
// peer.Log.
type diskLog struct {
	storage   *StorageConfig
	log       *txnlog.Log
	maxRecord int
	coreCfg   zkcore.Config // to rebuild state on Reload
	logger    *slog.Logger
	hard      zab.HardState
	now       func() zkcore.Now
	purgeMu   *sync.Mutex // Server.storageMu: no purge during Truncate or InstallSnapshot
	metrics   *storageMetrics
}

// readEpochs reads the epoch files; a missing file is epoch 0, a damaged
// one an error.
func readEpochs(fsys vfs.FS, dir string) (zab.HardState, error) {
	var hs zab.HardState
	for name, dst := range map[string]*zxid.Epoch{acceptedEpochFile: &hs.AcceptedEpoch, currentEpochFile: &hs.CurrentEpoch} {
		b, err := vfs.ReadFile(fsys, filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return hs, err
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
		if err != nil {
			return hs, fmt.Errorf("server: %s: %q is not an epoch: %w", filepath.Join(dir, name), b, err)
		}
		*dst = zxid.Epoch(v)
	}
	return hs, nil
}

// writeEpoch replaces an epoch file atomically: temp file, fsync, rename,
// fsync the directory.
func writeEpoch(fsys vfs.FS, dir, name string, e zxid.Epoch) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := fsys.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(strconv.FormatUint(uint64(e), 10))); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("server: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return fsys.SyncDir(dir)
}

// SaveState writes the epochs that changed.
func (l *diskLog) SaveState(hs zab.HardState) error {
	dir := l.storage.snapDir()
	if hs.AcceptedEpoch != l.hard.AcceptedEpoch {
		if err := writeEpoch(l.storage.FS, dir, acceptedEpochFile, hs.AcceptedEpoch); err != nil {
			return err
		}
	}
	if hs.CurrentEpoch != l.hard.CurrentEpoch {
		if err := writeEpoch(l.storage.FS, dir, currentEpochFile, hs.CurrentEpoch); err != nil {
			return err
		}
		failpoint.Hit(failpoint.CurrentEpochWritten)
	}
	l.hard = hs
	return nil
}

// Append buffers txns in the log; Sync makes them durable.
func (l *diskLog) Append(es []zab.Entry) error {
	for _, e := range es {
		if err := l.log.AppendPayload(e.Data); err != nil {
			return err
		}
	}
	return nil
}

// Sync is the group commit point.
func (l *diskLog) Sync() error {
	start := time.Now()
	err := l.log.Sync()
	if err == nil {
		l.metrics.fsynced(start)
	}
	return err
}

// Truncate (Zab's TRUNC) is in truncate.go.

// InstallSnapshot writes the leader's snapshot as this server's newest
// snapshot: any snapshot above z goes (after the new one is durable, so a
// crash between leaves the old state whole), and anything logged after z
// belonged to another history and goes.
func (l *diskLog) InstallSnapshot(z zxid.ID, tree *datatree.Tree, sessions []zkcore.SessionState) error {
	l.purgeMu.Lock()
	defer l.purgeMu.Unlock()
	var entries []snap.SessionEntry
	for _, s := range sessions {
		entries = append(entries, snap.SessionEntry{ID: s.ID, TimeoutMs: s.TimeoutMs})
	}
	d := &snap.Digest{Zxid: z, Version: datatree.DigestVersion, TreeDigest: tree.Digest()}
	if _, err := snap.Write(l.storage.FS, l.storage.snapDir(), z, entries, tree, d, snap.Options{}); err != nil {
		return err
	}
	failpoint.Hit(failpoint.LearnerSnapWritten)
	if err := l.removeSnapshotsAbove(z); err != nil {
		return err
	}
	return l.log.Truncate(z)
}

// Reload rebuilds the state from disk, as at start-up.
func (l *diskLog) Reload() (*datatree.Tree, []zkcore.SessionState, error) {
	if err := l.log.Sync(); err != nil {
		return nil, nil, err
	}
	core, err := zkcore.New(l.coreCfg)
	if err != nil {
		return nil, nil, err
	}
	if _, err := loadState(l.storage, core, l.maxRecord, l.now(), l.logger, loadOptions{}); err != nil {
		return nil, nil, err
	}
	return core.Tree(), core.SnapshotSessions(), nil
}
