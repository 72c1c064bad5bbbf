package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/internal/vfs"
)

// MinSnapRetainCount is the fewest snapshots a purge keeps, as in Apache
// ZooKeeper: with fewer, one damaged snapshot could leave nothing to
// recover from.
const MinSnapRetainCount = 3

// PurgeResult lists the files one purge removed, as paths, oldest first.
type PurgeResult struct {
	Snapshots []string // snapshot files removed
	Logs      []string // log files removed
}

// Purge removes old snapshots from dataDir/version-2 and old log files
// from dataLogDir/version-2, as Apache ZooKeeper's PurgeTxnLog does: it
// keeps the newest retain snapshots that are valid, and every log file a
// restore from the oldest of them reads (snap.PurgePlan). Invalid
// snapshots older than that one go too; newer ones are left for an
// operator to look at. The newest log file is never removed, nor is
// anything when there is no valid snapshot.
//
// valid decides whether a snapshot can be restored from; nil means
// snap.QuickCheck followed by a full snap.Read bounded by maxRecordBytes
// (0 means the txnlog default). Files are removed oldest first and the
// directories synced after, so a crash part way leaves the newest files.
// Purge must not run while another purge runs on the same directories; it
// may run while a server writes new snapshots and appends to the log.
func Purge(fs vfs.FS, dataDir, dataLogDir string, retain, maxRecordBytes int, valid func(snap.Info) error) (PurgeResult, error) {
	pass, err := planPurge(fs, dataDir, dataLogDir, retain, maxRecordBytes, valid)
	if err != nil {
		return PurgeResult{}, err
	}
	for pass.step() {
	}
	return pass.finish()
}

// purgePass is one purge in the steps its goroutine takes: the plan
// (planPurge: which files go, decided from the directories' listing),
// then one removal per step, then the directories synced (finish). Files
// created after the plan are not looked at, and a file the plan named is
// removed by name whatever it holds by then: whoever else removes or
// replaces snapshots and logs must not run between the plan and finish
// (autopurge holds Server.storageMu for the whole pass).
type purgePass struct {
	fs              vfs.FS
	snapDir, logDir string
	snaps, logs     []string // names still to remove, oldest first
	res             PurgeResult
	err             error // the removal that failed; no step follows it
}

// planPurge lists the directories and decides what a purge removes
// (Purge says what it keeps); nothing is removed yet.
func planPurge(fs vfs.FS, dataDir, dataLogDir string, retain, maxRecordBytes int, valid func(snap.Info) error) (*purgePass, error) {
	if dataLogDir == "" {
		dataLogDir = dataDir
	}
	if maxRecordBytes <= 0 {
		maxRecordBytes = txnlog.DefaultMaxRecordBytes
	}
	snapDir := filepath.Join(dataDir, txnlog.DirName)
	if valid == nil {
		valid = func(info snap.Info) error { return checkSnapshot(fs, snapDir, info, maxRecordBytes) }
	}
	infos, err := snap.List(fs, snapDir)
	if err != nil {
		return nil, err
	}
	files, err := txnlog.Files(fs, dataLogDir)
	if err != nil {
		return nil, err
	}
	removeSnaps, removeLogs := purgePlan(infos, files, max(retain, 1), valid)
	return &purgePass{fs: fs, snapDir: snapDir, logDir: filepath.Join(dataLogDir, txnlog.DirName),
		snaps: removeSnaps, logs: removeLogs}, nil
}

// step removes the next file the plan named, snapshots first. It reports
// false when none is left or a removal failed (finish returns the error).
func (p *purgePass) step() bool {
	if p.err != nil {
		return false
	}
	var dir, name string
	var done *[]string
	switch {
	case len(p.snaps) > 0:
		dir, name, done = p.snapDir, p.snaps[0], &p.res.Snapshots
		p.snaps = p.snaps[1:]
	case len(p.logs) > 0:
		dir, name, done = p.logDir, p.logs[0], &p.res.Logs
		p.logs = p.logs[1:]
	default:
		return false
	}
	path := filepath.Join(dir, name)
	if err := p.fs.Remove(path); err != nil {
		p.err = fmt.Errorf("server: purge %s: %w", path, err)
		return false
	}
	*done = append(*done, path)
	return true
}

// finish ends the pass: after a failed removal it returns the error and
// what was removed before it; otherwise it syncs the directories the
// removals touched.
func (p *purgePass) finish() (PurgeResult, error) {
	if p.err != nil {
		return p.res, p.err
	}
	return p.res, syncDirs(p.fs, p.res, p.snapDir, p.logDir)
}

// purgePlan picks what to remove: snap.PurgePlan over the valid snapshots
// (newest first, stopping once retain are found), plus the invalid
// snapshots older than the oldest one kept.
func purgePlan(infos []snap.Info, files []txnlog.File, retain int, valid func(snap.Info) error) (removeSnaps, removeLogs []string) {
	var kept []snap.Info
	for _, info := range infos { // newest first
		if len(kept) == retain {
			break
		}
		if valid(info) == nil {
			kept = append(kept, info)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	oldestKept := kept[len(kept)-1].Zxid
	// Every snapshot older than the oldest kept one goes, valid or not;
	// PurgePlan sees the kept ones and those. Invalid snapshots newer than
	// it stay, for an operator to look at.
	var candidates []snap.Info
	for _, info := range infos {
		if info.Zxid >= oldestKept && !slices.Contains(kept, info) {
			continue
		}
		candidates = append(candidates, info)
	}
	logs := make([]snap.LogFile, len(files))
	for i, f := range files {
		logs[i] = snap.LogFile{Name: f.Name(), StartZxid: f.Start}
	}
	removeSnaps, removeLogs = snap.PurgePlan(candidates, logs, len(kept))
	if len(files) > 0 {
		// PurgePlan keeps the log holding the txns after the oldest kept
		// snapshot and every later one; this is a belt on top of that.
		removeLogs = slices.DeleteFunc(removeLogs, func(n string) bool { return n == files[len(files)-1].Name() })
	}
	return removeSnaps, removeLogs
}

// checkSnapshot is Purge's default validity test.
func checkSnapshot(fs vfs.FS, dir string, info snap.Info, maxRecordBytes int) error {
	_, err := snap.ReadValid(fs, dir, info, maxRecordBytes)
	return err
}

// syncDirs makes the removals durable in the directories they touched.
func syncDirs(fs vfs.FS, res PurgeResult, snapDir, logDir string) error {
	var errs []error
	if len(res.Snapshots) > 0 {
		errs = append(errs, fs.SyncDir(snapDir))
	}
	if len(res.Logs) > 0 && (logDir != snapDir || len(res.Snapshots) == 0) {
		errs = append(errs, fs.SyncDir(logDir))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("server: purge: %w", err)
	}
	return nil
}

// purger runs autopurge (autopurge.purgeInterval) for a server. It
// remembers which snapshots it has fully read, so that each is read once.
type purger struct {
	fs                  vfs.FS
	dataDir, dataLogDir string
	retain              int
	maxRecordBytes      int
	verified            map[string]int64 // snapshot name -> size when it was read
	s                   *Server
}

// startPurge starts autopurge when the server keeps its data on disk and
// Storage.PurgeInterval is positive. The purge goroutine stops when ctx
// ends; Close waits for it through s.wg.
func (s *Server) startPurge(ctx context.Context) {
	st := &s.cfg.Storage
	if !st.enabled() || st.PurgeInterval <= 0 {
		return
	}
	p := s.newPurger()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		p.run(ctx, st.PurgeInterval)
	}()
}

// newPurger returns the purger of the server's storage.
func (s *Server) newPurger() *purger {
	st := &s.cfg.Storage
	return &purger{
		fs:             st.FS,
		dataDir:        st.DataDir,
		dataLogDir:     st.logDir(),
		retain:         max(st.SnapRetainCount, MinSnapRetainCount),
		maxRecordBytes: s.cfg.Core.MaxBuffer + 1024,
		verified:       make(map[string]int64),
		s:              s,
	}
}

// run purges once at once, as ZooKeeper's cleanup task does, and then
// every interval until ctx ends.
func (p *purger) run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		p.once()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// once runs one purge, logs what it did and returns it: the steps of a
// purgeRun, one after the other.
func (p *purger) once() PurgeResult {
	r := p.begin()
	for r.step() {
	}
	return r.end()
}

// purgeRun is one autopurge pass in its steps (purgePass), with
// Server.storageMu held from begin to end: a learner's TRUNC or snapshot
// install (MemberLog.Truncate, InstallSnapshot) waits for the whole pass,
// and a pass waits for them. The persister goroutine runs no such batch
// between the plan and the last removal, which would otherwise remove by
// name what the batch left as the newest state (a snapshot it truncates
// back to, a log file it starts anew). A Member's driver takes the steps
// as events (Member.BeginPurge, StepPurge, EndPurge).
type purgeRun struct {
	p    *purger
	pass *purgePass // nil when the plan failed
	err  error      // the plan's error
}

// begin takes Server.storageMu and plans the pass.
func (p *purger) begin() *purgeRun {
	p.s.storageMu.Lock()
	snapDir := filepath.Join(p.dataDir, txnlog.DirName)
	pass, err := planPurge(p.fs, p.dataDir, p.dataLogDir, p.retain, p.maxRecordBytes, func(info snap.Info) error {
		if size, ok := p.verified[info.Name]; ok && size == info.Size {
			return nil
		}
		if err := checkSnapshot(p.fs, snapDir, info, p.maxRecordBytes); err != nil {
			return err
		}
		p.verified[info.Name] = info.Size
		return nil
	})
	return &purgeRun{p: p, pass: pass, err: err}
}

// step removes the next file; it reports false when the pass has nothing
// left to remove.
func (r *purgeRun) step() bool { return r.pass != nil && r.pass.step() }

// end syncs the directories, releases Server.storageMu, logs what the
// pass did and returns it.
func (r *purgeRun) end() PurgeResult {
	p := r.p
	defer p.s.storageMu.Unlock()
	var res PurgeResult
	err := r.err
	if r.pass != nil {
		res, err = r.pass.finish()
	}
	for _, path := range res.Snapshots {
		delete(p.verified, filepath.Base(path))
	}
	if err != nil {
		p.s.log.Warn("autopurge failed", "err", err)
		return res
	}
	if len(res.Snapshots)+len(res.Logs) > 0 {
		p.s.log.Info("autopurge removed old files", "snapshots", res.Snapshots, "logs", res.Logs,
			"retain", p.retain)
	}
	return res
}
