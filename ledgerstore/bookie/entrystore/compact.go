package entrystore

import (
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// DefaultCompactStepBytes is how many bytes of live entries one compaction
// step copies: small enough that the Flush waiting behind it (and so Adds,
// once a write cache half fills) is held up for milliseconds, large enough
// that the fsync and index commit per step are amortized.
const DefaultCompactStepBytes = 4 << 20

// CompactStats reports what compaction did.
type CompactStats struct {
	LogsCompacted int   // victim logs emptied and removed
	EntriesMoved  int64 // live entries copied to the current logs
	BytesMoved    int64 // record bytes copied
	BytesFreed    int64 // size of the removed victim files
}

func (c *CompactStats) add(o CompactStats) {
	c.LogsCompacted += o.LogsCompacted
	c.EntriesMoved += o.EntriesMoved
	c.BytesMoved += o.BytesMoved
	c.BytesFreed += o.BytesFreed
}

// compaction is the progress of CompactStep through one victim log.
type compaction struct {
	lf *logFile
	sc *Scanner
}

// Compact rewrites the live entries of every sealed log whose live ratio
// is below maxLiveRatio (MinorCompactionThreshold for a minor compaction,
// MajorCompactionThreshold for a major one) into the current logs, emptiest
// log first, and removes the emptied logs. It works in steps of stepBytes
// (0: DefaultCompactStepBytes), releasing the store between steps, so
// Flush and Add go on. The schedule (minor hourly, major daily, major
// suspended above the disk warning threshold) is the caller's.
func (s *Store) Compact(maxLiveRatio float64, stepBytes int64) (CompactStats, error) {
	s.opMu.Lock()
	victims := s.compactionOrder(maxLiveRatio)
	s.opMu.Unlock()
	var total CompactStats
	for _, id := range victims {
		for {
			st, done, err := s.CompactStep(id, stepBytes)
			total.add(st)
			if err != nil {
				return total, err
			}
			if done {
				break
			}
		}
	}
	return total, nil
}

// CompactStep copies up to budgetBytes (0: DefaultCompactStepBytes) of the
// live entries of log logID into the current log of its directory, and
// reports done once the log holds no live entry and has been removed. An
// entry is live if its ledger still exists and the index still points at
// this copy. Each step appends, fsyncs the log, then commits the new
// locations in a synced batch: only then may the old copy go. Calls for
// the same log continue where the last one stopped; a call for another
// log starts that one afresh. A log that is not collectable (current,
// unsealed, damaged, or already gone) is reported done without work.
func (s *Store) CompactStep(logID int64, budgetBytes int64) (CompactStats, bool, error) {
	if budgetBytes <= 0 {
		budgetBytes = DefaultCompactStepBytes
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	var st CompactStats
	s.mu.Lock()
	err := s.writableLocked()
	s.mu.Unlock()
	if err != nil {
		return st, false, err
	}
	s.logsMu.RLock()
	lf := s.logs[logID]
	s.logsMu.RUnlock()
	if lf == nil || !s.collectable(lf) {
		return st, true, nil
	}
	c := s.compaction
	if c == nil || c.lf != lf {
		c = &compaction{lf: lf, sc: NewScanner(lf.f, lf.path, lf.size.Load(), false)}
		s.compaction = c
	}
	finished, err := s.copyLive(c, budgetBytes, &st)
	if err != nil {
		s.compaction = nil
		return st, false, err
	}
	if !finished {
		return st, false, nil
	}
	s.compaction = nil
	freed, err := s.removeLog(lf)
	if err != nil {
		return st, false, err
	}
	st.LogsCompacted++
	st.BytesFreed += freed
	return st, true, nil
}

// copyLive moves live entries from c's log until budget bytes are copied
// or the log's entries end, then makes the copies durable and indexes
// them. It reports whether the log's entries ended. Caller holds opMu.
func (s *Store) copyLive(c *compaction, budget int64, st *CompactStats) (bool, error) {
	batch := s.db.NewBatch()
	defer batch.Close()
	dir := c.lf.dir
	finished := false
	for st.BytesMoved < budget {
		rec, err := c.sc.Next()
		if err == io.EOF || (err == nil && rec.Kind == KindLedgersMap) {
			finished = true
			break
		}
		if err != nil {
			if isDamage(err) {
				c.lf.damaged = true // never pick it again; its entries stay readable
			}
			return false, fmt.Errorf("entrystore: compact %s: %w", c.lf.path, err)
		}
		if !s.HasLedger(rec.LedgerID) {
			continue
		}
		loc, ok, err := lookupLocation(s.db, rec.LedgerID, rec.EntryID)
		if err != nil {
			return false, err
		}
		if !ok || loc != location(c.lf.id, rec.Offset) {
			continue // a newer copy exists elsewhere: this one is garbage
		}
		newLoc, err := s.appendEntry(dir, rec.LedgerID, rec.Entry, entrySum(rec.Entry))
		if err != nil {
			return false, s.fail(err)
		}
		if err := batch.Set(locationKey(rec.LedgerID, rec.EntryID), encodeLocation(newLoc), nil); err != nil {
			return false, err
		}
		st.EntriesMoved++
		st.BytesMoved += rec.Bytes()
	}
	if batch.Empty() {
		return finished, nil
	}
	if err := s.syncWriter(s.writers[dir]); err != nil {
		return false, s.fail(err)
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		return false, s.fail(fmt.Errorf("entrystore: commit index: %w", err))
	}
	return finished, nil
}
