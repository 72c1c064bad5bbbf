package txnlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"io"

	"keeper/internal/durablelog"
)

// scanOptions names the txn log in the errors of its scanner.
var scanOptions = durablelog.Options{
	Prefix:    "txnlog",
	Noun:      "log",
	BadHeader: "not a txn log file: bad magic or version",
	Torn:      ErrTorn,
	Corrupt:   ErrCorrupt,
}

// newScanner returns a scanner of one log file: it checks framing only (the
// file header, lengths, checksums and end-of-record markers) and decides
// whether damage is a torn tail or corruption (see the package doc); zxids
// and payloads are the caller's business.
func newScanner(r io.ReaderAt, path string, size int64, last bool, maxRecordBytes int) *durablelog.Scanner {
	return durablelog.NewScanner(r, path, size, last, framing{maxRecordBytes: maxRecordBytes}, &scanOptions)
}

// framing is the txn log's record layout for durablelog.Scanner.
type framing struct{ maxRecordBytes int }

func (framing) HeaderBytes() int { return FileHeaderBytes }

// Header accepts any dbid; ZooKeeper's is 0.
func (framing) Header(h []byte) (int64, bool) {
	ok := binary.BigEndian.Uint32(h[0:4]) == Magic && binary.BigEndian.Uint32(h[4:8]) == Version
	return FileHeaderBytes, ok
}

func (framing) HeaderPrefix(b []byte) bool { return bytes.HasPrefix(fileHeader[:], b) }

func (f framing) Frame(s *durablelog.Scanner, off int64) (durablelog.Frame, error) {
	size := s.Size()
	if size-off < recordHeaderBytes {
		return durablelog.Frame{Verdict: durablelog.Damaged, End: size, Reason: "file ends inside a record header"}, nil
	}
	h, err := s.Read(off, recordHeaderBytes)
	if err != nil {
		return durablelog.Frame{}, err
	}
	sum, length := binary.BigEndian.Uint64(h[0:8]), int32(binary.BigEndian.Uint32(h[8:12]))
	if sum == 0 && length == 0 {
		return durablelog.Frame{Verdict: durablelog.EndMarker, Reason: "zero checksum and length (the end of the log)"}, nil
	}
	if length < 0 || int(length) > f.maxRecordBytes {
		// A torn length is a prefix of the real one with zeros after it,
		// so never larger: this one was damaged.
		return durablelog.Frame{Verdict: durablelog.Corrupt,
			Reason: fmt.Sprintf("record length %d out of range [0, %d]", length, f.maxRecordBytes)}, nil
	}
	// The record claims the bytes up to its 'B'; a torn one leaves zeros
	// from there on.
	markerOff := off + recordHeaderBytes + int64(length)
	if markerOff >= size {
		return durablelog.Frame{Verdict: durablelog.Damaged, End: markerOff,
			Reason: fmt.Sprintf("record of %d bytes runs past the end of the file", length)}, nil
	}
	rec, err := s.Read(off+recordHeaderBytes, int(length)+1)
	if err != nil {
		return durablelog.Frame{}, err
	}
	payload := rec[:length]
	switch {
	case rec[length] != EndOfRecord:
		return durablelog.Frame{Verdict: durablelog.Damaged, End: markerOff,
			Reason: fmt.Sprintf("no end-of-record marker at offset %d", markerOff)}, nil
	case uint64(adler32.Checksum(payload)) != sum:
		return durablelog.Frame{Verdict: durablelog.Damaged, End: markerOff, Reason: "checksum mismatch"}, nil
	}
	return durablelog.Frame{Verdict: durablelog.Whole, Body: payload, End: markerOff + 1}, nil
}

// DamagedLength reports whether the record at off, whose file's last
// non-zero byte is at q, is really complete for some shorter length: some
// 'B' at or before q ends a payload with the record's checksum. It returns
// the offset just past that 'B', or 0. That is a damaged length field
// (which may have swallowed the records after it), not a torn write; a torn
// payload matches its checksum this way with odds of about 2^-32.
// Checksums of all the prefixes come from one running Adler-32.
func (f framing) DamagedLength(s *durablelog.Scanner, off, q int64) (int64, error) {
	payloadOff := off + recordHeaderBytes
	if q < payloadOff {
		return 0, nil
	}
	n := min(q-payloadOff, int64(f.maxRecordBytes)) // candidate payload lengths 0..n
	rec, err := s.Read(off, int(recordHeaderBytes+n+1))
	if err != nil {
		return 0, err
	}
	sum := binary.BigEndian.Uint64(rec[0:8])
	const mod = 65521 // Adler-32's modulus
	a, b := uint32(1), uint32(0)
	for i, c := range rec[recordHeaderBytes:] {
		if c == EndOfRecord && uint64(b<<16|a) == sum {
			return payloadOff + int64(i) + 1, nil // payload rec[12 : 12+i] is complete
		}
		if int64(i) == n {
			break
		}
		a = (a + uint32(c)) % mod
		b = (b + a) % mod
	}
	return 0, nil
}
