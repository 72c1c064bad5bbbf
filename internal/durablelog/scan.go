package durablelog

import (
	"errors"
	"fmt"
	"io"

	"keeper/internal/vfs"
)

// readAheadBytes is how much the scanner reads at a time: large enough that
// a file of small records costs few reads, small enough to be cheap per
// open file.
const readAheadBytes = 64 << 10

// Framing is one format's record layout, as the Scanner needs it. A value
// serves one file and may keep what its header said (a format version).
type Framing interface {
	// HeaderBytes is the size of the file header.
	HeaderBytes() int
	// Header checks h, the file's first HeaderBytes bytes, and returns
	// where the first record starts; ok is false if h is not a header
	// this reader reads.
	Header(h []byte) (dataOff int64, ok bool)
	// HeaderPrefix reports whether b, the file's bytes up to its last
	// non-zero byte (shorter than HeaderBytes), begins a header the
	// writer writes: a header cut short by a crash.
	HeaderPrefix(b []byte) bool
	// Frame reads the record at off, below the file's size, with
	// Scanner.Read, and says what it is.
	Frame(s *Scanner, off int64) (Frame, error)
	// DamagedLength reports whether the record at off, which failed a
	// check and whose file's last non-zero byte is at q, is complete for
	// a shorter length: a damaged length field rather than a torn write.
	// It returns where that complete record ends, or 0.
	DamagedLength(s *Scanner, off, q int64) (int64, error)
}

// Verdict is what Framing.Frame found at an offset.
type Verdict uint8

const (
	// Whole is a complete record: Body, ending at End.
	Whole Verdict = iota
	// Skip is a complete record the caller does not see (padding), ending
	// at End.
	Skip
	// EndMarker is the format's "no more records" (a zero length): the
	// clean end if only zeros follow it, corruption otherwise.
	EndMarker
	// Damaged fails a check an interrupted write can explain; the record
	// claims the bytes before End, and is torn if only zeros follow.
	Damaged
	// Corrupt fails a check no interrupted write can explain.
	Corrupt
)

// Frame is Framing.Frame's answer.
type Frame struct {
	Verdict Verdict
	Body    []byte // Whole: the record's payload, valid until the next Read
	End     int64  // Whole, Skip: where the record ends; Damaged: where its claim ends
	Reason  string // EndMarker, Damaged, Corrupt: what the bytes are, for people
}

// Scanner reads the records of one log file through a Framing and decides
// whether damage is a torn tail or corruption (see the package doc). It
// never allocates more than the file's size, whatever the bytes say.
type Scanner struct {
	r       io.ReaderAt
	path    string // for errors
	size    int64
	last    bool // the log's last file: a torn tail is opts.Torn, else opts.Corrupt
	framing Framing
	opts    *Options

	off    int64 // where the next record starts
	recOff int64 // where the record Next last returned (or the damage) starts

	window    []byte // bytes read ahead, from windowOff
	windowOff int64
	scratch   []byte // for scanning zeros

	// What lastNonZero found: the last non-zero byte in [nzFrom, size) is
	// at nzLast (-1 if none), valid when nzKnown.
	nzKnown bool
	nzFrom  int64
	nzLast  int64
}

// NewScanner returns a scanner of the size bytes of r, the file at path;
// last says whether it is the log's last file.
func NewScanner(r io.ReaderAt, path string, size int64, last bool, f Framing, opts *Options) *Scanner {
	return &Scanner{r: r, path: path, size: size, last: last, framing: f, opts: opts}
}

// Size returns the file's size.
func (s *Scanner) Size() int64 { return s.size }

// Offset returns where the next record starts.
func (s *Scanner) Offset() int64 { return s.off }

// RecordOffset returns where the record Next last returned starts, or
// where the damage it reported is.
func (s *Scanner) RecordOffset() int64 { return s.recOff }

// StartAt makes the next record start at off, which the caller knows to be
// a record boundary after the header and inside the file (a log mark).
func (s *Scanner) StartAt(off int64) { s.off = min(max(off, s.off), s.size) }

// Read returns the n bytes at off, which must lie inside the file. The
// slice is valid until the next call.
func (s *Scanner) Read(off int64, n int) ([]byte, error) {
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
		return nil, fmt.Errorf("%s: read %s at offset %d: %w", s.opts.Prefix, s.path, off, err)
	}
	s.window = s.window[:got]
	return s.window[:n], nil
}

// Fail returns a *RecordError at off with the given sentinel.
func (s *Scanner) Fail(sentinel error, off int64, format string, args ...any) error {
	return &RecordError{File: s.path, Offset: off, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// ReadHeader checks the file header and moves to the first record. A
// missing or partial header is torn when every non-zero byte of the file
// is a prefix of one the writer writes (rule 6).
func (s *Scanner) ReadHeader() error {
	s.recOff = 0
	n := s.framing.HeaderBytes()
	if s.size >= int64(n) {
		h, err := s.Read(0, n)
		if err != nil {
			return err
		}
		if off, ok := s.framing.Header(h); ok {
			s.off = off
			return nil
		}
	}
	q, err := s.lastNonZero(0)
	if err != nil {
		return err
	}
	if q < int64(n) {
		h, err := s.Read(0, int(q+1))
		if err != nil {
			return err
		}
		if s.framing.HeaderPrefix(h) {
			return s.torn(0, "incomplete file header (%d bytes written)", q+1)
		}
	}
	return s.Fail(s.opts.Corrupt, 0, "%s", s.opts.BadHeader)
}

// Next returns the next record's body, valid until the next call, or
// io.EOF at the clean end of the file.
func (s *Scanner) Next() ([]byte, error) {
	for {
		off := s.off
		s.recOff = off
		if off >= s.size {
			return nil, io.EOF
		}
		fr, err := s.framing.Frame(s, off)
		if err != nil {
			return nil, err
		}
		switch fr.Verdict {
		case Whole, Skip:
			if fr.End <= off || fr.End > s.size {
				return nil, fmt.Errorf("%s: %s at offset %d: the framing says a record ends at %d", s.opts.Prefix, s.path, off, fr.End)
			}
			s.off = fr.End
			if fr.Verdict == Whole {
				return fr.Body, nil
			}
		case EndMarker:
			return nil, s.atEnd(off, fr.Reason)
		case Damaged:
			return nil, s.judgeTail(off, fr.End, fr.Reason)
		default:
			return nil, s.Fail(s.opts.Corrupt, off, "%s", fr.Reason)
		}
	}
}

// atEnd handles an end marker at off: the clean end if nothing but zeros
// follows, corruption otherwise (rules 1 and 2).
func (s *Scanner) atEnd(off int64, what string) error {
	q, err := s.lastNonZero(off)
	if err != nil {
		return err
	}
	if q >= 0 {
		return s.Fail(s.opts.Corrupt, off, "%s followed by data up to offset %d", what, q)
	}
	return io.EOF
}

// judgeTail decides about a record at off that failed a check and claims
// the bytes before claimedEnd (rule 5). It is a torn tail only if
// everything from claimedEnd to the end of the file is zero (what an
// interrupted append into a preallocated file leaves), the bytes are not a
// complete record whose length field alone was damaged, and this is the
// log's last file.
func (s *Scanner) judgeTail(off, claimedEnd int64, reason string) error {
	q, err := s.lastNonZero(off)
	if err != nil {
		return err
	}
	if q < 0 {
		return io.EOF // only zeros: a clean end short of a whole end marker
	}
	if q >= claimedEnd {
		return s.Fail(s.opts.Corrupt, off, "%s, and data follows up to offset %d", reason, q)
	}
	end, err := s.framing.DamagedLength(s, off, q)
	if err != nil {
		return err
	}
	if end > 0 {
		return s.Fail(s.opts.Corrupt, off, "%s: its length field is damaged (a complete record ends at offset %d)", reason, end)
	}
	return s.torn(off, "%s", reason)
}

// torn reports a torn tail: the Torn sentinel in the log's last file,
// Corrupt in any other, whose every record was synced before the next
// file began.
func (s *Scanner) torn(off int64, format string, args ...any) error {
	if !s.last {
		return s.Fail(s.opts.Corrupt, off, "torn record in a file that is not the "+s.opts.Noun+"'s last: "+format, args...)
	}
	return s.Fail(s.opts.Torn, off, format, args...)
}

// lastNonZero returns the offset of the last non-zero byte in [from, size),
// or -1 if they are all zero. It reads backwards, so a file whose only
// damage is near its end is cheap to judge. The file is read once: the
// answer for the lowest from asked so far answers every later from at or
// above it.
func (s *Scanner) lastNonZero(from int64) (int64, error) {
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
	q, err := vfs.LastNonZero(s.r, from, end, &s.scratch)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", s.opts.Prefix, s.path, err)
	}
	s.nzKnown, s.nzFrom, s.nzLast = true, from, q
	return q, nil
}
