package journal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"keeper/internal/durablelog"
)

// maxPaddingBytes bounds a padding record's zeros on read: the writer
// pads less than two alignment units.
const maxPaddingBytes = 2 * MaxAlignmentBytes

// scanOptions names the journal in the errors of its scanner.
var scanOptions = durablelog.Options{
	Prefix:    "journal",
	Noun:      "journal",
	BadHeader: fmt.Sprintf("not a journal file of a format keeper reads (%d to %d)", FormatV5, FormatV7),
	Torn:      ErrTorn,
	Corrupt:   ErrCorrupt,
}

// newScanner returns a scanner of one journal file: it checks the framing
// (the header, lengths, padding, checksums) and that each body decodes,
// steps over padding records, and decides whether damage is a torn tail or
// corruption (see the package doc).
func newScanner(r io.ReaderAt, path string, size int64, last bool, maxRecordBytes int) *durablelog.Scanner {
	return durablelog.NewScanner(r, path, size, last, &framing{maxRecordBytes: maxRecordBytes}, &scanOptions)
}

// framing is the journal's record layout for durablelog.Scanner. It holds
// the format version its file's header names.
type framing struct {
	maxRecordBytes int
	version        int32 // from the header
	recHeader      int64 // record header size for version
}

func (*framing) HeaderBytes() int { return HeaderBytes }

// Header accepts versions 5 to 7. The rest of the sector is reserved;
// Java ignores it too.
func (f *framing) Header(h []byte) (int64, bool) {
	version := int32(binary.BigEndian.Uint32(h[4:8]))
	if string(h[0:4]) != Magic || version < FormatV5 || version > FormatV7 {
		return 0, false
	}
	f.version, f.recHeader = version, int64(recordHeaderBytes(version))
	return HeaderBytes, true
}

// HeaderPrefix accepts the start of a header keeper writes (v6 or v7).
func (*framing) HeaderPrefix(b []byte) bool {
	return bytes.HasPrefix(header(FormatV6), b) || bytes.HasPrefix(header(FormatV7), b)
}

func (f *framing) Frame(s *durablelog.Scanner, off int64) (durablelog.Frame, error) {
	if s.Size()-off < 4 {
		return damaged(s.Size(), "file ends inside a record length"), nil
	}
	h, err := s.Read(off, 4)
	if err != nil {
		return durablelog.Frame{}, err
	}
	switch length := int32(binary.BigEndian.Uint32(h)); {
	case length == 0:
		return durablelog.Frame{Verdict: durablelog.EndMarker, Reason: "zero record length"}, nil
	case length == PaddingMarker:
		return f.padding(s, off)
	case length < 0:
		// Claims only its own 4 bytes: a torn padding marker reads as one.
		return damaged(off+4, fmt.Sprintf("negative record length %d", length)), nil
	case int64(length) > int64(f.maxRecordBytes):
		// A torn length is a prefix of the real one with zeros after it,
		// so never larger: this one was damaged.
		return corrupt(fmt.Sprintf("record length %d above the limit %d", length, f.maxRecordBytes)), nil
	default:
		return f.record(s, off, int64(length))
	}
}

func damaged(end int64, reason string) durablelog.Frame {
	return durablelog.Frame{Verdict: durablelog.Damaged, End: end, Reason: reason}
}

func corrupt(reason string) durablelog.Frame {
	return durablelog.Frame{Verdict: durablelog.Corrupt, Reason: reason}
}

// padding checks the padding record at off.
func (f *framing) padding(s *durablelog.Scanner, off int64) (durablelog.Frame, error) {
	end, reason, isCorrupt, err := checkPadding(s, off)
	switch {
	case err != nil:
		return durablelog.Frame{}, err
	case isCorrupt:
		return corrupt(reason), nil
	case reason != "":
		return damaged(end, reason), nil
	}
	return durablelog.Frame{Verdict: durablelog.Skip, End: end}, nil
}

// checkPadding returns the end of the padding record at off, or the
// bytes it claims and why it is not valid. isCorrupt says that no torn
// write can explain the reason: a torn pad length is a prefix of the real
// one with zeros after it, so never out of range.
func checkPadding(s *durablelog.Scanner, off int64) (end int64, reason string, isCorrupt bool, err error) {
	if s.Size()-off < paddingHeaderBytes {
		return off + paddingHeaderBytes, "file ends inside a padding header", false, nil
	}
	h, err := s.Read(off+4, 4)
	if err != nil {
		return 0, "", false, err
	}
	n := int64(int32(binary.BigEndian.Uint32(h)))
	if n < 0 || n >= maxPaddingBytes {
		return 0, fmt.Sprintf("padding length %d out of range [0, %d)", n, maxPaddingBytes), true, nil
	}
	end = off + paddingHeaderBytes + n
	if end > s.Size() {
		return end, fmt.Sprintf("padding of %d bytes runs past the end of the file", n), false, nil
	}
	zeros, err := s.Read(off+paddingHeaderBytes, int(n))
	if err != nil {
		return 0, "", false, err
	}
	if i := slices.IndexFunc(zeros, func(b byte) bool { return b != 0 }); i >= 0 {
		return end, fmt.Sprintf("non-zero byte in padding at offset %d", off+paddingHeaderBytes+int64(i)), false, nil
	}
	return end, "", false, nil
}

// record checks the record of the given body length at off.
func (f *framing) record(s *durablelog.Scanner, off, length int64) (durablelog.Frame, error) {
	end := off + f.recHeader + length
	if end > s.Size() {
		return damaged(end, fmt.Sprintf("record of %d bytes runs past the end of the file", length)), nil
	}
	rec, err := s.Read(off, int(f.recHeader+length))
	if err != nil {
		return durablelog.Frame{}, err
	}
	body := rec[f.recHeader:]
	if f.version >= FormatV7 {
		if want := binary.BigEndian.Uint32(rec[4:8]); crc32.Checksum(body, castagnoli) != want {
			return damaged(end, "checksum mismatch"), nil
		}
		if _, err := DecodeRecord(body); err != nil {
			return corrupt(fmt.Sprintf("intact record does not decode: %v", err)), nil
		}
	} else if _, err := DecodeRecord(body); err != nil {
		// Without a checksum, a record cut short by a crash can look
		// like this too: judge it by what follows.
		return damaged(end, err.Error()), nil
	}
	return durablelog.Frame{Verdict: durablelog.Whole, Body: body, End: end}, nil
}

// DamagedLength reports whether the record at off, whose file's last
// non-zero byte is at q, is really complete for some shorter length: that
// is a damaged length field (which may have swallowed acknowledged records
// after it), not a torn write. It returns where that record ends, or 0.
//
// In FormatV7 a shorter body must match the record's checksum; a torn
// body does so with odds of about 2^-32 per candidate length. In earlier
// formats, which have no checksum, a valid padding record must start
// inside the claimed bytes, since every flush ends with one; a torn record
// holds only its own bytes, which an entry's payload could make look like
// one (keeper then refuses to start rather than guess).
func (f *framing) DamagedLength(s *durablelog.Scanner, off, q int64) (int64, error) {
	bodyOff := off + f.recHeader
	n := min(q-bodyOff, int64(f.maxRecordBytes)) // candidate body lengths up to n
	if n < IDsBytes {
		return 0, nil // too short for any record; also keeps the reads below inside the file
	}
	rec, err := s.Read(off, int(f.recHeader+n))
	if err != nil {
		return 0, err
	}
	if int32(binary.BigEndian.Uint32(rec[0:4])) < 0 {
		return 0, nil // a padding record or a negative length: nothing to shorten
	}
	if f.version >= FormatV7 {
		want := binary.BigEndian.Uint32(rec[4:8])
		body := rec[f.recHeader:]
		var sum uint32
		for i := range body {
			sum = crc32.Update(sum, castagnoli, body[i:i+1])
			if i+1 >= IDsBytes && sum == want {
				return bodyOff + int64(i) + 1, nil
			}
		}
		return 0, nil
	}
	return paddingInside(s, bodyOff+IDsBytes, bodyOff+n)
}

// paddingInside returns the offset of the first valid padding record that
// starts in [from, to], or 0.
func paddingInside(s *durablelog.Scanner, from, to int64) (int64, error) {
	for p := from; p <= to && p+4 <= s.Size(); p++ {
		b, err := s.Read(p, 4)
		if err != nil {
			return 0, err
		}
		if binary.BigEndian.Uint32(b) != paddingMarkerBits {
			continue
		}
		_, reason, isCorrupt, err := checkPadding(s, p)
		if err != nil {
			return 0, err
		}
		if reason == "" && !isCorrupt {
			return p, nil
		}
	}
	return 0, nil
}
