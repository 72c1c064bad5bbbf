package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
	"keeper/internal/gctune"
	"keeper/internal/vfs"
)

// StorageConfig says where and how the server keeps its data. With an
// empty DataDir the server keeps everything in memory.
type StorageConfig struct {
	// FS is the filesystem; nil means vfs.Default. Tests inject faults here.
	FS vfs.FS
	// DataDir holds snapshots (in DataDir/version-2); DataLogDir holds the
	// transaction log (in DataLogDir/version-2) and defaults to DataDir.
	DataDir, DataLogDir string
	// PreAllocSizeBytes is the log's preallocation step; 0 is 64 MiB.
	PreAllocSizeBytes int64
	// NoSync is zoo.cfg's forceSync=no (zookeeper.forceSync): the log's
	// batches are written to the file but not synced before their writes
	// are acknowledged (txnlog.Config.NoSync), so a machine crash can lose
	// acknowledged writes. Snapshots, log rolls and the epoch files are
	// still synced.
	NoSync bool
	// SnapCount is ZooKeeper's snapCount: about this many txns (randomised
	// between half and all of it) pass between snapshots.
	SnapCount int
	// SnapSizeLimitBytes also triggers a snapshot once the log grows by
	// about this much; 0 is ZooKeeper's 4 GiB default, negative disables.
	SnapSizeLimitBytes int64
	// SnapRetainCount and PurgeInterval are autopurge.snapRetainCount and
	// autopurge.purgeInterval; a zero interval disables autopurge.
	SnapRetainCount int
	PurgeInterval   time.Duration
	// SnapshotStepNodes is how many nodes the loop serialises between
	// requests while a snapshot is being taken; 0 means 1000.
	SnapshotStepNodes int
	// TrustEmptySnapshot is Apache ZooKeeper's
	// zookeeper.snapshot.trust.empty (zoo.cfg snapshot.trust.empty). When
	// start-up cannot account for the data in the directories, the server
	// sets every snapshot and log file aside (into a set-aside-<time>
	// directory next to version-2) and starts from an empty tree instead
	// of refusing; an ensemble member then rejoins only through a
	// leader's snapshot (zab.Config.StateLost). See
	// docs/storage-recovery.md.
	TrustEmptySnapshot bool
	// ProgressInterval is how often loading a snapshot or replaying the
	// log at start logs how far it is; 0 means DefaultProgressInterval.
	ProgressInterval time.Duration
}

func (c *StorageConfig) progressInterval() time.Duration {
	if c.ProgressInterval > 0 {
		return c.ProgressInterval
	}
	return DefaultProgressInterval
}

func (c *StorageConfig) enabled() bool { return c.DataDir != "" }

func (c *StorageConfig) logDir() string {
	if c.DataLogDir != "" {
		return c.DataLogDir
	}
	return c.DataDir
}

func (c *StorageConfig) snapDir() string { return filepath.Join(c.DataDir, txnlog.DirName) }

// recoverState loads the newest valid snapshot and replays the log after
// it into core, and opens the log for appending. Data it cannot account
// for stops start-up with an *UnaccountedError that names the files
// (recovery.go); only a torn tail at the very end of the log is repaired,
// since it can only hold txns never acknowledged.
func recoverState(cfg *StorageConfig, core *zkcore.Server, maxRecord int, now zkcore.Now, logger *slog.Logger,
	m *storageMetrics) (*txnlog.Log, error) {
	if _, err := loadState(cfg, core, maxRecord, now, logger, loadOptions{atStart: true, metrics: m}); err != nil {
		return nil, err
	}
	return txnlog.Open(cfg.FS, cfg.logDir(), txnlogConfig(cfg, maxRecord, logger))
}

func txnlogConfig(cfg *StorageConfig, maxRecord int, logger *slog.Logger) txnlog.Config {
	return txnlog.Config{PreAllocSizeBytes: cfg.PreAllocSizeBytes, MaxRecordBytes: maxRecord, NoSync: cfg.NoSync, Logger: logger}
}

// loadOptions says what kind of load loadState does.
type loadOptions struct {
	// recent, when not nil, keeps the tail of the log replayed (for Zab,
	// which brings learners up to date from it).
	recent *recentTail
	// atStart is set for the load at start-up (not a learner's reload
	// after a TRUNC or SNAP): only then does a fresh directory get its
	// first snapshot, and TrustEmptySnapshot set data aside.
	atStart bool
	// fromLeader is set for an ensemble member that can get a leader's
	// snapshot: one that starts empty in place of data it lost writes no
	// snapshot of its own, so that it stays lost until the leader's.
	fromLeader bool
	// metrics, when not nil, receives the load's timings.
	metrics *storageMetrics
}

// loadState restores core from the newest valid snapshot and the log after
// it, after checking that they account for all the data the directories
// show the server had (recovery.go). It reports whether the state was
// lost: TrustEmptySnapshot replaced data that could not be accounted for
// with an empty tree.
func loadState(cfg *StorageConfig, core *zkcore.Server, maxRecord int, now zkcore.Now, logger *slog.Logger,
	opts loadOptions) (lost bool, err error) {
	began := time.Now()
	defer func() {
		if err == nil {
			opts.metrics.loaded(began)
		}
	}()
	fs := cfg.FS
	snapDir := cfg.snapDir()
	if loadBytes(fs, snapDir, cfg.logDir()) >= relaxGCMinBytes {
		defer relaxGC(loadBudget(fs, snapDir))()
	}
	for _, dir := range []string{snapDir, filepath.Join(cfg.logDir(), txnlog.DirName)} {
		if err := vfs.MkdirAllSync(fs, dir, 0o755); err != nil {
			return false, fmt.Errorf("server: create %s: %w", dir, err)
		}
	}
	if removed, err := snap.RemoveTemp(fs, snapDir); err != nil {
		return false, err
	} else if len(removed) > 0 {
		logger.Warn("removed unfinished snapshots", "files", removed)
	}
	found, err := surveyWithProgress(cfg, maxRecord, logger)
	if err != nil {
		return false, err
	}
	opts.metrics.snapLoaded(began)
	err = restore(cfg, found, core, maxRecord, now, logger, opts.recent, opts.metrics)
	var unaccounted *UnaccountedError
	switch {
	case err == nil:
	case !opts.atStart || !cfg.TrustEmptySnapshot || !errors.As(err, &unaccounted):
		return false, err
	default:
		if err := startEmpty(cfg, core, now, logger, unaccounted, opts.recent); err != nil {
			return false, err
		}
		lost = true
	}
	if sn := found.newest; sn != nil && !lost {
		at := time.Now()
		if info, err := fs.Stat(filepath.Join(snapDir, sn.Name)); err == nil {
			at = info.ModTime()
		}
		opts.metrics.snapshotSaved(sn.Zxid, at)
	}
	if opts.atStart && (found.fresh() || (lost && !opts.fromLeader)) {
		if err := writeFirstSnapshot(cfg, core, logger); err != nil {
			return lost, err
		}
		opts.metrics.snapshotSaved(core.LastZxid(), time.Now())
	}
	return lost, nil
}

// surveyWithProgress runs survey, which reads the newest valid snapshot,
// logging every progressInterval how much of it has been read, and once
// when it is done, with the time it took.
func surveyWithProgress(cfg *StorageConfig, maxRecord int, logger *slog.Logger) (*dataFiles, error) {
	var total int64
	if infos, err := snap.List(cfg.FS, cfg.snapDir()); err == nil && len(infos) > 0 {
		total = infos[0].Size
		logger.Info("loading snapshot", "file", infos[0].Name, "bytes", total)
	}
	var read atomic.Int64
	counted := *cfg
	counted.FS = countingFS{FS: cfg.FS, read: &read}
	began := time.Now()
	stop := every(logger, cfg.progressInterval(), "loading snapshot", func(elapsed time.Duration) []any {
		n := read.Load()
		return []any{"read_bytes", n, "of_bytes", total, "percent", percent(n, total), "elapsed", elapsed.Round(time.Second)}
	})
	found, err := survey(&counted, maxRecord)
	stop()
	if err == nil && found.newest != nil {
		logger.Info("snapshot read", "file", found.newest.Name, "read_bytes", read.Load(),
			"duration", time.Since(began).Round(time.Millisecond))
	}
	return found, err
}

// restore loads what survey found into core: the newest valid snapshot (or
// the empty tree where that accounts for the data) and the log after it,
// repairing a torn tail first. Data it cannot account for gives an
// *UnaccountedError.
func restore(cfg *StorageConfig, found *dataFiles, core *zkcore.Server, maxRecord int, now zkcore.Now,
	logger *slog.Logger, recent *recentTail, m *storageMetrics) error {
	for _, sk := range found.skipped {
		logger.Warn("skipped unusable snapshot", "file", sk.Info.Name, "reason", sk.Err)
	}
	if found.newest == nil {
		if reason := found.emptyTreeUnaccounted(); reason != "" {
			return found.unaccounted(reason, nil)
		}
	}
	tree := datatree.New()
	var sessions []zkcore.SessionState
	var pendingDigest *snap.Digest
	if sn := found.newest; sn != nil {
		tree = sn.Tree
		tree.SetLastZxid(sn.Zxid)
		for _, s := range sn.Sessions {
			sessions = append(sessions, zkcore.SessionState{ID: s.ID, TimeoutMs: s.TimeoutMs})
		}
		if sn.Digest != nil && !sn.DigestChecked && sn.Digest.Zxid > sn.Zxid {
			pendingDigest = sn.Digest
		}
		logger.Info("loaded snapshot", "file", sn.Name, "zxid", sn.Zxid, "nodes", tree.NodeCount(), "sessions", len(sessions))
	}
	core.Restore(tree, sessions, now)
	lcfg := txnlogConfig(cfg, maxRecord, logger)
	if torn, err := txnlog.RepairTornTail(cfg.FS, cfg.logDir(), lcfg); err != nil {
		return found.damaged(err)
	} else if torn != nil {
		logger.Warn("truncated a torn record at the end of the log", "file", torn.File, "offset", torn.Offset)
	}
	replayStart := time.Now()
	var progress atomic.Int64 // txns replayed so far, for the progress lines
	stop := every(logger, cfg.progressInterval(), "replaying transaction log", func(elapsed time.Duration) []any {
		return []any{"txns", progress.Load(), "elapsed", elapsed.Round(time.Second)}
	})
	check := newDigestCheck(pendingDigest)
	replayed, lastFile, err := replay(cfg.FS, cfg.logDir(), lcfg, core, check, now, recent, &progress)
	stop()
	if err != nil {
		return found.damaged(err)
	}
	if check.healed != 0 {
		logger.Info("the snapshot's digest record did not match the tree replayed to its zxid (the snapshot held effects of a later txn); the log's digest matched it from a later txn on",
			"record_zxid", pendingDigest.Zxid, "matched_at", check.healed)
	}
	m.replayed(replayStart, replayed)
	if reason := found.tailUnaccounted(core.LastZxid(), lastFile); reason != "" {
		return found.unaccounted(reason, nil)
	}
	logger.Info("replayed transaction log", "txns", replayed, "last_zxid", core.LastZxid(),
		"duration", time.Since(replayStart).Round(time.Millisecond))
	return nil
}

// relaxGC turns the collector off while a snapshot and the log load: they
// allocate the tree, which stays live, so collecting while it grows mostly
// marks it again and again (≈ 27% of the CPU of a restart with 1,000,000
// znodes at GOGC 100, still ≈ 15% of its time at 400). A soft memory limit
// of budget bytes above what the process holds now (or GOMEMLIMIT if lower)
// still collects a load that makes more garbage than expected. It returns
// the function that restores the settings; loads that overlap in one
// process (tests) restore them when the last one ends.
func relaxGC(budget int64) (restore func()) {
	gcRelax.Lock()
	defer gcRelax.Unlock()
	if gcRelax.loads == 0 {
		gcRelax.resumeTuner = gctune.Pause()
		gcRelax.percent = debug.SetGCPercent(-1)
		gcRelax.limit = debug.SetMemoryLimit(-1)
		held := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
		metrics.Read(held)
		if held[0].Value.Kind() == metrics.KindUint64 {
			debug.SetMemoryLimit(min(gcRelax.limit, int64(held[0].Value.Uint64())+budget))
		} else {
			debug.SetGCPercent(gcRelax.percent) // cannot bound it: leave the collector as it was
		}
	}
	gcRelax.loads++
	return func() {
		gcRelax.Lock()
		defer gcRelax.Unlock()
		if gcRelax.loads--; gcRelax.loads == 0 {
			debug.SetMemoryLimit(gcRelax.limit)
			debug.SetGCPercent(gcRelax.percent)
			gcRelax.resumeTuner()
		}
	}
}

// relaxGCMinBytes is the size of the data (the newest snapshot and the log
// files) below which a load leaves the collector alone: it collects little
// while so little loads, and the settings are the process's, so turning
// them over costs more than it saves when loads are small and many (a
// simulator restarts thousands of members in one process).
const relaxGCMinBytes = 16 << 20

// loadBytes is the size of the newest snapshot and of every log file, as
// far as the directories can be listed.
func loadBytes(fs vfs.FS, snapDir, logDir string) int64 {
	var n int64
	if infos, err := snap.List(fs, snapDir); err == nil && len(infos) > 0 {
		n += infos[0].Size
	}
	files, _ := txnlog.Files(fs, logDir)
	for _, f := range files {
		if info, err := fs.Stat(f.Path); err == nil {
			n += info.Size()
		}
	}
	return n
}

// gcRelax is the collector's settings from before the loads in progress.
var gcRelax struct {
	sync.Mutex
	loads       int
	percent     int
	limit       int64
	resumeTuner func() // gctune's, paused while a load runs
}

// loadBudget is the memory a load may allocate before the collector runs:
// four times the newest snapshot's size (the tree it holds takes about 1.6
// times its size in memory) plus 512 MiB for the log's replay.
func loadBudget(fs vfs.FS, snapDir string) int64 {
	budget := int64(512 << 20)
	if infos, err := snap.List(fs, snapDir); err == nil && len(infos) > 0 {
		budget += 4 * infos[0].Size
	}
	return budget
}

// recentTail keeps the last max txns of a replay, with their payloads.
type recentTail struct {
	max     int
	entries []zab.Entry
}

func (r *recentTail) add(z zxid.ID, payload []byte) {
	r.entries = append(r.entries, zab.Entry{Zxid: z, Data: append([]byte(nil), payload...)})
	if len(r.entries) > 2*r.max {
		r.entries = append(r.entries[:0:0], r.entries[len(r.entries)-r.max:]...)
	}
}

func (r *recentTail) tail() []zab.Entry {
	if len(r.entries) > r.max {
		return r.entries[len(r.entries)-r.max:]
	}
	return r.entries
}

// replay applies every txn after the tree's last zxid and checks a fuzzy
// snapshot's digest record with digest (digestCheck). It returns how many
// txns it applied and the file of the last one.
func replay(fs vfs.FS, logDir string, lcfg txnlog.Config, core *zkcore.Server, digest *digestCheck, now zkcore.Now,
	recent *recentTail, progress *atomic.Int64) (n int, lastFile string, err error) {
	it, err := txnlog.Read(fs, logDir, core.LastZxid()+1, lcfg)
	if err != nil {
		return 0, "", err
	}
	defer it.Close()
	for {
		t, err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, lastFile, fmt.Errorf("server: replaying the transaction log: %w", err)
		}
		last := core.LastZxid()
		if t.Header.Zxid <= last {
			continue
		}
		if !follows(last, t.Header.Zxid) {
			path, off := it.Position()
			return n, lastFile, &gapError{last: last, next: t.Header.Zxid, file: path, offset: off}
		}
		core.Apply(t, now)
		if recent != nil {
			recent.add(t.Header.Zxid, it.Payload())
		}
		n++
		progress.Store(int64(n))
		lastFile, _ = it.Position()
		digest.applied(t, core.Tree(), lastFile)
	}
	if digest.waiting() {
		return n, lastFile, fmt.Errorf("server: the log ends at %s, before %s where the snapshot's digest was taken: %w",
			core.LastZxid(), digest.want.Zxid, errLogShort)
	}
	if err := digest.err(); err != nil {
		return n, lastFile, fmt.Errorf("server: %w", err)
	}
	return n, lastFile, nil
}

// follows reports whether next may come right after last: the next counter
// of the same epoch, or the first txn of a later epoch.
func follows(last, next zxid.ID) bool {
	return next == last+1 || (next.Counter() == 1 && next.Epoch() > last.Epoch())
}
