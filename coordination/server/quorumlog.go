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

// MemberLog is the replicated log of a quorum member on disk: Apache
// ZooKeeper's transaction log, snapshots and epoch files. It implements
// peer.Log. A running Server persists through it on its persister
// goroutine; the simulator (verify/sim) drives the same type on a
// vfs.MemFS whose crashes lose what was not synced. It is not safe for
// concurrent use: one goroutine at a time calls it.
type MemberLog struct {
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
func (l *MemberLog) SaveState(hs zab.HardState) error {
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
func (l *MemberLog) Append(es []zab.Entry) error {
	for _, e := range es {
		if err := l.log.AppendPayload(e.Data); err != nil {
			return err
		}
	}
	return nil
}

// Sync is the group commit point.
func (l *MemberLog) Sync() error {
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
func (l *MemberLog) InstallSnapshot(z zxid.ID, tree *datatree.Tree, sessions []zkcore.SessionState) error {
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
func (l *MemberLog) Reload() (*datatree.Tree, []zkcore.SessionState, error) {
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

// MemberLogConfig says how OpenMemberLog recovers a member's data.
type MemberLogConfig struct {
	// Storage says where the data lives; its DataDir must be set.
	Storage *StorageConfig
	// Core is the core's configuration, to rebuild the state after a TRUNC
	// (Reload); its Logger and Metrics are not used.
	Core zkcore.Config
	// MaxRecordBytes bounds one logged txn: jute.maxbuffer and 1 KiB.
	MaxRecordBytes int
	// MaxRecentEntries is how many txns of the log's tail Recovered.Recent
	// keeps for Zab's DIFFs; it must be positive.
	MaxRecentEntries int
	// FromLeader is set for a member that can get its state from a leader's
	// snapshot (not the only voter): one that lost its state then writes
	// no snapshot of its own and stays out of elections until a leader's.
	FromLeader bool
	// Now reads the clock the core runs on.
	Now func() zkcore.Now
	// Logger receives what recovery reports; nil discards it.
	Logger *slog.Logger

	// Set by a Server: the lock autopurge shares, and where the storage's
	// timings go. OpenMemberLog gives the log a lock of its own, and no
	// metrics, without them.
	purgeMu *sync.Mutex
	metrics *storageMetrics
}

// Recovered is what OpenMemberLog found on disk that Zab starts from.
type Recovered struct {
	// HardState is the epoch files' content.
	HardState zab.HardState
	// Recent is the tail of the log replayed, with payloads, for DIFFs.
	Recent []zab.Entry
	// TruncateFloor is the newest snapshot's zxid (zab.Config.TruncateFloor).
	TruncateFloor zxid.ID
	// Lost is set when snapshot.trust.empty replaced data that could not be
	// accounted for with an empty tree, for a member that gets its state
	// from a leader (zab.Config.StateLost).
	Lost bool
}

// OpenMemberLog recovers an ensemble member's data into core (the newest
// valid snapshot and the log after it, docs/storage-recovery.md), reads the
// epoch files and opens the log for appending: what a member does at start
// before it builds its Zab node. Data it cannot account for stops it with
// an *UnaccountedError.
func OpenMemberLog(cfg MemberLogConfig, core *zkcore.Server) (*MemberLog, Recovered, error) {
	var rec Recovered
	st := cfg.Storage
	if st == nil || !st.enabled() {
		return nil, rec, errors.New("server: an ensemble member needs a data directory")
	}
	if cfg.MaxRecentEntries <= 0 || cfg.MaxRecordBytes <= 0 || cfg.Now == nil {
		return nil, rec, errors.New("server: MemberLogConfig needs MaxRecentEntries, MaxRecordBytes and Now")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	hs, err := readEpochs(st.FS, st.snapDir())
	if err != nil {
		return nil, rec, err
	}
	recent := &recentTail{max: cfg.MaxRecentEntries}
	lost, err := loadState(st, core, cfg.MaxRecordBytes, cfg.Now(), logger,
		loadOptions{recent: recent, atStart: true, fromLeader: cfg.FromLeader, metrics: cfg.metrics})
	if err != nil {
		return nil, rec, err
	}
	if lost && cfg.FromLeader {
		logger.Warn("this member lost its state: it takes no part in elections until a leader sends it a snapshot")
	}
	lg, err := txnlog.Open(st.FS, st.logDir(), txnlogConfig(st, cfg.MaxRecordBytes, logger))
	if err != nil {
		return nil, rec, err
	}
	floor, err := truncateFloor(st)
	if err != nil {
		lg.Close()
		return nil, rec, err
	}
	purgeMu := cfg.purgeMu
	if purgeMu == nil {
		purgeMu = new(sync.Mutex)
	}
	coreCfg := cfg.Core
	coreCfg.Logger, coreCfg.Metrics = nil, nil
	l := &MemberLog{storage: st, log: lg, maxRecord: cfg.MaxRecordBytes, coreCfg: coreCfg,
		logger: logger, hard: hs, now: cfg.Now, purgeMu: purgeMu, metrics: cfg.metrics}
	rec = Recovered{HardState: hs, Recent: recent.tail(), TruncateFloor: floor, Lost: lost && cfg.FromLeader}
	return l, rec, nil
}

// OpenStandaloneLog recovers a standalone server's data into core (the
// newest valid snapshot and the log after it, docs/storage-recovery.md)
// and opens its log for appending: what a standalone server does at start.
// Its epochs are never read or written: a standalone dataDir has no epoch
// files, as ZooKeeper's standalone has none. Data it cannot account for
// stops it with an *UnaccountedError.
func OpenStandaloneLog(st *StorageConfig, core *zkcore.Server, maxRecord int, now zkcore.Now,
	logger *slog.Logger) (*MemberLog, error) {
	return openStandaloneLog(st, core, maxRecord, now, logger, nil, nil)
}

// openStandaloneLog is OpenStandaloneLog with a Server's autopurge lock
// and metrics (nil: a lock of its own, no metrics).
func openStandaloneLog(st *StorageConfig, core *zkcore.Server, maxRecord int, now zkcore.Now, logger *slog.Logger,
	purgeMu *sync.Mutex, m *storageMetrics) (*MemberLog, error) {
	if st == nil || !st.enabled() {
		return nil, errors.New("server: a standalone log needs a data directory")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lg, err := recoverState(st, core, maxRecord, now, logger, m)
	if err != nil {
		return nil, err
	}
	if purgeMu == nil {
		purgeMu = new(sync.Mutex)
	}
	return &MemberLog{storage: st, log: lg, maxRecord: maxRecord, logger: logger,
		now: func() zkcore.Now { return now }, purgeMu: purgeMu, metrics: m}, nil
}

// Close closes the log file.
func (l *MemberLog) Close() error { return l.log.Close() }
