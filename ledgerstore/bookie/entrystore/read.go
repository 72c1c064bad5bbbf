package entrystore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// LastEntry is the entry id that asks Get for a ledger's last entry.
const LastEntry = -1

// errLogGone means a location names a log that is no longer open:
// compaction moved the entry and removed the log after the index was read.
var errLogGone = errors.New("entrystore: entry log removed")

// indexed is an entry's place according to the index.
type indexed struct {
	entryID int64
	loc     uint64
}

// Get returns a copy of the stored entry: from the write cache, the read
// cache, or the index and an entry log. entryID LastEntry (-1) asks for the
// ledger's last entry (the one with the greatest id).
//
// Get answers ErrNoLedger or ErrNoEntry (wrapped) only when the store truly
// holds no such ledger or entry. A read error, a checksum failure or an
// index entry pointing at something that is not the entry is returned as
// an error (matching ErrCorrupt for damage), never as absence: recovery
// counts absences, and counting an unreadable entry as absent would let it
// truncate acknowledged data (docs/bookkeeper-protocol.md Appendix A item 1).
func (s *Store) Get(ledgerID, entryID int64) ([]byte, error) { return s.get(ledgerID, entryID, true) }

// get is Get; counted says whether the read counts in Stats' cache hits
// and misses (the store's own lookups do not).
func (s *Store) get(ledgerID, entryID int64, counted bool) ([]byte, error) {
	k := entryKey{ledgerID, entryID}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	epoch := s.indexEpoch
	cacheLast, inCache := int64(-1), false
	if entryID == LastEntry {
		for _, h := range []*cacheHalf{s.active, s.standby} {
			if id, ok := h.lastEntry(ledgerID); ok && id > cacheLast {
				cacheLast, inCache = id, true
			}
		}
	} else if b := s.cachedLocked(k, counted); b != nil {
		s.mu.Unlock()
		return b, nil
	}
	s.mu.Unlock()

	if entryID < LastEntry || ledgerID < 0 {
		return nil, s.absent(ledgerID, entryID)
	}
	scanned := s.now()
	found, err := s.indexScan(ledgerID, entryID)
	if counted {
		lookup := &s.stats.LookupLocation
		if entryID == LastEntry {
			lookup = &s.stats.LastEntryLookup
		}
		s.recordStep(lookup, scanned, err == nil)
		s.addStep(&s.stats.LocationsIndexMicros, scanned)
	}
	if err != nil {
		return nil, err
	}
	if entryID == LastEntry {
		if inCache && (len(found) == 0 || cacheLast >= found[0].entryID) {
			return s.get(ledgerID, cacheLast, counted) // counts the write cache hit
		}
		if counted {
			s.stats.WriteCacheMisses.Add(1)
		}
	}
	if len(found) == 0 {
		return nil, s.absent(ledgerID, entryID)
	}
	return s.readIndexed(ledgerID, found, epoch, entryID != LastEntry)
}

// cachedLocked returns a copy of k from the write cache halves or the read
// cache, or nil, counting the hits and misses if counted. Caller holds mu.
func (s *Store) cachedLocked(k entryKey, counted bool) []byte {
	count := func(c *atomic.Int64) {
		if counted {
			c.Add(1)
		}
	}
	for _, h := range []*cacheHalf{s.active, s.standby} {
		if b := h.get(k); b != nil {
			count(&s.stats.WriteCacheHits)
			return bytes.Clone(b)
		}
	}
	count(&s.stats.WriteCacheMisses)
	if b := s.rcache.get(k); b != nil {
		count(&s.stats.ReadCacheHits)
		return bytes.Clone(b)
	}
	count(&s.stats.ReadCacheMisses)
	return nil
}

// absent returns the honest "not stored" answer for an entry.
func (s *Store) absent(ledgerID, entryID int64) error {
	s.mu.Lock()
	known := s.ledgers[ledgerID] != nil
	s.mu.Unlock()
	if !known {
		return fmt.Errorf("%w: ledger %d", ErrNoLedger, ledgerID)
	}
	if entryID == LastEntry {
		return fmt.Errorf("%w: ledger %d has no entries", ErrNoEntry, ledgerID)
	}
	return fmt.Errorf("%w: ledger %d entry %d", ErrNoEntry, ledgerID, entryID)
}

// indexScan returns the index's locations for the entry (the ledger's
// last one for LastEntry) and, for read-ahead, up to readAheadEntries of
// the ledger's following entries. It returns nothing if the index has no
// location for the entry.
func (s *Store) indexScan(ledgerID, entryID int64) ([]indexed, error) {
	lower, upper := ledgerLocationBounds(ledgerID)
	iter, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("entrystore: index scan ledger %d: %w", ledgerID, err)
	}
	defer iter.Close()
	var ok bool
	if entryID == LastEntry {
		ok = iter.Last()
	} else {
		ok = iter.SeekGE(locationKey(ledgerID, entryID))
	}
	var found []indexed
	limit := 1
	if s.readAheadOn() && entryID != LastEntry {
		limit += readAheadEntries
	}
	for ; ok && len(found) < limit; ok = iter.Next() {
		_, id, keyOK := decodeLocationKey(iter.Key())
		if !keyOK {
			return nil, fmt.Errorf("%w: index key %x", ErrCorrupt, iter.Key())
		}
		if len(found) == 0 && entryID != LastEntry && id != entryID {
			break // the entry is not indexed
		}
		v, err := iter.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("entrystore: index scan ledger %d: %w", ledgerID, err)
		}
		loc, err := decodeLocation(v)
		if err != nil {
			return nil, fmt.Errorf("ledger %d entry %d: %w", ledgerID, id, err)
		}
		found = append(found, indexed{entryID: id, loc: loc})
	}
	if err := iter.Error(); err != nil {
		return nil, fmt.Errorf("entrystore: index scan ledger %d: %w", ledgerID, err)
	}
	return found, nil
}

// readIndexed reads found[0] from its log, and puts those of found[1:]
// that lie in the same read into the read cache (unless the index changed
// since epoch). If compaction removed the log after the index was read, it
// reads the index again.
func (s *Store) readIndexed(ledgerID int64, found []indexed, epoch uint64, ahead bool) ([]byte, error) {
	const attempts = 3 // each retry follows a completed compaction step
	for attempt := 1; ; attempt++ {
		entry, err := s.readLocation(ledgerID, found, epoch, ahead)
		if !errors.Is(err, errLogGone) {
			return entry, err
		}
		want := found[0]
		loc, ok, lerr := lookupLocation(s.db, ledgerID, want.entryID)
		switch {
		case lerr != nil:
			return nil, lerr
		case !ok:
			return nil, s.absent(ledgerID, want.entryID) // deleted meanwhile
		case loc == want.loc || attempt == attempts:
			return nil, fmt.Errorf("%w: ledger %d entry %d: index points at missing entry log %d",
				ErrCorrupt, ledgerID, want.entryID, loc>>32)
		}
		found = []indexed{{entryID: want.entryID, loc: loc}}
	}
}

// readLocation reads found[0]'s record and checks it, and caches the
// entries of found[1:] that the same read covered.
func (s *Store) readLocation(ledgerID int64, found []indexed, epoch uint64, ahead bool) ([]byte, error) {
	logID, off := splitLocation(found[0].loc)
	s.logsMu.RLock()
	defer s.logsMu.RUnlock()
	lf := s.logs[logID]
	if lf == nil {
		return nil, errLogGone
	}
	size := lf.size.Load()
	read := s.now()
	start := off - recordHeaderBytes
	if start < LogHeaderBytes || off+MinEntryBytes > size {
		return nil, s.badLocation(lf, ledgerID, found[0], "outside the log (size %d)", size)
	}
	span := make([]byte, min(size-start, max(s.cfg.ReadAheadBytes, 4<<10)))
	if err := readFull(lf, span, start); err != nil {
		return nil, err
	}
	n := int64(binary.BigEndian.Uint32(span[0:4]))
	if n < MinEntryBytes || n > MaxEntryBytes || off+n > size {
		return nil, s.badLocation(lf, ledgerID, found[0], "record size %d", n)
	}
	if recordHeaderBytes+n > int64(len(span)) {
		span = make([]byte, recordHeaderBytes+n)
		if err := readFull(lf, span, start); err != nil {
			return nil, err
		}
	}
	entry, reason := checkRecord(span, ledgerID, found[0].entryID)
	s.addStep(&s.stats.EntryLogMicros, read)
	if reason != "" {
		return nil, s.badLocation(lf, ledgerID, found[0], "%s", reason)
	}
	if ahead && s.readAheadOn() {
		cached := s.now()
		s.readAhead(lf.id, ledgerID, span, start, found[1:], epoch)
		s.addStep(&s.stats.ReadAheadMicros, cached)
	}
	return bytes.Clone(entry), nil
}

// readAhead caches the entries of more whose records lie wholly inside
// span (which starts at file offset start) and pass their checks. A
// damaged one is skipped: reading it directly will report it. Nothing is
// cached if a Flush or DeleteLedger changed the index since epoch, when
// more was read: a newer copy of an entry may have replaced the one read.
func (s *Store) readAhead(logID, ledgerID int64, span []byte, start int64, more []indexed, epoch uint64) {
	type ahead struct {
		k    entryKey
		data []byte
	}
	var got []ahead
	for _, ix := range more {
		id, off := splitLocation(ix.loc)
		rel := off - recordHeaderBytes - start
		if id != logID || rel < 0 || rel+recordHeaderBytes > int64(len(span)) {
			break
		}
		entry, reason := checkRecord(span[rel:], ledgerID, ix.entryID)
		if reason != "" {
			break
		}
		got = append(got, ahead{entryKey{ledgerID, ix.entryID}, bytes.Clone(entry)})
	}
	var cachedBytes int64
	if len(got) > 0 {
		s.mu.Lock()
		if s.indexEpoch == epoch {
			for _, a := range got {
				s.rcache.put(a.k, a.data)
				cachedBytes += int64(len(a.data))
			}
		} else {
			got = nil
		}
		s.mu.Unlock()
	}
	s.stats.ReadAheadEntries.Record(int64(len(got)), true)
	s.stats.ReadAheadBytes.Record(cachedBytes, true)
}

// checkRecord checks the record at the start of b: its size, that it fits
// in b, its checksum, and that it holds the wanted entry. It returns the
// entry bytes (aliasing b) or why the record is bad.
func checkRecord(b []byte, ledgerID, entryID int64) ([]byte, string) {
	if len(b) < recordHeaderBytes {
		return nil, "record header cut short"
	}
	n := int64(binary.BigEndian.Uint32(b[0:4]))
	if n < MinEntryBytes || n > MaxEntryBytes || recordHeaderBytes+n > int64(len(b)) {
		return nil, fmt.Sprintf("record size %d", n)
	}
	entry := b[recordHeaderBytes : recordHeaderBytes+n : recordHeaderBytes+n]
	if crc32.Checksum(entry, castagnoli) != binary.BigEndian.Uint32(b[4:8]) {
		return nil, "checksum mismatch"
	}
	if l, e, _ := entryIDs(entry); l != ledgerID || e != entryID {
		return nil, fmt.Sprintf("record holds ledger %d entry %d", l, e)
	}
	return entry, ""
}

// badLocation reports an index location whose record is damaged.
func (s *Store) badLocation(lf *logFile, ledgerID int64, ix indexed, format string, args ...any) error {
	_, off := splitLocation(ix.loc)
	return &RecordError{
		File:   lf.path,
		Offset: off - recordHeaderBytes,
		Reason: fmt.Sprintf("ledger %d entry %d: ", ledgerID, ix.entryID) + fmt.Sprintf(format, args...),
		Err:    ErrCorrupt,
	}
}

// readFull reads len(b) bytes at off; a short read is ErrCorrupt (the
// index promised the bytes exist).
func readFull(lf *logFile, b []byte, off int64) error {
	n, err := lf.f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return &RecordError{File: lf.path, Offset: off, Err: ErrCorrupt,
			Reason: fmt.Sprintf("read %d of %d bytes", n, len(b))}
	}
	return fmt.Errorf("entrystore: read %s at offset %d: %w", lf.path, off, err)
}
