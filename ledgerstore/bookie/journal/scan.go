package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"keeper/internal/vfs"
)

// readAheadBytes is how much the scanner reads at a time: large enough
// that a file of small records costs few reads, small enough to be cheap
// per open file.
const readAheadBytes = 64 << 10

// maxPaddingBytes bounds a padding record's zeros on read: the writer
// pads less than two alignment units.
const maxPaddingBytes = 2 * MaxAlignmentBytes

// scanner reads the records of one journal file. It checks the framing
// (the header, lengths, padding, checksums) and that each body decodes,
// and decides whether damage is a torn tail or corruption (see the package
// doc). It never allocates more than the file's size, whatever the bytes
// say.
type scanner struct {
	r              io.ReaderAt
	path           string // for errors
	size           int64
	last           bool // the journal's last file: a torn tail is ErrTorn, else ErrCorrupt
	maxRecordBytes int

	version   int32 // from the header
	recHeader int64 // record header size for version

	off    int64 // where the next record starts
	recOff int64 // where the record next returned (or the damage) starts

	window    []byte // bytes read ahead, from windowOff
	windowOff int64
	scratch   []byte // for scanning zeros
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
		return nil, fmt.Errorf("journal: read %s at offset %d: %w", s.path, off, err)
	}
	s.window = s.window[:got]
	return s.window[:n], nil
}

// lastNonZero returns the offset of the last non-zero byte in [from, size),
// or -1 if they are all zero. It reads backwards, so a file whose only
// damage is near its end is cheap to judge.
func (s *scanner) lastNonZero(from int64) (int64, error) {
	q, err := vfs.LastNonZero(s.r, from, s.size, &s.scratch)
	if err != nil {
		return 0, fmt.Errorf("journal: %s: %w", s.path, err)
	}
	return q, nil
}

func (s *scanner) fail(sentinel error, off int64, format string, args ...any) error {
	return &RecordError{File: s.path, Offset: off, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// readHeader checks the file header. A missing or partial header is torn
// when every non-zero byte of the file is a prefix of a valid header.
func (s *scanner) readHeader() error {
	s.recOff = 0
	if s.size >= HeaderBytes {
		h, err := s.read(0, 8)
		if err != nil {
			return err
		}
		version := int32(binary.BigEndian.Uint32(h[4:8]))
		if string(h[0:4]) == Magic && version >= FormatV5 && version <= FormatV7 {
			s.version, s.recHeader = version, int64(recordHeaderBytes(version))
			s.off = HeaderBytes // the rest of the sector is reserved; Java ignores it too
			return nil
		}
	}
	q, err := s.lastNonZero(0)
	if err != nil {
		return err
	}
	if q < 8 {
		h, err := s.read(0, int(q+1))
		if err != nil {
			return err
		}
		if bytes.HasPrefix(header(FormatV6), h) || bytes.HasPrefix(header(FormatV7), h) {
			return s.torn(0, "incomplete file header (%d bytes written)", q+1)
		}
	}
	return s.fail(ErrCorrupt, 0, "not a journal file of a format keeper reads (%d to %d)", FormatV5, FormatV7)
}

// next returns the next record's body, valid until the next call, or
// io.EOF at the clean end of the file. It steps over padding records.
func (s *scanner) next() ([]byte, error) {
	for {
		off := s.off
		s.recOff = off
		if off >= s.size {
			return nil, io.EOF
		}
		if s.size-off < 4 {
			return nil, s.judgeTail(off, s.size, "file ends inside a record length")
		}
		h, err := s.read(off, 4)
		if err != nil {
			return nil, err
		}
		switch length := int32(binary.BigEndian.Uint32(h)); {
		case length == 0:
			return nil, s.atEnd(off)
		case length == PaddingMarker:
			end, err := s.padding(off)
			if err != nil {
				return nil, err
			}
			s.off = end
		case length < 0:
			return nil, s.judgeTail(off, off+4, "negative record length %d", length)
		case int64(length) > int64(s.maxRecordBytes):
			// A torn length is a prefix of the real one with zeros after
			// it, so never larger: this one was damaged.
			return nil, s.fail(ErrCorrupt, off, "record length %d above the limit %d", length, s.maxRecordBytes)
		default:
			return s.record(off, int64(length))
		}
	}
}

// padding checks the padding record at off and returns where it ends.
func (s *scanner) padding(off int64) (int64, error) {
	end, reason, corrupt, err := s.checkPadding(off)
	switch {
	case err != nil:
		return 0, err
	case corrupt:
		return 0, s.fail(ErrCorrupt, off, "%s", reason)
	case reason != "":
		return 0, s.judgeTail(off, end, "%s", reason)
	}
	return end, nil
}

// checkPadding returns the end of the padding record at off, or the
// bytes it claims and why it is not valid. corrupt says that no torn write
// can explain the reason: a torn pad length is a prefix of the real one
// with zeros after it, so never out of range.
func (s *scanner) checkPadding(off int64) (end int64, reason string, corrupt bool, err error) {
	if s.size-off < paddingHeaderBytes {
		return off + paddingHeaderBytes, "file ends inside a padding header", false, nil
	}
	h, err := s.read(off+4, 4)
	if err != nil {
		return 0, "", false, err
	}
	n := int64(int32(binary.BigEndian.Uint32(h)))
	if n < 0 || n >= maxPaddingBytes {
		return 0, fmt.Sprintf("padding length %d out of range [0, %d)", n, maxPaddingBytes), true, nil
	}
	end = off + paddingHeaderBytes + n
	if end > s.size {
		return end, fmt.Sprintf("padding of %d bytes runs past the end of the file", n), false, nil
	}
	zeros, err := s.read(off+paddingHeaderBytes, int(n))
	if err != nil {
		return 0, "", false, err
	}
	if i := slices.IndexFunc(zeros, func(b byte) bool { return b != 0 }); i >= 0 {
		return end, fmt.Sprintf("non-zero byte in padding at offset %d", off+paddingHeaderBytes+int64(i)), false, nil
	}
	return end, "", false, nil
}

// record checks the record of the given body length at off and returns
// its body.
func (s *scanner) record(off, length int64) ([]byte, error) {
	end := off + s.recHeader + length
	if end > s.size {
		return nil, s.judgeTail(off, end, "record of %d bytes runs past the end of the file", length)
	}
	rec, err := s.read(off, int(s.recHeader+length))
	if err != nil {
		return nil, err
	}
	body := rec[s.recHeader:]
	if s.version >= FormatV7 {
		if want := binary.BigEndian.Uint32(rec[4:8]); crc32.Checksum(body, castagnoli) != want {
			return nil, s.judgeTail(off, end, "checksum mismatch")
		}
		if _, err := DecodeRecord(body); err != nil {
			return nil, s.fail(ErrCorrupt, off, "intact record does not decode: %v", err)
		}
	} else if _, err := DecodeRecord(body); err != nil {
		// Without a checksum, a record cut short by a crash can look
		// like this too: judge it by what follows.
		return nil, s.judgeTail(off, end, "%v", err)
	}
	s.off = end
	return body, nil
}

// atEnd handles a zero length at off: the clean end if nothing but zeros
// follows, corruption otherwise, since the writer never leaves data after
// the end.
func (s *scanner) atEnd(off int64) error {
	q, err := s.lastNonZero(off)
	if err != nil {
		return err
	}
	if q >= 0 {
		return s.fail(ErrCorrupt, off, "zero record length followed by data up to offset %d", q)
	}
	return io.EOF
}

// judgeTail decides about a record (or padding) at off that failed its
// checks and claims the bytes up to claimedEnd. It is a torn tail only if
// everything from claimedEnd to the end of the file is zero (what an
// interrupted append into a preallocated file leaves), the bytes are not a
// complete record whose length field alone was damaged, and this is the
// journal's last file.
func (s *scanner) judgeTail(off, claimedEnd int64, format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	q, err := s.lastNonZero(off)
	if err != nil {
		return err
	}
	if q < 0 {
		return io.EOF // only zeros: a clean end short of a whole length field
	}
	if q >= claimedEnd {
		return s.fail(ErrCorrupt, off, "%s, and data follows up to offset %d", reason, q)
	}
	end, err := s.damagedLength(off, q)
	if err != nil {
		return err
	}
	if end > 0 {
		return s.fail(ErrCorrupt, off, "%s: its length field is damaged (a complete record ends at offset %d)", reason, end)
	}
	return s.torn(off, "%s", reason)
}

// damagedLength reports whether the record at off, whose last non-zero
// byte is at q, is really complete for some shorter length: that is a
// damaged length field (which may have swallowed acknowledged records
// after it), not a torn write. It returns where that record ends, or 0.
//
// In FormatV7 a shorter body must match the record's checksum; a torn
// body does so with odds of about 2^-32 per candidate length. In earlier
// formats, which have no checksum, a valid padding record must start
// inside the claimed bytes, since every flush ends with one; a torn record
// holds only its own bytes, which an entry's payload could make look like
// one (keeper then refuses to start rather than guess).
func (s *scanner) damagedLength(off, q int64) (int64, error) {
	bodyOff := off + s.recHeader
	n := min(q-bodyOff, int64(s.maxRecordBytes)) // candidate body lengths up to n
	if n < IDsBytes {
		return 0, nil // too short for any record; also keeps the reads below inside the file
	}
	rec, err := s.read(off, int(s.recHeader+n))
	if err != nil {
		return 0, err
	}
	if int32(binary.BigEndian.Uint32(rec[0:4])) < 0 {
		return 0, nil // a padding record or a negative length: nothing to shorten
	}
	if s.version >= FormatV7 {
		want := binary.BigEndian.Uint32(rec[4:8])
		body := rec[s.recHeader:]
		var sum uint32
		for i := range body {
			sum = crc32.Update(sum, castagnoli, body[i:i+1])
			if i+1 >= IDsBytes && sum == want {
				return bodyOff + int64(i) + 1, nil
			}
		}
		return 0, nil
	}
	return s.paddingInside(bodyOff+IDsBytes, bodyOff+n)
}

// paddingInside returns the offset of the first valid padding record that
// starts in [from, to], or 0.
func (s *scanner) paddingInside(from, to int64) (int64, error) {
	var marker [4]byte
	binary.BigEndian.PutUint32(marker[:], paddingMarkerBits)
	for p := from; p <= to && p+4 <= s.size; p++ {
		b, err := s.read(p, 4)
		if err != nil {
			return 0, err
		}
		if binary.BigEndian.Uint32(b) != paddingMarkerBits {
			continue
		}
		_, reason, corrupt, err := s.checkPadding(p)
		if err != nil {
			return 0, err
		}
		if reason == "" && !corrupt {
			return p, nil
		}
	}
	return 0, nil
}

// torn reports a torn tail: ErrTorn in the journal's last file, ErrCorrupt
// in any other, whose every record was synced before the next file began.
func (s *scanner) torn(off int64, format string, args ...any) error {
	if !s.last {
		return s.fail(ErrCorrupt, off, "torn record in a file that is not the journal's last: "+format, args...)
	}
	return s.fail(ErrTorn, off, format, args...)
}
