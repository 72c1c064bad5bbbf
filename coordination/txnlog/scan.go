package txnlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"

	"keeper/internal/vfs"
)

// readAheadBytes is how much the scanner reads at a time: large enough that
// a file of small records costs few reads, small enough to be cheap per
// open file.
const readAheadBytes = 64 << 10

// scanner reads the records of one log file. It checks framing only (the
// file header, lengths, checksums and end-of-record markers) and decides
// whether damage is a torn tail or corruption (see the package doc); zxids
// and payloads are the caller's business. It never allocates more than the
// file's size, whatever the bytes say.
type scanner struct {
	r              io.ReaderAt
	path           string // for errors
	size           int64
	last           bool // the log's last file: a torn tail is ErrTorn, else ErrCorrupt
	maxRecordBytes int

	off    int64 // where the next record starts
	recOff int64 // where the record next returned starts

	window    []byte // bytes read ahead, from windowOff
	windowOff int64
	scratch   []byte // for scanning zeros

	// What lastNonZero found: the last non-zero byte in [nzFrom, size) is
	// at nzLast (-1 if none), valid when nzKnown.
	nzKnown bool
	nzFrom  int64
	nzLast  int64
}

func newScanner(r io.ReaderAt, path string, size int64, last bool, maxRecordBytes int) *scanner {
	return &scanner{r: r, path: path, size: size, last: last, maxRecordBytes: maxRecordBytes}
}

// read returns the n bytes at off, which must lie inside the file. The
// slice is valid until the next call.
func (s *scanner) read(off int64, n int) ([]byte, error) {
	if off >= s.windowOff && off+int64(n) <= s.windowOff+int64(len(s.window)) {
		start := off - s.windowOff
		return s.window[start : start+int64(n)], nil
	}
	want := min(max(int64(n), readAheadBytes), s.size-off)
	if int64(cap(s.window)) < want {
		s.window = make([]byte, want)
	}
	s.window = s.window[:want]
	s.windowOff = off
	got, err := s.r.ReadAt(s.window, off)
	if got < n {
		s.window = s.window[:0]
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the file shrank under us
		}
		return nil, fmt.Errorf("txnlog: read %s at offset %d: %w", s.path, off, err)
	}
	s.window = s.window[:got]
	return s.window[:n], nil
}

// lastNonZero returns the offset of the last non-zero byte in [from, size),
// or -1 if they are all zero. It reads backwards, so a file whose only
// damage is near its end is cheap to judge. The file is read once: the
// answer for the lowest from asked so far answers every later from at or
// above it.
func (s *scanner) lastNonZero(from int64) (int64, error) {
	if s.nzKnown && from >= s.nzFrom {
		if s.nzLast >= from {
			return s.nzLast, nil
		}
		return -1, nil
	}
	end := s.size
	if s.nzKnown { // [s.nzFrom, size) is known; only [from, s.nzFrom) is left
		if s.nzLast >= 0 {
			s.nzFrom = from
			return s.nzLast, nil
		}
		end = s.nzFrom
	}
	q, err := s.scanZeros(from, end)
	if err != nil {
		return 0, err
	}
	s.nzKnown, s.nzFrom, s.nzLast = true, from, q
	return q, nil
}

// scanZeros returns the offset of the last non-zero byte in [from, end), or
// -1.
func (s *scanner) scanZeros(from, end int64) (int64, error) {
	q, err := vfs.LastNonZero(s.r, from, end, &s.scratch)
	if err != nil {
		return 0, fmt.Errorf("txnlog: %s: %w", s.path, err)
	}
	return q, nil
}

func (s *scanner) fail(sentinel error, off int64, format string, args ...any) error {
	return &RecordError{File: s.path, Offset: off, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// readHeader checks the file header. A missing or partial header is torn
// when every non-zero byte of the file is a prefix of a valid header.
func (s *scanner) readHeader() error {
	if s.size >= FileHeaderBytes {
		h, err := s.read(0, FileHeaderBytes)
		if err != nil {
			return err
		}
		magic, version := binary.BigEndian.Uint32(h[0:4]), binary.BigEndian.Uint32(h[4:8])
		if magic == Magic && version == Version {
			s.off = FileHeaderBytes // any dbid is accepted; ZooKeeper's is 0
			return nil
		}
	}
	q, err := s.lastNonZero(0)
	if err != nil {
		return err
	}
	if q < FileHeaderBytes {
		h, err := s.read(0, int(q+1))
		if err != nil {
			return err
		}
		if bytes.Equal(h, fileHeader[:q+1]) {
			return s.torn(0, "incomplete file header (%d bytes written)", q+1)
		}
	}
	return s.fail(ErrCorrupt, 0, "not a txn log file: bad magic or version")
}

// next returns the next record's payload, valid until the next call, or
// io.EOF at the clean end of the file.
func (s *scanner) next() ([]byte, error) {
	off := s.off
	s.recOff = off
	if off == s.size {
		return nil, io.EOF
	}
	if s.size-off < recordHeaderBytes {
		return nil, s.judgeTail(off, s.size, "file ends inside a record header")
	}
	h, err := s.read(off, recordHeaderBytes)
	if err != nil {
		return nil, err
	}
	sum, length := binary.BigEndian.Uint64(h[0:8]), int32(binary.BigEndian.Uint32(h[8:12]))
	if sum == 0 && length == 0 {
		return nil, s.atEnd(off)
	}
	if length < 0 || int(length) > s.maxRecordBytes {
		return nil, s.fail(ErrCorrupt, off, "record length %d out of range [0, %d]", length, s.maxRecordBytes)
	}
	markerOff := off + recordHeaderBytes + int64(length)
	if markerOff >= s.size {
		return nil, s.judgeTail(off, markerOff, "record of %d bytes runs past the end of the file", length)
	}
	rec, err := s.read(off+recordHeaderBytes, int(length)+1)
	if err != nil {
		return nil, err
	}
	payload := rec[:length]
	switch {
	case rec[length] != EndOfRecord:
		return nil, s.judgeTail(off, markerOff, "no end-of-record marker at offset %d", markerOff)
	case uint64(adler32.Checksum(payload)) != sum:
		return nil, s.judgeTail(off, markerOff, "checksum mismatch")
	}
	s.off = markerOff + 1
	return payload, nil
}

// atEnd handles an end marker (a zero checksum and length) at off: the
// clean end if nothing but zeros follows, corruption otherwise, since
// keeper's writer never leaves data after the end (see the package doc).
func (s *scanner) atEnd(off int64) error {
	q, err := s.lastNonZero(off)
	if err != nil {
		return err
	}
	if q >= 0 {
		return s.fail(ErrCorrupt, off, "non-zero byte at offset %d after the end of the log", q)
	}
	return io.EOF
}

// judgeTail decides about a record at off that failed its checks and whose
// end-of-record marker belongs at markerOff. It is a torn tail only if
// everything from the marker's place to the end of the file is zero (what
// an interrupted append into a preallocated file leaves), the bytes are not
// a complete record whose length field alone was damaged, and this is the
// log's last file.
func (s *scanner) judgeTail(off, markerOff int64, format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	q, err := s.lastNonZero(off)
	if err != nil {
		return err
	}
	if q < 0 {
		return io.EOF // only zeros: a clean end short of a full end marker
	}
	if q >= markerOff {
		return s.fail(ErrCorrupt, off, "%s, and data follows up to offset %d", reason, q)
	}
	if end, err := s.damagedLength(off, q); err != nil {
		return err
	} else if end > 0 {
		return s.fail(ErrCorrupt, off, "%s: its length field is damaged (a complete record ends at offset %d)", reason, end)
	}
	return s.torn(off, "%s", reason)
}

// damagedLength reports whether the record at off, whose last non-zero
// byte is at q, is really complete for some shorter length: some 'B' at or
// before q ends a payload with the record's checksum. It returns that 'B's
// offset, or 0. That is a damaged
// length field (which may have swallowed the records after it), not a torn
// write; a torn payload matches its checksum this way with odds of about
// 2^-32. Checksums of all the prefixes come from one running Adler-32.
func (s *scanner) damagedLength(off, q int64) (int64, error) {
	payloadOff := off + recordHeaderBytes
	if q < payloadOff {
		return 0, nil
	}
	n := min(q-payloadOff, int64(s.maxRecordBytes)) // candidate payload lengths 0..n
	rec, err := s.read(off, int(recordHeaderBytes+n+1))
	if err != nil {
		return 0, err
	}
	sum := binary.BigEndian.Uint64(rec[0:8])
	const mod = 65521 // Adler-32's modulus
	a, b := uint32(1), uint32(0)
	for i, c := range rec[recordHeaderBytes:] {
		if c == EndOfRecord && uint64(b<<16|a) == sum {
			return payloadOff + int64(i), nil // payload rec[12 : 12+i] is complete
		}
		if int64(i) == n {
			break
		}
		a = (a + uint32(c)) % mod
		b = (b + a) % mod
	}
	return 0, nil
}

// torn reports a torn tail: ErrTorn in the log's last file, ErrCorrupt in
// any other, whose every record was synced before the next file began.
func (s *scanner) torn(off int64, format string, args ...any) error {
	if !s.last {
		return s.fail(ErrCorrupt, off, "torn record in a file that is not the log's last: "+format, args...)
	}
	return s.fail(ErrTorn, off, format, args...)
}
