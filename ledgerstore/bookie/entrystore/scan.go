package entrystore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// scanWindowBytes is how much the scanner reads at a time: large enough
// that a log of small entries costs few reads, small enough to be cheap.
const scanWindowBytes = 256 << 10

// RecordKind says what a record holds.
type RecordKind uint8

// The kinds of record.
const (
	KindEntry      RecordKind = iota + 1 // a stored entry
	KindLedgersMap                       // a chunk of the ledgers map
)

// Record is one record of an entry log.
type Record struct {
	Kind RecordKind
	// Offset is where the record's entry bytes start (its location's
	// offset); the 8-byte record header is just before it.
	Offset int64
	// Entry is the stored entry (KindEntry). It is valid only until the
	// next call to Next.
	Entry []byte
	// LedgerID and EntryID are the entry's ids (KindEntry).
	LedgerID, EntryID int64
	// Ledgers are the chunk's pairs (KindLedgersMap).
	Ledgers []LedgerBytes
}

// Bytes is the space the record takes in the log, header included.
func (r Record) Bytes() int64 {
	if r.Kind == KindEntry {
		return recordHeaderBytes + int64(len(r.Entry))
	}
	return recordHeaderBytes + mapChunkHeaderBytes + 16*int64(len(r.Ledgers))
}

// Scanner reads the records of one entry log in order, checking framing
// and checksums, and tells a torn tail from corruption by the rule in the
// package doc. It never allocates more than MaxEntryBytes plus a window,
// whatever the bytes say. It is not safe for concurrent use.
type Scanner struct {
	r    io.ReaderAt
	path string
	size int64
	last bool // the directory's newest log: a torn tail is ErrTorn

	hdr       Header
	started   bool
	badHeader bool
	off       int64 // where the next record (or the damage) starts
	inMap     bool  // a ledgers-map chunk has been read
	mapPairs  int64
	err       error // the first error returned, returned again ever after

	window    []byte
	windowOff int64
	written   int64 // offset just past the last non-zero byte; -1: not computed
}

// NewScanner returns a scanner over the size bytes of r. path names the
// file in errors. last says whether the log is its directory's newest,
// the only one that may end in a torn record.
func NewScanner(r io.ReaderAt, path string, size int64, last bool) *Scanner {
	return &Scanner{r: r, path: path, size: size, last: last, written: -1}
}

// Header reads and checks the file header. Its errors match ErrTorn (the
// newest log was created but its header never fully written) or
// ErrCorrupt, or are read errors.
func (s *Scanner) Header() (Header, error) {
	if !s.started {
		s.started = true
		if err := s.readHeader(); err != nil {
			s.err, s.badHeader = err, true
			return Header{}, err
		}
		s.off = LogHeaderBytes
	}
	if s.badHeader {
		return Header{}, s.err
	}
	return s.hdr, nil
}

// SeekLedgersMap moves a sealed log's scanner to its ledgers map, so that
// Next returns only the map chunks. It reports false for a log that is not
// sealed. Call it before the first Next.
func (s *Scanner) SeekLedgersMap() (bool, error) {
	h, err := s.Header()
	if err != nil {
		return false, err
	}
	if !h.Sealed() {
		return false, nil
	}
	s.off = h.LedgersMapOffset
	return true, nil
}

// Offset is where the next record starts or, after an error, where the
// damaged record starts: the length to truncate a torn log to.
func (s *Scanner) Offset() int64 { return s.off }

// Next returns the next record. It returns io.EOF at the clean end of the
// log, an error matching ErrTorn if the newest log ends part-way through a
// record, one matching ErrCorrupt if a record fails its checks anywhere
// else, and read errors as they are. After an error every call returns it.
func (s *Scanner) Next() (Record, error) {
	if _, err := s.Header(); err != nil {
		return Record{}, err
	}
	if s.err != nil {
		return Record{}, s.err
	}
	rec, err := s.next()
	if err != nil {
		s.err = err
		return Record{}, err
	}
	s.off = rec.Offset + int64(len(rec.Entry))
	return rec, nil
}

func (s *Scanner) next() (Record, error) {
	if s.off == s.size {
		if s.hdr.Sealed() && s.mapPairs != int64(s.hdr.LedgersCount) {
			return Record{}, s.fail(ErrCorrupt, s.off, "ledgers map has %d pairs, header says %d", s.mapPairs, s.hdr.LedgersCount)
		}
		return Record{}, io.EOF
	}
	if s.size-s.off < recordHeaderBytes {
		return Record{}, s.incomplete(-1, 0, "record header cut short")
	}
	h, err := s.read(s.off, recordHeaderBytes)
	if err != nil {
		return Record{}, err
	}
	n := int64(binary.BigEndian.Uint32(h[0:4]))
	sum := binary.BigEndian.Uint32(h[4:8])
	if n < MinEntryBytes || n > MaxEntryBytes {
		return Record{}, s.badSize(n)
	}
	if end := s.off + recordHeaderBytes + n; end > s.size {
		return Record{}, s.incomplete(n, sum, "record of %d bytes runs past the end of the file", n)
	}
	entry, err := s.read(s.off+recordHeaderBytes, int(n))
	if err != nil {
		return Record{}, err
	}
	if crc32.Checksum(entry, castagnoli) != sum {
		return Record{}, s.incomplete(n, sum, "checksum mismatch in a record of %d bytes", n)
	}
	return s.classify(entry)
}

// classify checks a record whose checksum is right.
func (s *Scanner) classify(entry []byte) (Record, error) {
	off := s.off + recordHeaderBytes
	ledgerID, entryID, _ := entryIDs(entry)
	sealed, mapOff := s.hdr.Sealed(), s.hdr.LedgersMapOffset
	if ledgerID == mapLedgerID && entryID == mapEntryID {
		if sealed && s.off < mapOff {
			return Record{}, s.fail(ErrCorrupt, s.off, "ledgers map chunk before the header's map offset %d", mapOff)
		}
		pairs, reason := decodeMapChunk(entry)
		if reason != "" {
			return Record{}, s.fail(ErrCorrupt, s.off, "%s", reason)
		}
		s.inMap = true
		s.mapPairs += int64(len(pairs))
		return Record{Kind: KindLedgersMap, Offset: off, Entry: entry, Ledgers: pairs}, nil
	}
	switch {
	case ledgerID < 0 || entryID < 0:
		return Record{}, s.fail(ErrCorrupt, s.off, "entry names ledger %d entry %d", ledgerID, entryID)
	case s.inMap:
		return Record{}, s.fail(ErrCorrupt, s.off, "entry record after the ledgers map")
	case sealed && off+int64(len(entry)) > mapOff:
		return Record{}, s.fail(ErrCorrupt, s.off, "entry record overlaps the ledgers map at %d", mapOff)
	}
	return Record{Kind: KindEntry, Offset: off, Entry: entry, LedgerID: ledgerID, EntryID: entryID}, nil
}

// badSize judges a record whose size field is impossible: torn if nothing
// after the record header was ever written (the header itself was cut),
// corrupt otherwise.
func (s *Scanner) badSize(n int64) error {
	if s.tornAllowed() {
		written, err := s.writtenEnd()
		if err != nil {
			return err
		}
		if written <= s.off+recordHeaderBytes {
			return s.fail(ErrTorn, s.off, "record header cut short (size %d)", n)
		}
	}
	return s.fail(ErrCorrupt, s.off, "record size %d outside [%d, %d]", n, MinEntryBytes, MaxEntryBytes)
}

// incomplete judges a record that runs past the end of the file or fails
// its checksum (n < 0: not even its header is complete). It is torn when
// the log may have a torn tail, nothing non-zero follows the record's
// claimed end, its last bytes are missing or zero, and no shorter prefix
// of its bytes carries its checksum (which would make it a complete record
// with a damaged size field, perhaps swallowing the records after it).
func (s *Scanner) incomplete(n int64, sum uint32, format string, args ...any) error {
	if !s.tornAllowed() {
		return s.fail(ErrCorrupt, s.off, format, args...)
	}
	written, err := s.writtenEnd()
	if err != nil {
		return err
	}
	if n >= 0 {
		if written >= s.off+recordHeaderBytes+n {
			return s.fail(ErrCorrupt, s.off, format, args...)
		}
		swallowed, err := s.swallowed(sum, written)
		if err != nil {
			return err
		}
		if swallowed {
			return s.fail(ErrCorrupt, s.off, "complete record with a damaged size field (%s)", fmt.Sprintf(format, args...))
		}
	}
	return s.fail(ErrTorn, s.off, format, args...)
}

// tornAllowed reports whether damage may be a torn tail: only in the
// newest log, and never once the log is sealed (sealing syncs everything
// before it patches the header).
func (s *Scanner) tornAllowed() bool { return s.last && !s.hdr.Sealed() }

// swallowed reports whether some prefix of at least MinEntryBytes of the
// bytes after the record header, ending at or before written, has
// checksum sum.
func (s *Scanner) swallowed(sum uint32, written int64) (bool, error) {
	start := s.off + recordHeaderBytes
	end := min(written, start+MaxEntryBytes)
	if end < start+MinEntryBytes {
		return false, nil
	}
	b, err := s.read(start, int(end-start))
	if err != nil {
		return false, err
	}
	// The running CRC, byte by byte, in its internal (inverted) form, so
	// that every prefix costs one table lookup.
	state := ^crc32.Update(0, castagnoli, b[:MinEntryBytes-1])
	for _, c := range b[MinEntryBytes-1:] {
		state = castagnoli[byte(state)^c] ^ (state >> 8)
		if ^state == sum {
			return true, nil
		}
	}
	return false, nil
}

// readHeader checks the file header. A missing or partial header is torn
// when the log is the newest and its non-zero bytes are a prefix of a
// fresh header.
func (s *Scanner) readHeader() error {
	if s.size >= LogHeaderBytes {
		b, err := s.read(0, LogHeaderBytes)
		if err != nil {
			return err
		}
		h, reason := decodeHeader(b, s.size)
		if reason == "" {
			s.hdr = h
			return nil
		}
		if !s.last {
			return s.fail(ErrCorrupt, 0, "%s", reason)
		}
	}
	if s.last {
		written, err := s.writtenEnd()
		if err != nil {
			return err
		}
		if written <= LogHeaderBytes {
			b, err := s.read(0, int(written))
			if err != nil {
				return err
			}
			if bytes.Equal(b, freshHeader[:written]) {
				return s.fail(ErrTorn, 0, "incomplete file header (%d of %d bytes)", written, LogHeaderBytes)
			}
		}
	}
	return s.fail(ErrCorrupt, 0, "bad file header")
}

// read returns the n bytes at off, which must lie inside the file. The
// slice is valid until the next call.
func (s *Scanner) read(off int64, n int) ([]byte, error) {
	if off >= s.windowOff && off+int64(n) <= s.windowOff+int64(len(s.window)) {
		return s.window[off-s.windowOff : off-s.windowOff+int64(n)], nil
	}
	want := min(max(int64(n), scanWindowBytes), s.size-off)
	if int64(cap(s.window)) < want {
		s.window = make([]byte, want)
	}
	s.window, s.windowOff = s.window[:want], off
	got, err := s.r.ReadAt(s.window, off)
	if got < n {
		s.window = s.window[:0]
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the file shrank under us
		}
		return nil, fmt.Errorf("entrystore: read %s at offset %d: %w", s.path, off, err)
	}
	s.window = s.window[:got]
	return s.window[:n], nil
}

// writtenEnd returns the offset just past the file's last non-zero byte
// (0 if all are zero), reading backwards from the end, so that a file
// whose only damage is near its end is cheap to judge.
func (s *Scanner) writtenEnd() (int64, error) {
	if s.written >= 0 {
		return s.written, nil
	}
	buf := make([]byte, min(s.size, scanWindowBytes))
	for end := s.size; end > 0; {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if n, err := s.r.ReadAt(b, start); n < len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("entrystore: read %s at offset %d: %w", s.path, start, err)
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != 0 {
				s.written = start + int64(i) + 1
				return s.written, nil
			}
		}
		end = start
	}
	s.written = 0
	return 0, nil
}

func (s *Scanner) fail(sentinel error, off int64, format string, args ...any) error {
	return &RecordError{File: s.path, Offset: off, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}
