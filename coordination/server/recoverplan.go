package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// RecoveryPlan is how `keeper tool recover` makes a data directory that
// start-up refuses usable again, once an operator accepts losing what it
// cannot account for (docs/storage-recovery.md). It keeps the newest state
// the files do account for: a valid snapshot (or the empty tree, where
// that stands for a missing snapshot) and the log that follows it without
// a gap or damage. Every file that holds more is set aside, never deleted:
// the snapshots newer than that state, the log files after it, and a copy
// of the log file it ends in, which is then cut where the first record not
// kept starts. Start-up then loads exactly the state kept.
type RecoveryPlan struct {
	// DataDir and DataLogDir are the directories (not version-2).
	DataDir, DataLogDir string
	// Base is the snapshot file the state kept starts from, "" for the
	// empty tree; BaseZxid is its zxid.
	Base     string
	BaseZxid zxid.ID
	// Kept is the last zxid of the state kept.
	Kept zxid.ID
	// Stop says why the state kept ends at Kept (the damage or the gap the
	// log walk met, or why nothing can be kept), or is "" when the log
	// ends there cleanly.
	Stop string
	// Unusable are the snapshots newer than Base, newest first, and why
	// each cannot be used; they are set aside.
	Unusable []snap.Skipped
	// SetAsideLogs are the log files that hold nothing kept, oldest first.
	SetAsideLogs []string
	// CutLog, when not "", is the log file the state kept ends in: it is
	// copied aside whole, then cut at CutOffset, where the first record
	// not kept starts.
	CutLog    string
	CutOffset int64
	// Named is the highest zxid the file names show (snapshots, the start
	// of the last log file): the directory held at least this much.
	Named zxid.ID
	// Epochs are the epoch files present: the directory is an ensemble
	// member's. They stay where they are.
	Epochs []string
	// NoBase is set when nothing can be kept: no snapshot is usable and
	// the log does not begin at the first txn of the service. Every
	// snapshot and log file is set aside.
	NoBase bool
}

// PlanRecovery works out a RecoveryPlan for the data in dataDir and
// dataLogDir ("" means dataDir), reading records of at most maxRecordBytes.
// It changes nothing. It replays the log onto each candidate snapshot, as
// start-up does, to check a fuzzy snapshot's digest.
func PlanRecovery(fsys vfs.FS, dataDir, dataLogDir string, maxRecordBytes int) (*RecoveryPlan, error) {
	cfg := &StorageConfig{FS: fsys, DataDir: dataDir, DataLogDir: dataLogDir}
	p := &RecoveryPlan{DataDir: dataDir, DataLogDir: cfg.logDir()}
	snapDir := cfg.snapDir()
	infos, err := snap.List(fsys, snapDir)
	if err != nil {
		return nil, err
	}
	logs, err := txnlog.Files(fsys, p.DataLogDir)
	if err != nil {
		return nil, err
	}
	if p.Epochs, err = epochFiles(cfg); err != nil {
		return nil, err
	}
	if len(infos) > 0 {
		p.Named = infos[0].Zxid
	}
	if n := len(logs); n > 0 {
		p.Named = max(p.Named, logs[n-1].Start)
	}
	lcfg := txnlog.Config{MaxRecordBytes: maxRecordBytes}
	for _, info := range infos {
		sn, err := snap.ReadValid(fsys, snapDir, info, maxRecordBytes)
		if err != nil {
			p.Unusable = append(p.Unusable, snap.Skipped{Info: info, Err: err})
			continue
		}
		var digest *snap.Digest
		if sn.Digest != nil && !sn.DigestChecked && sn.Digest.Zxid > sn.Zxid {
			digest = sn.Digest
		}
		sn.Tree.SetLastZxid(sn.Zxid)
		w, err := walkLog(fsys, p.DataLogDir, lcfg, sn.Tree, digest)
		if err != nil {
			return nil, err
		}
		if w.digestErr != nil {
			p.Unusable = append(p.Unusable, snap.Skipped{Info: info, Err: w.digestErr})
			continue
		}
		p.Base, p.BaseZxid = info.Name, info.Zxid
		p.finish(w, logs)
		return p, nil
	}
	d := &dataFiles{dataDir: dataDir, dataLogDir: p.DataLogDir, skipped: p.Unusable, logs: logs, epochs: p.Epochs}
	if reason := d.emptyTreeUnaccounted(); reason != "" {
		p.NoBase, p.Stop = true, reason
		for _, f := range logs {
			p.SetAsideLogs = append(p.SetAsideLogs, f.Path)
		}
		return p, nil
	}
	w, err := walkLog(fsys, p.DataLogDir, lcfg, datatree.New(), nil)
	if err != nil {
		return nil, err
	}
	p.finish(w, logs)
	return p, nil
}

// finish records where the walk stopped and which log files that sets
// aside: the one it stopped in is cut (or set aside whole when nothing in
// it is kept), and every later one goes.
func (p *RecoveryPlan) finish(w logWalk, logs []txnlog.File) {
	p.Kept, p.Stop = w.last, w.stop
	if w.cutFile == "" {
		return
	}
	from := len(logs)
	for i, f := range logs {
		if f.Path == w.cutFile {
			from = i + 1
			if w.cutOffset <= txnlog.FileHeaderBytes {
				from = i
			} else {
				p.CutLog, p.CutOffset = w.cutFile, w.cutOffset
			}
			break
		}
	}
	for _, f := range logs[from:] {
		p.SetAsideLogs = append(p.SetAsideLogs, f.Path)
	}
}

// Empty reports whether the plan sets nothing aside.
func (p *RecoveryPlan) Empty() bool {
	return len(p.Unusable) == 0 && len(p.SetAsideLogs) == 0 && p.CutLog == ""
}

// logWalk is where a walk of the log from a base state stopped.
type logWalk struct {
	last zxid.ID // the last zxid applied
	// stop says what ended the walk before the end of the log; cutFile
	// and cutOffset are where the first record not applied starts. A torn
	// tail ends the walk as the end does: start-up cuts it off.
	stop      string
	cutFile   string
	cutOffset int64
	// digestErr says the base's digest record does not match the tree
	// replayed to its zxid and no later txn's digest matched it either
	// (digestCheck), or the walk ended before that zxid.
	digestErr error
}

// walkLog applies the log after tree's last zxid onto tree until the end,
// damage or a gap, checking digest (if not nil) as digestCheck does.
// Errors are those of reading the files, not damage.
func walkLog(fsys vfs.FS, logDir string, lcfg txnlog.Config, tree *datatree.Tree, digest *snap.Digest) (logWalk, error) {
	w := logWalk{last: tree.LastZxid()}
	check := newDigestCheck(digest)
	it, err := txnlog.Read(fsys, logDir, w.last+1, lcfg)
	if err != nil {
		return w, err
	}
	defer it.Close()
walk:
	for {
		t, err := it.Next()
		var rec *txnlog.RecordError
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, txnlog.ErrTorn):
			break walk
		case errors.As(err, &rec):
			w.stop, w.cutFile, w.cutOffset = rec.Error(), rec.File, rec.Offset
			break walk
		case err != nil:
			return w, err
		}
		z := t.Header.Zxid
		if z <= w.last {
			continue
		}
		if !follows(w.last, z) {
			path, off := it.Position()
			gap := &gapError{last: w.last, next: z, file: path, offset: off}
			w.stop, w.cutFile, w.cutOffset = gap.Error(), path, off
			break walk
		}
		tree.Apply(t)
		w.last = z
		file, _ := it.Position()
		check.applied(t, tree, file)
	}
	switch {
	case check.waiting():
		w.digestErr = fmt.Errorf("its digest record was taken at %s, after the end of the log it can use (%s): %w",
			digest.Zxid, w.last, errLogShort)
	case check.err() != nil:
		w.digestErr = check.err()
	}
	return w, nil
}

// Apply carries the plan out: it creates the directory name in DataDir
// (and in DataLogDir, for log files, when that differs), which must not
// exist yet, and moves there the files the plan sets aside, after copying
// the log file it cuts. It returns the directories it created. Each step
// is synced before the next, and a crash part way leaves a directory
// start-up still refuses, or one it accepts: run PlanRecovery again.
// Run it only while no server uses the directories.
func (p *RecoveryPlan) Apply(fsys vfs.FS, name string) ([]string, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." || name == txnlog.DirName {
		return nil, fmt.Errorf("server: %q cannot name a directory next to %s", name, txnlog.DirName)
	}
	if p.Empty() {
		return nil, nil
	}
	snapAside, logAside := filepath.Join(p.DataDir, name), filepath.Join(p.DataLogDir, name)
	var dirs []string
	for _, dir := range []string{snapAside, logAside} {
		if len(dirs) > 0 && dirs[0] == dir {
			continue
		}
		if _, err := fsys.Stat(dir); err == nil {
			return nil, fmt.Errorf("server: %s already exists", dir)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if err := vfs.MkdirAllSync(fsys, dir, 0o755); err != nil {
			return nil, fmt.Errorf("server: create %s: %w", dir, err)
		}
		dirs = append(dirs, dir)
	}
	if p.CutLog != "" {
		if err := copyFile(fsys, p.CutLog, filepath.Join(logAside, filepath.Base(p.CutLog))); err != nil {
			return dirs, err
		}
	}
	logDir := filepath.Join(p.DataLogDir, txnlog.DirName)
	var logPaths []string
	for i := len(p.SetAsideLogs) - 1; i >= 0; i-- { // newest first: what is left stays a prefix
		logPaths = append(logPaths, p.SetAsideLogs[i])
	}
	if err := moveFiles(fsys, logPaths, logDir, logAside); err != nil {
		return dirs, err
	}
	if p.CutLog != "" {
		if err := cutFile(fsys, p.CutLog, p.CutOffset); err != nil {
			return dirs, err
		}
	}
	snapDir := filepath.Join(p.DataDir, txnlog.DirName)
	var snapPaths []string
	for _, sk := range p.Unusable {
		snapPaths = append(snapPaths, filepath.Join(snapDir, sk.Info.Name))
	}
	return dirs, moveFiles(fsys, snapPaths, snapDir, snapAside)
}

// applyUnique applies the plan into the first of name, name-2, name-3...
// that exists in neither directory.
func (p *RecoveryPlan) applyUnique(fsys vfs.FS, name string) ([]string, error) {
	for i := 1; i <= 100; i++ {
		try := name
		if i > 1 {
			try = name + "-" + strconv.Itoa(i)
		}
		if exists(fsys, filepath.Join(p.DataDir, try)) || exists(fsys, filepath.Join(p.DataLogDir, try)) {
			continue
		}
		return p.Apply(fsys, try)
	}
	return nil, fmt.Errorf("server: no free directory name like %s in %s", name, p.DataDir)
}

func exists(fsys vfs.FS, path string) bool {
	_, err := fsys.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// setAsideEverything is the plan that sets every snapshot and log file
// aside (snapshot.trust.empty).
func setAsideEverything(cfg *StorageConfig) (*RecoveryPlan, error) {
	p := &RecoveryPlan{DataDir: cfg.DataDir, DataLogDir: cfg.logDir(), NoBase: true}
	infos, err := snap.List(cfg.FS, cfg.snapDir())
	if err != nil {
		return nil, err
	}
	for _, info := range infos {
		p.Unusable = append(p.Unusable, snap.Skipped{Info: info})
	}
	logs, err := txnlog.Files(cfg.FS, cfg.logDir())
	if err != nil {
		return nil, err
	}
	for _, f := range logs {
		p.SetAsideLogs = append(p.SetAsideLogs, f.Path)
	}
	return p, nil
}

// SetAsideName is the default name of the directory a recovery sets files
// aside into: set-aside-<UTC time of t>.
func SetAsideName(t time.Time) string { return "set-aside-" + t.UTC().Format("20060102T150405Z") }

// moveFiles renames each path (in from) into the directory to, then syncs
// both directories.
func moveFiles(fsys vfs.FS, paths []string, from, to string) error {
	if len(paths) == 0 {
		return nil
	}
	for _, path := range paths {
		dst := filepath.Join(to, filepath.Base(path))
		if err := fsys.Rename(path, dst); err != nil {
			return fmt.Errorf("server: move %s to %s: %w", path, dst, err)
		}
	}
	if err := fsys.SyncDir(to); err != nil {
		return err
	}
	return fsys.SyncDir(from)
}

// copyFile copies src to the new file dst and syncs it and its directory.
func copyFile(fsys vfs.FS, src, dst string) error {
	in, err := fsys.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fsys.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("server: copy %s to %s: %w", src, dst, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("server: sync %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(dst))
}

// cutFile truncates the file at path to size bytes and syncs it.
func cutFile(fsys vfs.FS, path string, size int64) error {
	f, err := fsys.OpenReadWrite(path)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("server: cut %s at %d: %w", path, size, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("server: sync %s: %w", path, err)
	}
	return f.Close()
}
