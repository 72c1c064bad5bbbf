package server

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// ErrNoStateAtTruncation means a TRUNC asked for a state the disk cannot
// give: no valid snapshot at or below the zxid is followed by the log up
// to it. The member must leave the service (peer.Fail) rather than serve a
// state that is not the leader's; an operator can wipe its data directory
// so that it rejoins with a full snapshot (SNAP).
var ErrNoStateAtTruncation = errors.New("server: no snapshot and log give the state at the truncation point")

// Truncate carries out Zab's TRUNC: it leaves the disk so that Reload
// rebuilds the state at exactly z. Snapshots above z go first, then the
// log is cut after z (truncatePlan says why, and when the disk cannot give
// z: ErrNoStateAtTruncation, with nothing changed).
func (l *MemberLog) Truncate(z zxid.ID) error {
	l.purgeMu.Lock()
	defer l.purgeMu.Unlock()
	if err := l.log.Sync(); err != nil {
		return err
	}
	remove, err := truncatePlan(l.storage, z, l.maxRecord)
	if err != nil {
		return err
	}
	if len(remove) > 0 {
		l.logger.Warn("removing snapshots above the truncation point", "zxid", z, "snapshots", len(remove))
	}
	if err := removeSnapshots(l.storage.FS, l.storage.snapDir(), remove); err != nil {
		return err
	}
	return l.log.Truncate(z)
}

// truncatePlan works out how a TRUNC to z can leave the disk so that a
// reload rebuilds the state at exactly z, and returns the snapshots that
// must go for that. A snapshot taken above z holds txns the leader does
// not have (a sync from a leader that never got a quorum, or a learner's
// own log replayed at start-up), and so does a fuzzy snapshot whose
// digest was taken above z (its tree may hold effects of txns up to
// there): with them gone, start-up picks the newest valid snapshot at or
// below z and replays the log after it. Before anything is removed, the
// plan checks that this snapshot (or the empty tree) and the log reach z
// without a gap; if not, it returns ErrNoStateAtTruncation and nothing
// changes, since a disk cut half way would leave this member with its
// currentEpoch over a log that lacks txns it acknowledged.
//
// It reads the base snapshot and the log from it to z in full, as the
// reload that follows does again.
func truncatePlan(cfg *StorageConfig, z zxid.ID, maxRecord int) ([]snap.Info, error) {
	fs, dir := cfg.FS, cfg.snapDir()
	infos, err := snap.List(fs, dir)
	if err != nil {
		return nil, err
	}
	var remove []snap.Info
	base := zxid.ID(0) // the empty tree, with no usable snapshot
	for _, info := range infos {
		if info.Zxid > z {
			remove = append(remove, info)
			continue
		}
		s, err := snap.ReadValid(fs, dir, info, maxRecord)
		if err != nil {
			continue // start-up skips it too
		}
		if s.Digest != nil && s.Digest.Zxid > z {
			remove = append(remove, info)
			continue
		}
		base = info.Zxid
		break
	}
	last, err := logReaches(fs, cfg.logDir(), base, z, txnlogConfig(cfg, maxRecord, nil))
	if err != nil {
		return nil, err
	}
	if last != z {
		return nil, fmt.Errorf("%w: the newest usable snapshot at or below %s is at %s and the log after it ends at %s",
			ErrNoStateAtTruncation, z, base, last)
	}
	return remove, nil
}

// logReaches replays the zxids of the log after base, up to z, and returns
// the last one that follows without a gap.
func logReaches(fs vfs.FS, logDir string, base, z zxid.ID, lcfg txnlog.Config) (zxid.ID, error) {
	last := base
	if base == z {
		return last, nil
	}
	it, err := txnlog.Read(fs, logDir, base+1, lcfg)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	for last < z {
		t, err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("server: reading the log to truncate it to %s: %w", z, err)
		}
		next := t.Header.Zxid
		switch {
		case next <= last:
			continue
		case next > z || !follows(last, next):
			return last, nil
		}
		last = next
	}
	return last, nil
}

// removeSnapshots removes snapshot files, newest first, and syncs the
// directory: a crash part way leaves the older ones, a state start-up can
// use.
func removeSnapshots(fs vfs.FS, dir string, infos []snap.Info) error {
	if len(infos) == 0 {
		return nil
	}
	for _, info := range infos {
		path := filepath.Join(dir, info.Name)
		if err := fs.Remove(path); err != nil {
			return fmt.Errorf("server: remove snapshot %s: %w", path, err)
		}
	}
	return fs.SyncDir(dir)
}

// removeSnapshotsAbove removes every snapshot whose zxid is above z.
func (l *MemberLog) removeSnapshotsAbove(z zxid.ID) error {
	infos, err := snap.List(l.storage.FS, l.storage.snapDir())
	if err != nil {
		return err
	}
	k := 0
	for k < len(infos) && infos[k].Zxid > z {
		k++
	}
	return removeSnapshots(l.storage.FS, l.storage.snapDir(), infos[:k])
}

// truncateFloor is zab's Config.TruncateFloor for the data on disk: the
// zxid of the newest snapshot. Below it the state may need txns the log
// does not hold (a snapshot installed from a leader replaced the history
// under it), so a TRUNC there asks the leader for a snapshot instead.
// Older snapshots often make a deeper TRUNC possible (truncatePlan), but
// a snapshot costs only time, and a refused TRUNC would stop the member.
func truncateFloor(cfg *StorageConfig) (zxid.ID, error) {
	infos, err := snap.List(cfg.FS, cfg.snapDir())
	if err != nil || len(infos) == 0 {
		return 0, err
	}
	return infos[0].Zxid, nil
}
