package entrystore

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"keeper/internal/vfs"
)

// loadLogs finds every directory's entry logs, learns their ledgers maps
// (scanning the logs that have none), repairs each directory's newest log,
// and sets the next log id.
func (s *Store) loadLogs() error {
	next := int64(0)
	for dir := range s.cfg.Dirs {
		ids, lastID, err := s.listDir(dir)
		if err != nil {
			return err
		}
		next = max(next, lastID+1)
		for i, id := range ids {
			if other, dup := s.logs[id]; dup {
				return fmt.Errorf("%w: entry log %x is in both %s and %s",
					ErrCorrupt, id, s.cfg.Dirs[other.dir], s.cfg.Dirs[dir])
			}
			if err := s.loadLog(dir, id, i == len(ids)-1); err != nil {
				return err
			}
			next = max(next, id+1)
		}
	}
	s.nextLogID = next
	return nil
}

// listDir returns the ids of dir's entry logs, sorted, and the id in its
// lastId file (-1 if none). It creates the directory if needed and removes
// a lastId.tmp left by a crash.
func (s *Store) listDir(dir int) ([]int64, int64, error) {
	cur := s.currentDir(dir)
	fsys := s.cfg.FS
	if err := vfs.MkdirAllSync(fsys, cur, 0o755); err != nil {
		return nil, 0, fmt.Errorf("entrystore: create %s: %w", cur, err)
	}
	names, err := fsys.List(cur)
	if err != nil {
		return nil, 0, fmt.Errorf("entrystore: list %s: %w", cur, err)
	}
	var ids []int64
	lastID := int64(-1)
	for _, name := range names {
		switch {
		case name == lastIDFile:
			if lastID, err = readLastID(fsys, filepath.Join(cur, name)); err != nil {
				return nil, 0, err
			}
		case name == lastIDFile+".tmp":
			if err := fsys.Remove(filepath.Join(cur, name)); err != nil {
				return nil, 0, fmt.Errorf("entrystore: remove %s/%s: %w", cur, name, err)
			}
		case strings.HasSuffix(name, ".log"):
			id, err := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 16, 64)
			if err != nil || id < 0 || logFileName(id) != name {
				s.cfg.Logger.Warn("ignoring file with an entry log suffix", "dir", cur, "name", name)
				continue
			}
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, lastID, nil
}

// readLastID parses a lastId file: the id in hex and a newline.
func readLastID(fsys vfs.FS, path string) (int64, error) {
	b, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return 0, fmt.Errorf("entrystore: read %s: %w", path, err)
	}
	id, err := strconv.ParseInt(strings.TrimSpace(string(b)), 16, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("%w: %s holds %q", ErrCorrupt, path, b)
	}
	return id, nil
}

// loadLog opens one entry log and learns its ledgers map. The newest log
// of a directory was being written when the store last stopped; it is
// repaired (a torn tail cut off) and sealed, or removed if it holds no
// records. A log found damaged is kept untouched and never collected: its
// intact entries stay readable and its damaged ones read as ErrCorrupt.
func (s *Store) loadLog(dir int, id int64, newest bool) error {
	path := filepath.Join(s.currentDir(dir), logFileName(id))
	open := s.cfg.FS.Open
	if newest {
		open = s.cfg.FS.OpenReadWrite
	}
	f, err := open(path)
	if err != nil {
		return fmt.Errorf("entrystore: open %s: %w", path, err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close() // the stat error is the one to report
		return fmt.Errorf("entrystore: stat %s: %w", path, err)
	}
	lf := &logFile{id: id, dir: dir, path: path, f: f, ledgers: make(map[int64]int64)}
	lf.size.Store(info.Size())
	keep, err := s.learnLog(lf, newest)
	if err != nil || !keep {
		_ = f.Close() // nothing was written through f since the last sync
		if err == nil {
			err = s.removeFile(path)
		}
		return err
	}
	s.logs[id] = lf
	return nil
}

// learnLog fills lf's ledgers map and, for the newest log, repairs and
// seals it. It reports false if the file should be removed.
func (s *Store) learnLog(lf *logFile, newest bool) (bool, error) {
	size := lf.size.Load()
	hdr, err := NewScanner(lf.f, lf.path, size, newest).Header()
	switch {
	case errors.Is(err, ErrTorn):
		s.cfg.Logger.Warn("removing entry log with a torn header", "log", lf.path, "err", err)
		return false, nil
	case errors.Is(err, ErrCorrupt):
		return true, s.markDamaged(lf, err)
	case err != nil:
		return false, err
	case hdr.Sealed():
		return true, s.learnSealed(lf)
	}
	end, err := scanBody(NewScanner(lf.f, lf.path, size, newest), lf)
	torn := errors.Is(err, ErrTorn)
	if err != nil && !torn {
		return true, s.markDamagedOr(lf, err)
	}
	lf.known = true
	if !newest {
		return true, nil // an older log left unsealed: readable, just not sealed
	}
	if torn {
		s.cfg.Logger.Warn("cutting torn tail of entry log", "log", lf.path, "offset", end, "err", err)
	}
	return s.repairNewest(lf, end)
}

// learnSealed reads a sealed log's ledgers map, or rebuilds it by scanning
// the log if the map is damaged.
func (s *Store) learnSealed(lf *logFile) error {
	lf.sealed = true
	size := lf.size.Load()
	err := readLedgersMap(NewScanner(lf.f, lf.path, size, false), lf)
	if err == nil || !isDamage(err) {
		return err
	}
	s.cfg.Logger.Warn("entry log ledgers map damaged; scanning the log instead", "log", lf.path, "err", err)
	clear(lf.ledgers)
	if _, err := scanBody(NewScanner(lf.f, lf.path, size, false), lf); err != nil {
		return s.markDamagedOr(lf, err)
	}
	lf.known = true
	return nil
}

// repairNewest truncates the newest log to end (the end of its intact
// records) and seals it, or reports false if it holds no records.
func (s *Store) repairNewest(lf *logFile, end int64) (bool, error) {
	if end <= LogHeaderBytes {
		return false, nil
	}
	if lf.size.Load() > end {
		if err := lf.f.Truncate(end); err != nil {
			return false, fmt.Errorf("entrystore: truncate %s to %d: %w", lf.path, end, err)
		}
		if err := lf.f.Sync(); err != nil {
			return false, fmt.Errorf("entrystore: sync %s: %w", lf.path, err)
		}
		lf.size.Store(end)
	}
	if err := sealLog(lf, end); err != nil {
		return false, err
	}
	return true, nil
}

// scanBody adds the entry records of the scanner's log to lf.ledgers and
// returns where they end: at the first ledgers-map chunk, at the end of the
// file, or where damage starts (with the error).
func scanBody(sc *Scanner, lf *logFile) (int64, error) {
	hdr, err := sc.Header()
	if err != nil {
		return 0, err
	}
	for !hdr.Sealed() || sc.Offset() < hdr.LedgersMapOffset {
		rec, err := sc.Next()
		if err == io.EOF {
			return sc.Offset(), nil
		}
		if err != nil {
			return sc.Offset(), err
		}
		if rec.Kind == KindLedgersMap {
			return rec.Offset - recordHeaderBytes, nil
		}
		lf.ledgers[rec.LedgerID] += rec.Bytes()
	}
	return sc.Offset(), nil
}

// readLedgersMap fills lf.ledgers from a sealed log's map.
func readLedgersMap(sc *Scanner, lf *logFile) error {
	if _, err := sc.SeekLedgersMap(); err != nil {
		return err
	}
	for {
		rec, err := sc.Next()
		if err == io.EOF {
			lf.known = true
			return nil
		}
		if err != nil {
			return err
		}
		for _, p := range rec.Ledgers {
			lf.ledgers[p.LedgerID] += p.Bytes
		}
	}
}

// isDamage reports whether err is a finding about the data rather than a
// failure to read it.
func isDamage(err error) bool { return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTorn) }

// markDamagedOr marks lf damaged if err is damage, and returns err
// otherwise (a read error fails Open).
func (s *Store) markDamagedOr(lf *logFile, err error) error {
	if !isDamage(err) {
		return err
	}
	return s.markDamaged(lf, err)
}

// markDamaged records that lf failed its checks. Open goes on: the rest of
// the store is fine, and reads of damaged entries report ErrCorrupt. An
// operator must look, hence Error.
func (s *Store) markDamaged(lf *logFile, err error) error {
	lf.damaged, lf.known = true, false
	s.cfg.Logger.Error("entry log damaged; keeping it and never collecting it", "log", lf.path, "err", err)
	return nil
}

// removeFile removes path and syncs its directory.
func (s *Store) removeFile(path string) error {
	if err := s.cfg.FS.Remove(path); err != nil {
		return fmt.Errorf("entrystore: remove %s: %w", path, err)
	}
	if err := s.cfg.FS.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("entrystore: sync dir of %s: %w", path, err)
	}
	return nil
}
