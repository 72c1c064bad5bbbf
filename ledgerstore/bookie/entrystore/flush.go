package entrystore

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Flush makes every entry added and every ledger change made before the
// call durable. It swaps the write cache halves, appends the flushed
// half's entries to the entry logs sorted by (ledger, entry), fsyncs the
// logs, then commits their locations and the changed ledger records to the
// index in one synced batch, and only then empties the half. Adds go on
// into the other half meanwhile.
//
// Flush is the storage step of the bookie's checkpoint (docs/bookkeeper-protocol.md §7.3, Appendix
// A item 8):
//
//	mark := journal.LastMark() // 1. capture the mark BEFORE flushing
//	err := store.Flush()       // 2. entry logs, then index, fsynced
//	persist(mark)              // 3. only if Flush returned nil
//
// Every entry journaled before the mark was added before it, so it is in
// the logs and the index once Flush returns. A failed Flush poisons the
// store: the error is sticky, and the mark must not be persisted.
func (s *Store) Flush() error {
	_, err := s.FlushBytes()
	return err
}

// FlushBytes is Flush, and also returns the entry bytes it moved from the
// write cache to the entry logs (0 when the write cache was empty).
func (s *Store) FlushBytes() (int64, error) {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	rounds := 1
	if !s.standby.empty() {
		rounds = 2 // a half filled up and waits; then the active half
	}
	s.mu.Unlock()
	var flushed int64
	for range rounds {
		s.mu.Lock()
		if err := s.writableLocked(); err != nil {
			s.mu.Unlock()
			return flushed, err
		}
		if s.standby.empty() {
			s.active, s.standby = s.standby, s.active
		}
		half, records := s.standby, s.takeDirtyLocked()
		s.flushing = true
		s.mu.Unlock()

		if err := s.flushHalf(half, records); err != nil {
			s.mu.Lock()
			s.flushing = false
			s.mu.Unlock()
			return flushed, s.fail(fmt.Errorf("entrystore: flush: %w", err))
		}
		s.mu.Lock()
		flushed += half.bytes
		s.retireLocked(half)
		s.mu.Unlock()
	}
	return flushed, nil
}

// flushHalf writes half's entries and the ledger records to disk. It reads
// half without mu: no one writes to the standby half until it is reset.
func (s *Store) flushHalf(half *cacheHalf, records map[int64][]byte) error {
	batch := s.db.NewBatch()
	defer batch.Close()
	logs := s.now()
	if err := s.appendHalf(half, batch); err != nil {
		s.recordStep(&s.stats.FlushEntryLogs, logs, false)
		return err
	}
	if len(half.entries) > 0 {
		s.recordStep(&s.stats.FlushEntryLogs, logs, true)
	}
	for _, id := range slices.Sorted(maps.Keys(records)) {
		if err := batch.Set(ledgerKey(id), records[id], nil); err != nil {
			return err
		}
	}
	if batch.Empty() {
		return nil
	}
	index := s.now()
	if err := batch.Commit(pebble.Sync); err != nil {
		s.recordStep(&s.stats.FlushIndex, index, false)
		return fmt.Errorf("entrystore: commit index: %w", err)
	}
	s.recordStep(&s.stats.FlushIndex, index, true)
	return nil
}

// appendHalf appends half's entries to the entry logs, sorted by ledger
// and entry, puts their locations into batch and syncs the logs written.
func (s *Store) appendHalf(half *cacheHalf, batch *pebble.Batch) error {
	touched := make([]bool, len(s.writers))
	var key [locationKeyBytes]byte
	var val [8]byte
	for _, ce := range half.sorted() {
		dir := s.dirOf(ce.key.ledgerID)
		loc, err := s.appendEntry(dir, ce.key.ledgerID, half.bytesOf(ce), ce.sum)
		if err != nil {
			return err
		}
		putLocationKey(&key, ce.key.ledgerID, ce.key.entryID)
		binary.BigEndian.PutUint64(val[:], loc)
		if err := batch.Set(key[:], val[:], nil); err != nil { // Set copies both
			return err
		}
		touched[dir] = true
	}
	for dir, w := range s.writers {
		if touched[dir] {
			if err := s.syncWriter(w); err != nil {
				return err
			}
		}
	}
	return nil
}

// retireLocked empties a flushed half. The index now points at the new
// copies of its entries, so older copies a concurrent read-ahead put in the
// read cache are dropped, and the epoch makes read-aheads still in flight
// cache nothing. Caller holds mu.
func (s *Store) retireLocked(half *cacheHalf) {
	for _, ce := range half.entries {
		s.rcache.remove(ce.key)
	}
	half.reset()
	s.indexEpoch++
	s.flushing = false
}
