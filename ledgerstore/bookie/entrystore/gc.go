package entrystore

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// GCStats reports what GC did.
type GCStats struct {
	LedgersDeleted int   // ledgers deleted locally
	LogsRemoved    int   // entry logs that held no live entry, removed
	BytesFreed     int64 // size of the removed log files
}

// GC deletes the ledgers of snapshot that live reports dead, then removes
// the sealed entry logs left with no live entry. Logs that are only partly
// dead are Compact's business.
//
// The caller must follow the procedure of docs/bookkeeper-protocol.md §8.3 and Appendix A item 9,
// or GC deletes live data:
//
//  1. snapshot := store.Ledgers(), taken BEFORE listing the metadata;
//  2. list every ledger in the metadata store;
//  3. if the listing failed in any way (an error, a partial range, a node
//     it cannot parse), stop: keep everything, call GC another time;
//  4. store.GC(snapshot, func(id) bool { return listed[id] }).
//
// A ledger created after the snapshot is not in it, so it cannot be
// mistaken for garbage even though the listing may have missed it. live
// is called without locks held.
func (s *Store) GC(snapshot []int64, live func(ledgerID int64) bool) (GCStats, error) {
	var dead []int64
	for _, id := range snapshot {
		if !live(id) {
			dead = append(dead, id)
		}
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	deleted, err := s.deleteLedgers(dead)
	st := GCStats{LedgersDeleted: deleted}
	if err != nil {
		return st, err
	}
	for _, lf := range s.sortedLogs() {
		if !s.collectable(lf) || s.liveBytes(lf) > 0 {
			continue
		}
		id, found, err := s.indexedLedger(lf)
		if err != nil {
			return st, err
		}
		if found {
			// The ledger's record is gone but its index entries are not:
			// the store is inconsistent, and removing the log could lose
			// entries the index still serves. Keep it; an operator looks.
			s.cfg.Logger.Error("dead ledger still indexed; keeping its entry log", "log", lf.path, "ledger", id)
			continue
		}
		freed, err := s.removeLog(lf)
		if err != nil {
			return st, err
		}
		st.LogsRemoved++
		st.BytesFreed += freed
	}
	return st, nil
}

// DeleteLedger deletes a ledger: its record and index entries (in one
// synced batch) and its cached entries. Its bytes in entry logs become
// garbage for GC and Compact to reclaim. It returns an error matching
// ErrNoLedger if the store does not know the ledger.
func (s *Store) DeleteLedger(ledgerID int64) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	n, err := s.deleteLedgers([]int64{ledgerID})
	if err == nil && n == 0 {
		err = fmt.Errorf("%w: ledger %d", ErrNoLedger, ledgerID)
	}
	return err
}

// deleteLedgers deletes the ledgers of ids the store knows, in one synced
// batch, and returns how many it deleted. They are forgotten in memory
// first: a Get in between may still find an entry in the index, which is
// an answer a read just before the delete could have given too. Caller
// holds opMu, so no Flush or compaction step writes their index entries
// meanwhile.
func (s *Store) deleteLedgers(ids []int64) (int, error) {
	s.mu.Lock()
	if err := s.writableLocked(); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	var known []int64
	for _, id := range ids {
		if s.ledgers[id] == nil {
			continue
		}
		known = append(known, id)
		delete(s.ledgers, id)
		delete(s.dirty, id)
		s.active.dropLedger(id)
		s.standby.dropLedger(id)
		s.rcache.dropLedger(id)
	}
	s.indexEpoch++
	s.mu.Unlock()
	if len(known) == 0 {
		return 0, nil
	}
	batch := s.db.NewBatch()
	defer batch.Close()
	for _, id := range known {
		lower, upper := ledgerLocationBounds(id)
		if err := batch.DeleteRange(lower, upper, nil); err != nil {
			return 0, err
		}
		if err := batch.Delete(ledgerKey(id), nil); err != nil {
			return 0, err
		}
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		return 0, s.fail(fmt.Errorf("entrystore: delete %d ledgers: %w", len(known), err))
	}
	return len(known), nil
}

// LogUsage describes one entry log, for planning compaction.
type LogUsage struct {
	LogID      int64
	Dir        string
	TotalBytes int64 // record bytes per the ledgers map
	LiveBytes  int64 // of those, bytes of ledgers the store still has
	Sealed     bool  // the current (unsealed) log is never compacted
	Known      bool  // false for a damaged log: never collected
}

// LiveRatio is LiveBytes / TotalBytes (1 for an empty or unknown log).
func (u LogUsage) LiveRatio() float64 {
	if !u.Known || u.TotalBytes == 0 {
		return 1
	}
	return float64(u.LiveBytes) / float64(u.TotalBytes)
}

// LogUsage describes every entry log, by id.
func (s *Store) LogUsage() []LogUsage {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	var out []LogUsage
	for _, lf := range s.sortedLogs() {
		out = append(out, LogUsage{
			LogID:      lf.id,
			Dir:        s.cfg.Dirs[lf.dir],
			TotalBytes: lf.totalBytes(),
			LiveBytes:  s.liveBytes(lf),
			Sealed:     lf.sealed,
			Known:      lf.known && !lf.damaged,
		})
	}
	return out
}

// collectable reports whether lf may be removed or compacted: sealed, not
// being written, its map known and no damage found. Caller holds opMu.
func (s *Store) collectable(lf *logFile) bool {
	return lf.sealed && lf.known && !lf.damaged && !s.isCurrent(lf)
}

// liveBytes sums the bytes of lf's ledgers that the store still has.
// Caller holds opMu.
func (s *Store) liveBytes(lf *logFile) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var live int64
	for id, b := range lf.ledgers {
		if s.ledgers[id] != nil {
			live += b
		}
	}
	return live
}

// removeLog deletes lf's file and forgets it, returning the file's size.
// The file goes first: if that fails nothing changed. Reads of lf that
// already hold its handle finish first (logsMu). Caller holds opMu.
func (s *Store) removeLog(lf *logFile) (int64, error) {
	size := lf.size.Load()
	if err := s.removeFile(lf.path); err != nil {
		return 0, err
	}
	s.logsMu.Lock()
	delete(s.logs, lf.id)
	s.logsMu.Unlock()
	if err := lf.f.Close(); err != nil {
		return size, fmt.Errorf("entrystore: close %s: %w", lf.path, err)
	}
	s.cfg.Logger.Info("removed entry log", "log", lf.path, "bytes", size)
	return size, nil
}

// compactionOrder returns the collectable logs whose live ratio is below
// maxLiveRatio, emptiest first. Caller holds opMu.
func (s *Store) compactionOrder(maxLiveRatio float64) []int64 {
	type cand struct {
		id    int64
		ratio float64
	}
	var cands []cand
	for _, lf := range s.sortedLogs() {
		if !s.collectable(lf) {
			continue
		}
		u := LogUsage{TotalBytes: lf.totalBytes(), LiveBytes: s.liveBytes(lf), Known: true}
		if r := u.LiveRatio(); r < maxLiveRatio {
			cands = append(cands, cand{lf.id, r})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.ratio, b.ratio) })
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.id
	}
	return ids
}

// indexedLedger returns a ledger of lf's map that still has index entries.
// GC calls it before removing a log all of whose ledgers are deleted, as a
// last guard against deleting data the index serves.
func (s *Store) indexedLedger(lf *logFile) (int64, bool, error) {
	iter, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{prefixLocation},
		UpperBound: []byte{prefixLocation + 1},
	})
	if err != nil {
		return 0, false, fmt.Errorf("entrystore: index scan: %w", err)
	}
	defer iter.Close()
	for _, id := range slices.Sorted(maps.Keys(lf.ledgers)) {
		lower, upper := ledgerLocationBounds(id)
		if iter.SeekGE(lower) && bytes.Compare(iter.Key(), upper) < 0 {
			return id, true, nil
		}
	}
	if err := iter.Error(); err != nil {
		return 0, false, fmt.Errorf("entrystore: index scan: %w", err)
	}
	return 0, false, nil
}
