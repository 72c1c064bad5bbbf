package entrystore

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Store is a bookie's ledger storage: entry logs, the pebble index, the
// write cache and the read cache of one set of ledger directories.
//
// Store is safe for concurrent use. Add, Get and the ledger metadata calls
// take mu only for memory work, so they run alongside a Flush or a
// compaction step; Flush, GC, DeleteLedger, the compaction calls and Close
// exclude each other (opMu). The Store starts no goroutines (pebble runs
// its own).
type Store struct {
	cfg       Config
	db        *pebble.DB
	halfBytes int64 // capacity of one write cache half

	// opMu serializes the calls that write entry logs or the index, and
	// guards writers, nextLogID, compaction and the logFile fields it
	// names.
	opMu       sync.Mutex
	writers    []*logWriter // one per ledger directory
	nextLogID  int64
	compaction *compaction

	// logsMu guards logs. Get holds it shared while it reads a log, so a
	// log is never closed under a read.
	logsMu sync.RWMutex
	logs   map[int64]*logFile

	// mu guards everything below.
	mu      sync.Mutex
	active  *cacheHalf // takes Adds
	standby *cacheHalf // being flushed, or full and waiting for Flush
	// flushing is set while Flush reads standby without mu: Add must not
	// swap it in then, even when it is empty.
	flushing bool
	rcache   *readCache
	segs     *segmentPool // the write cache halves' segments
	ledgers  map[int64]*ledgerInfo
	dirty    map[int64]bool // ledgers whose record the next Flush writes
	// indexEpoch counts changes of the index that may replace an entry's
	// bytes (a Flush, a DeleteLedger); read-ahead caches nothing read
	// across one.
	indexEpoch uint64
	// err is the first failed write or sync of an entry log or the
	// index. After it the on-disk state is unknown, so every later write
	// returns it; reads go on.
	err    error
	closed bool

	stats Stats // atomics, outside mu
}

// Open opens the store in cfg's directories, creating them if needed. It
// repairs each directory's newest entry log (cutting a torn tail, sealing
// it) and reads the other logs' ledgers maps. Entries that were in the
// write cache at a crash are not in the store: replaying the journal from
// the last persisted mark Adds them again.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	halfBytes := max(cfg.WriteCacheBytes/2, 1)
	segs := newSegmentPool(halfBytes)
	s := &Store{
		cfg:       cfg,
		halfBytes: halfBytes,
		logs:      make(map[int64]*logFile),
		active:    newCacheHalf(segs),
		standby:   newCacheHalf(segs),
		segs:      segs,
		rcache:    newReadCache(cfg.ReadCacheBytes),
		ledgers:   make(map[int64]*ledgerInfo),
		dirty:     make(map[int64]bool),
	}
	for i := range cfg.Dirs {
		s.writers = append(s.writers, &logWriter{dir: i})
	}
	db, err := openIndex(cfg)
	if err != nil {
		return nil, errors.Join(err, segs.release())
	}
	s.db = db
	if err := s.loadLedgers(); err != nil {
		return nil, errors.Join(err, s.closeFiles())
	}
	if err := s.loadLogs(); err != nil {
		return nil, errors.Join(err, s.closeFiles())
	}
	return s, nil
}

// Close seals the current entry logs and closes the store. It does not
// flush the write cache: the bookie's last checkpoint does that (Flush,
// then persist the journal mark) before it calls Close. Call it once every
// other call has returned; calls after Close return ErrClosed.
func (s *Store) Close() error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	healthy := s.err == nil
	s.mu.Unlock()
	var errs []error
	for _, w := range s.writers {
		if w.lf != nil && healthy {
			errs = append(errs, s.sealWriter(w))
		}
	}
	errs = append(errs, s.closeFiles())
	return errors.Join(errs...)
}

// closeFiles closes every log and the index, and releases the write
// cache's memory: the store is closed (or never opened), so nothing reads
// or writes the cache any more.
func (s *Store) closeFiles() error {
	var errs []error
	s.mu.Lock()
	errs = append(errs, s.segs.release())
	s.mu.Unlock()
	s.logsMu.Lock()
	for _, lf := range s.logs {
		errs = append(errs, lf.f.Close())
	}
	clear(s.logs)
	s.logsMu.Unlock()
	errs = append(errs, s.db.Close())
	return errors.Join(errs...)
}

// Add puts an entry in the write cache. entry is its stored form (docs/bookkeeper-protocol.md
// §6.4): the store reads only the ledgerId, entryId and LAC at its start,
// which must match the arguments. The ledger is created if new, and its
// LAC raised to the entry's. The entry is readable at once and durable
// after the next Flush returns; adding an entry again replaces it, so
// journal replay simply Adds every entry after the last mark.
//
// Add does not check the fenced flag or the master key: the bookie does,
// before it calls Add (docs/bookkeeper-protocol.md §7.2). It returns ErrCacheFull when both write
// cache halves are full: the caller flushes (or waits for the flush in
// progress) and retries.
func (s *Store) Add(ledgerID, entryID int64, entry []byte) error {
	lac, err := checkEntry(ledgerID, entryID, entry)
	if err != nil {
		return err
	}
	sum := entrySum(entry)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return err
	}
	return s.addLocked(entryKey{ledgerID, entryID}, entry, lac, sum)
}

// AddOutcome is what AddEntry did besides storing the entry.
type AddOutcome struct {
	// KeyBound: this call bound the ledger's master key (the bookie's first
	// contact with the ledger), so the caller journals a master-key record
	// ahead of the entry. It can be set when err is not nil.
	KeyBound bool
	// NeedsFlush is NeedsFlush after the add.
	NeedsFlush bool
	// Checksum is the entry's CRC-32C (Castagnoli), which the store
	// computed for its entry log record: the checksum of the entry's
	// FormatV7 journal record too (journal.NewEntryRecordSummed).
	Checksum uint32
}

// AddEntry is the bookie's ADD_ENTRY against ledger storage in one step
// under the store's lock, in the order of docs/bookkeeper-protocol.md
// §7.2: bind ledger to key on first contact (creating it) or check key
// against the bound one (ErrMasterKeyMismatch), refuse a normal add to a
// fenced ledger (ErrFenced; recovery adds pass), then Add. The key stays
// bound even if the add then fails (ErrCacheFull: the caller retries).
func (s *Store) AddEntry(ledgerID, entryID int64, entry, key []byte, recovery bool) (AddOutcome, error) {
	var out AddOutcome
	if len(key) > maxMasterKeyBytes {
		return out, fmt.Errorf("entrystore: master key of %d bytes (max %d)", len(key), maxMasterKeyBytes)
	}
	if ledgerID < 0 {
		return out, fmt.Errorf("entrystore: ledger id %d is negative", ledgerID)
	}
	out.Checksum = entrySum(entry) // while the entry is in the CPU's cache, outside the lock
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return out, err
	}
	info := s.ledgerLocked(ledgerID, true)
	switch {
	case info.masterKey == nil:
		info.masterKey = append([]byte{}, key...)
		s.dirty[ledgerID] = true
		out.KeyBound = true
	case !bytes.Equal(info.masterKey, key):
		return out, fmt.Errorf("%w: ledger %d", ErrMasterKeyMismatch, ledgerID)
	}
	if info.fenced && !recovery {
		return out, fmt.Errorf("%w: ledger %d", ErrFenced, ledgerID)
	}
	lac, err := checkEntry(ledgerID, entryID, entry)
	if err == nil {
		err = s.addLocked(entryKey{ledgerID, entryID}, entry, lac, out.Checksum)
	}
	out.NeedsFlush = s.needsFlushLocked()
	return out, err
}

// checkEntry checks that entry is an entry in stored form for ledgerID
// and entryID, and returns its LAC.
func checkEntry(ledgerID, entryID int64, entry []byte) (lac int64, err error) {
	if len(entry) < MinEntryBytes || len(entry) > MaxEntryBytes {
		return 0, fmt.Errorf("%w: %d bytes (want %d..%d)", ErrBadEntry, len(entry), MinEntryBytes, MaxEntryBytes)
	}
	l, e, lac := entryIDs(entry)
	if l != ledgerID || e != entryID || ledgerID < 0 || entryID < 0 {
		return 0, fmt.Errorf("%w: header says ledger %d entry %d, caller says ledger %d entry %d",
			ErrBadEntry, l, e, ledgerID, entryID)
	}
	return lac, nil
}

// addLocked puts a checked entry, whose entrySum is sum, into the active
// half, swapping the halves if it is full and the other one is free.
// Caller holds mu.
func (s *Store) addLocked(k entryKey, entry []byte, lac int64, sum uint32) error {
	if !s.active.empty() && s.active.bytes+int64(len(entry)) > s.halfBytes {
		if !s.standby.empty() || s.flushing {
			return ErrCacheFull
		}
		s.active, s.standby = s.standby, s.active
	}
	s.active.put(k, entry, sum)
	s.rcache.remove(k) // a replaced entry must not come back from the read cache
	s.ledgerLocked(k.ledgerID, true).noteLAC(lac)
	return nil
}

// NeedsFlush reports whether a write cache half is full (or waits for
// Flush); the bookie then checkpoints early instead of waiting for its
// interval, as BookKeeper does when the write cache fills.
func (s *Store) NeedsFlush() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.needsFlushLocked()
}

func (s *Store) needsFlushLocked() bool { return !s.standby.empty() || s.active.bytes >= s.halfBytes }

// writableLocked returns why the store cannot take writes, if it cannot.
// Caller holds mu.
func (s *Store) writableLocked() error {
	if s.closed {
		return ErrClosed
	}
	return s.err
}

// fail records err as the sticky write error and returns it.
func (s *Store) fail(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
	return s.err
}

// Err returns the sticky write error, if a write or sync has failed.
func (s *Store) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
