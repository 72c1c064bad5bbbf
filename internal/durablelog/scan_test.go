package durablelog_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"keeper/internal/durablelog"
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func zeros(n int) []byte { return make([]byte, n) }

// TestScannerEnds runs the rules of the package doc over the toy format:
// each file ends cleanly, with a torn tail, or is corrupt at an offset.
func TestScannerEnds(t *testing.T) {
	h := []byte(toyHeader)
	a, b := toyRecord("alpha"), toyRecord("bravo")
	offB := int64(len(h) + len(a))           // where b starts after a
	torn := func(rec []byte, n int) []byte { // rec cut to n bytes, the rest zero
		return cat(rec[:n], zeros(len(rec)-n))
	}
	swallow := slices.Clone(a) // a's length grown to cover b
	swallow[1] = byte(len("alpha") + len(b))
	long := toyRecord(strings.Repeat("x", 300)) // its length's first byte is not zero
	flipped := slices.Clone(b)
	flipped[len(flipped)-1] ^= 1

	tests := []struct {
		name    string
		file    []byte
		notLast bool
		want    []string
		err     error // nil: a clean end
		offset  int64 // of the damage
		reason  string
	}{
		{name: "header only", file: h},
		{name: "records", file: cat(h, a, b), want: []string{"alpha", "bravo"}},
		{name: "zero tail", file: cat(h, a, b, zeros(4096)), want: []string{"alpha", "bravo"}},
		{name: "end marker then zeros", file: cat(h, a, zeros(2)), want: []string{"alpha"}},
		{name: "padding skipped", file: cat(h, a, []byte{0xff, 0xff}, b), want: []string{"alpha", "bravo"}},
		{name: "one zero byte left", file: cat(h, a, zeros(1)), want: []string{"alpha"}},

		{name: "empty file", file: nil, err: errToyTorn, reason: "incomplete file header (0 bytes written)"},
		{name: "all-zero file", file: zeros(100), err: errToyTorn, reason: "incomplete file header"},
		{name: "header cut short", file: cat(h[:3], zeros(50)), err: errToyTorn, reason: "(3 bytes written)"},
		{name: "header cut short, not last", file: h[:3], notLast: true, err: errToyCorrupt, reason: "not the log's last"},
		{name: "wrong header", file: cat([]byte("TOYLOG02"), a), err: errToyCorrupt, reason: "not a toy log"},
		{name: "header prefix, then data", file: cat(h[:3], zeros(20), []byte{1}), err: errToyCorrupt, reason: "not a toy log"},

		{name: "record cut at the end of the file", file: cat(h, a, b[:7]), want: []string{"alpha"}, err: errToyTorn, offset: offB, reason: "runs past the end"},
		{name: "record cut in its length", file: cat(h, a, long[:1]), want: []string{"alpha"}, err: errToyTorn, offset: offB, reason: "short length"},
		{name: "record torn into the zero tail", file: cat(h, a, torn(b, 8), zeros(100)), want: []string{"alpha"}, err: errToyTorn, offset: offB, reason: "checksum mismatch"},
		{name: "torn record, not last", file: cat(h, a, torn(b, 8)), notLast: true, want: []string{"alpha"}, err: errToyCorrupt, offset: offB, reason: "torn record in a file that is not the log's last: checksum mismatch"},
		{name: "damage, then data", file: cat(h, a, flipped, toyRecord("charlie")), want: []string{"alpha"}, err: errToyCorrupt, offset: offB, reason: "checksum mismatch, and data follows up to offset"},
		{name: "data after the end marker", file: cat(h, a, zeros(10), []byte{7}, zeros(10)), want: []string{"alpha"}, err: errToyCorrupt, offset: offB, reason: "zero length followed by data up to offset"},
		{name: "length out of range", file: cat(h, a, []byte{0xff, 0x00}, zeros(10)), want: []string{"alpha"}, err: errToyCorrupt, offset: offB, reason: "above the limit"},
		{name: "length field damaged", file: cat(h, swallow, b, zeros(10)), err: errToyCorrupt, offset: int64(len(h)), reason: "its length field is damaged (a complete record ends at offset"},
		{name: "last record damaged, nothing after", file: cat(h, a, flipped), want: []string{"alpha"}, err: errToyTorn, offset: offB, reason: "checksum mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := toyScan(tt.file, !tt.notLast)
			if !slices.Equal(got, tt.want) {
				t.Errorf("read %q, want %q", got, tt.want)
			}
			if tt.err == nil {
				if err != nil {
					t.Fatalf("err = %v, want a clean end", err)
				}
				return
			}
			var rerr *durablelog.RecordError
			if !errors.Is(err, tt.err) || !errors.As(err, &rerr) {
				t.Fatalf("err = %v, want a *RecordError matching %v", err, tt.err)
			}
			if rerr.File != "f" || rerr.Offset != tt.offset || !strings.Contains(rerr.Reason, tt.reason) {
				t.Errorf("err = %v, want offset %d and a reason containing %q", err, tt.offset, tt.reason)
			}
		})
	}
}

// TestScannerReadFailure checks that a read error is returned as it is, not
// judged as damage.
func TestScannerReadFailure(t *testing.T) {
	file := cat([]byte(toyHeader), toyRecord("alpha"))
	s := durablelog.NewScanner(shortReader{bytes.NewReader(file)}, "f", int64(len(file))+100, true, toyFraming{}, &toyOptions)
	err := s.ReadHeader()
	for err == nil {
		_, err = s.Next()
	}
	var rerr *durablelog.RecordError
	if err == nil || errors.As(err, &rerr) || !strings.HasPrefix(err.Error(), "toy: ") {
		t.Fatalf("err = %v, want an I/O error", err)
	}
}

// shortReader is a file that shrank after its size was taken.
type shortReader struct{ r *bytes.Reader }

func (s shortReader) ReadAt(p []byte, off int64) (int, error) { return s.r.ReadAt(p, off) }

// TestScannerStartAt checks that a scan can start at a known boundary.
func TestScannerStartAt(t *testing.T) {
	a := toyRecord("alpha")
	file := cat([]byte(toyHeader), a, toyRecord("bravo"))
	s := durablelog.NewScanner(bytes.NewReader(file), "f", int64(len(file)), true, toyFraming{}, &toyOptions)
	if err := s.ReadHeader(); err != nil {
		t.Fatal(err)
	}
	s.StartAt(int64(len(toyHeader) + len(a)))
	body, err := s.Next()
	if err != nil || string(body) != "bravo" || s.RecordOffset() != int64(len(toyHeader)+len(a)) || s.Offset() != int64(len(file)) {
		t.Fatalf("Next = %q, %v at %d..%d", body, err, s.RecordOffset(), s.Offset())
	}
}
