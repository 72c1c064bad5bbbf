package server

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
)

// Start-up never serves less data than the directories show the server had
// (docs/storage-recovery.md). It loads the newest valid snapshot, or the
// empty tree where that accounts for the data, replays the log after it,
// and refuses with an *UnaccountedError when
//
//   - a newer snapshot could not be used and the replay ends before its
//     zxid (the txns up to it are gone);
//   - the log does not follow on from the snapshot (a gap), or a record
//     that may have been acknowledged is damaged;
//   - there is no usable snapshot, and the log does not begin at the first
//     txn of the service, or there is no log but damaged snapshots or
//     epoch files show there was data.
//
// A directory with nothing in it is fresh: the server writes snapshot.0 at
// once, as Apache ZooKeeper does, so that from then on every directory
// holds a snapshot to account for its log and epoch files.

// ErrUnaccounted marks a refusal to start: the data directories do not
// account for all the data they show the server had.
var ErrUnaccounted = errors.New("server: the data directory cannot account for its data")

// UnaccountedError is start-up's refusal to serve from less data than there
// was. Error names the files (and offsets) involved and the `keeper tool`
// commands that inspect and repair them. errors.Is matches ErrUnaccounted,
// and the damage found (a *txnlog.RecordError, snap.ErrDigestMismatch...)
// when there is one.
type UnaccountedError struct {
	// Reason says what is missing or damaged, naming files.
	Reason string
	// DataDir and DataLogDir are the directories (not version-2).
	DataDir, DataLogDir string
	// Err is the damage found, or nil.
	Err error
}

func (e *UnaccountedError) Error() string {
	recoverCmd := "keeper tool recover " + e.DataDir
	if e.DataLogDir != e.DataDir {
		recoverCmd += " --txnlog " + e.DataLogDir
	}
	return fmt.Sprintf("server: refusing to start with less data than there was: %s; "+
		"`%s` shows what can be kept and with --yes sets the rest aside "+
		"(see also `keeper tool snapshot verify %s` and `keeper tool txnlog verify %s`); "+
		"snapshot.trust.empty=true starts with an empty tree instead (docs/storage-recovery.md)",
		e.Reason, recoverCmd, e.DataDir, e.DataLogDir)
}

// Unwrap returns ErrUnaccounted and the damage found.
func (e *UnaccountedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrUnaccounted}
	}
	return []error{ErrUnaccounted, e.Err}
}

// gapError is a log that does not follow on from the state before it.
type gapError struct {
	last, next zxid.ID
	file       string
	offset     int64
}

func (e *gapError) Error() string {
	return fmt.Sprintf("txns missing from the log: %s follows %s (%s at offset %d)", e.next, e.last, e.file, e.offset)
}

// errLogShort is a log that ends before the zxid of the loaded snapshot's
// digest record.
var errLogShort = errors.New("txns are missing")

// firstTxn reports whether z is the first txn a service can log: zxid 1
// standalone, or the first of epoch 1, the first epoch an ensemble
// establishes. A log that begins there needs no snapshot.
func firstTxn(z zxid.ID) bool { return z == zxid.Make(0, 1) || z == zxid.Make(1, 1) }

// dataFiles is what start-up finds in the data directories.
type dataFiles struct {
	dataDir, dataLogDir string
	// newest is the newest valid snapshot, or nil; skipped are the newer
	// ones that could not be used, newest first.
	newest  *snap.Snapshot
	skipped []snap.Skipped
	logs    []txnlog.File // oldest first
	epochs  []string      // the epoch files present
}

// survey reads the newest valid snapshot and lists the rest.
func survey(cfg *StorageConfig, maxRecord int) (*dataFiles, error) {
	d := &dataFiles{dataDir: cfg.DataDir, dataLogDir: cfg.logDir()}
	var err error
	if d.newest, d.skipped, err = snap.NewestValid(cfg.FS, cfg.snapDir(), maxRecord); err != nil {
		return nil, err
	}
	if d.logs, err = txnlog.Files(cfg.FS, cfg.logDir()); err != nil {
		return nil, err
	}
	if d.epochs, err = epochFiles(cfg); err != nil {
		return nil, err
	}
	return d, nil
}

// epochFiles returns the paths of the epoch files present.
func epochFiles(cfg *StorageConfig) ([]string, error) {
	var out []string
	for _, name := range []string{acceptedEpochFile, currentEpochFile} {
		path := filepath.Join(cfg.snapDir(), name)
		if _, err := cfg.FS.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, path)
	}
	return out, nil
}

// fresh reports a directory with no snapshot, log or epoch file.
func (d *dataFiles) fresh() bool {
	return d.newest == nil && len(d.skipped) == 0 && len(d.logs) == 0 && len(d.epochs) == 0
}

// emptyTreeUnaccounted says why the empty tree cannot stand in for a
// missing snapshot, or returns "" when it can: the directory is fresh, the
// log begins at the first txn of the service, or with no log at all the
// only snapshot that counts is a snapshot.0 (it holds no txn, damaged or
// not; newer damaged ones are checked after the replay).
func (d *dataFiles) emptyTreeUnaccounted() string {
	if len(d.logs) > 0 {
		if firstTxn(d.logs[0].Start) {
			return ""
		}
		return fmt.Sprintf("%s and the log begins at zxid %s in %s, not at the first txn of the service: the txns before it are missing",
			d.noSnapshot(), d.logs[0].Start, d.logs[0].Path)
	}
	if d.fresh() {
		return ""
	}
	for _, sk := range d.skipped {
		if sk.Info.Zxid == 0 {
			return ""
		}
	}
	if len(d.skipped) > 0 {
		return fmt.Sprintf("%s and no log: the txns up to %s are missing", d.noSnapshot(), d.skipped[0].Info.Zxid)
	}
	return fmt.Sprintf("%s and no log, but %s show that this server took part in an ensemble: the txns it logged are missing",
		d.noSnapshot(), strings.Join(d.epochs, " and "))
}

// noSnapshot describes the lack of a usable snapshot.
func (d *dataFiles) noSnapshot() string {
	if len(d.skipped) == 0 {
		return "no snapshot in " + filepath.Join(d.dataDir, txnlog.DirName)
	}
	return "no usable snapshot (" + d.skippedText() + ")"
}

func (d *dataFiles) skippedText() string {
	var parts []string
	for _, sk := range d.skipped {
		parts = append(parts, fmt.Sprintf("%s: %v", filepath.Join(d.dataDir, txnlog.DirName, sk.Info.Name), sk.Err))
	}
	return strings.Join(parts, "; ")
}

// tailUnaccounted says why a replay that reached zxid reached is short of
// the newest snapshot that could not be used, or returns "" when it is not.
// lastFile is the log file the replay ended in, "" if it applied nothing.
func (d *dataFiles) tailUnaccounted(reached zxid.ID, lastFile string) string {
	if len(d.skipped) == 0 || d.skipped[0].Info.Zxid <= reached {
		return ""
	}
	base := "the empty tree"
	if d.newest != nil {
		base = "the snapshot " + filepath.Join(d.dataDir, txnlog.DirName, d.newest.Name)
	}
	log := "no log after it"
	if lastFile != "" {
		log = "the log after it, which ends in " + lastFile
	}
	return fmt.Sprintf("the newest snapshots cannot be used (%s), and %s with %s reaches only zxid %s: the txns up to %s are missing",
		d.skippedText(), base, log, reached, d.skipped[0].Info.Zxid)
}

func (d *dataFiles) unaccounted(reason string, err error) *UnaccountedError {
	return &UnaccountedError{Reason: reason, DataDir: d.dataDir, DataLogDir: d.dataLogDir, Err: err}
}

// damaged turns damage the replay met into an *UnaccountedError; other
// errors (a file that cannot be read) are returned as they are.
func (d *dataFiles) damaged(err error) error {
	var rec *txnlog.RecordError
	var gap *gapError
	if errors.As(err, &rec) || errors.As(err, &gap) || errors.Is(err, snap.ErrDigestMismatch) || errors.Is(err, errLogShort) {
		return d.unaccounted(strings.TrimPrefix(err.Error(), "server: "), err)
	}
	return err
}

// startEmpty replaces what restore loaded with the empty tree, after
// setting every snapshot and log file aside (TrustEmptySnapshot).
func startEmpty(cfg *StorageConfig, core *zkcore.Server, now zkcore.Now, logger *slog.Logger,
	why *UnaccountedError, recent *recentTail) error {
	plan, err := setAsideEverything(cfg)
	if err != nil {
		return err
	}
	dirs, err := plan.applyUnique(cfg.FS, SetAsideName(time.UnixMilli(now.WallMs)))
	if err != nil {
		return fmt.Errorf("server: snapshot.trust.empty: setting the data aside: %w", err)
	}
	logger.Error("starting with an empty tree: snapshot.trust.empty is set and the data cannot be accounted for",
		"reason", why.Reason, "set_aside", dirs)
	core.Restore(datatree.New(), nil, now)
	if recent != nil {
		recent.entries = nil
	}
	return nil
}

// writeFirstSnapshot writes the snapshot of the state just loaded (the
// empty tree, at zxid 0) into a directory that has no data, as Apache
// ZooKeeper writes snapshot.0: from then on the directory holds a snapshot
// that accounts for its log and epoch files.
func writeFirstSnapshot(cfg *StorageConfig, core *zkcore.Server, logger *slog.Logger) error {
	tree := core.Tree()
	z := core.LastZxid()
	var sessions []snap.SessionEntry
	for _, s := range core.SnapshotSessions() {
		sessions = append(sessions, snap.SessionEntry{ID: s.ID, TimeoutMs: s.TimeoutMs})
	}
	d := &snap.Digest{Zxid: z, Version: datatree.DigestVersion, TreeDigest: tree.Digest()}
	name, err := snap.Write(cfg.FS, cfg.snapDir(), z, sessions, tree, d, snap.Options{})
	if err != nil {
		return fmt.Errorf("server: the first snapshot: %w", err)
	}
	logger.Info("wrote the first snapshot", "file", name)
	return nil
}
