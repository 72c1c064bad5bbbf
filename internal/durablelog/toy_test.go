package durablelog_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"keeper/internal/durablelog"
)

// The toy format the tests scan: the header "TOYLOG01"; then records of a
// length u16, a CRC-32 (IEEE) of the body u32 and the body. A length of 0
// is the end marker; 0xFFFF is a two-byte padding record the reader steps
// over. It exercises every verdict a Framing can give.
const (
	toyHeader    = "TOYLOG01"
	toyRecHeader = 6
	toyPad       = 0xFFFF
	toyMaxBody   = 1000
)

var (
	errToyTorn    = errors.New("toy: torn")
	errToyCorrupt = errors.New("toy: corrupt")
	toyOptions    = durablelog.Options{Prefix: "toy", Noun: "log", BadHeader: "not a toy log", Torn: errToyTorn, Corrupt: errToyCorrupt}
)

type toyFraming struct{}

func (toyFraming) HeaderBytes() int { return len(toyHeader) }

func (toyFraming) Header(h []byte) (int64, bool) {
	return int64(len(toyHeader)), string(h) == toyHeader
}

func (toyFraming) HeaderPrefix(b []byte) bool { return bytes.HasPrefix([]byte(toyHeader), b) }

func (toyFraming) Frame(s *durablelog.Scanner, off int64) (durablelog.Frame, error) {
	if s.Size()-off < 2 {
		return durablelog.Frame{Verdict: durablelog.Damaged, End: s.Size(), Reason: "short length"}, nil
	}
	h, err := s.Read(off, 2)
	if err != nil {
		return durablelog.Frame{}, err
	}
	n := int64(binary.BigEndian.Uint16(h))
	switch {
	case n == 0:
		return durablelog.Frame{Verdict: durablelog.EndMarker, Reason: "zero length"}, nil
	case n == toyPad:
		return durablelog.Frame{Verdict: durablelog.Skip, End: off + 2}, nil
	case n > toyMaxBody:
		return durablelog.Frame{Verdict: durablelog.Corrupt, Reason: fmt.Sprintf("length %d above the limit", n)}, nil
	}
	end := off + toyRecHeader + n
	if end > s.Size() {
		return durablelog.Frame{Verdict: durablelog.Damaged, End: end, Reason: "runs past the end"}, nil
	}
	rec, err := s.Read(off, int(toyRecHeader+n))
	if err != nil {
		return durablelog.Frame{}, err
	}
	body := rec[toyRecHeader:]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(rec[2:6]) {
		return durablelog.Frame{Verdict: durablelog.Damaged, End: end, Reason: "checksum mismatch"}, nil
	}
	return durablelog.Frame{Verdict: durablelog.Whole, Body: body, End: end}, nil
}

// DamagedLength finds a shorter body with the record's checksum.
func (toyFraming) DamagedLength(s *durablelog.Scanner, off, q int64) (int64, error) {
	n := min(q-off-toyRecHeader, toyMaxBody)
	if n < 1 {
		return 0, nil
	}
	rec, err := s.Read(off, int(toyRecHeader+n))
	if err != nil {
		return 0, err
	}
	want := binary.BigEndian.Uint32(rec[2:6])
	var sum uint32
	for i, c := range rec[toyRecHeader:] {
		sum = crc32.Update(sum, crc32.IEEETable, []byte{c})
		if sum == want {
			return off + toyRecHeader + int64(i) + 1, nil
		}
	}
	return 0, nil
}

// toyRecord frames body as one toy record.
func toyRecord(body string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(body)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE([]byte(body)))
	return append(b, body...)
}

// toyScan reads a whole toy file and returns the bodies read and the error
// that stopped it (nil at a clean end).
func toyScan(file []byte, last bool) ([]string, error) {
	s := durablelog.NewScanner(bytes.NewReader(file), "f", int64(len(file)), last, toyFraming{}, &toyOptions)
	if err := s.ReadHeader(); err != nil {
		return nil, err
	}
	var got []string
	for {
		body, err := s.Next()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, string(body))
	}
}
