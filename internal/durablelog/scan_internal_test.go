package durablelog

import (
	"bytes"
	"testing"

	"keeper/internal/vfs"
)

// TestLastNonZeroReadsOnce checks that the scanner answers later questions
// about the tail from what it found, and that the answers match a scan.
func TestLastNonZeroReadsOnce(t *testing.T) {
	file := make([]byte, 3*vfs.ZeroScanBytes+100)
	file[10], file[vfs.ZeroScanBytes+5] = 1, 2
	cases := []struct {
		name string
		from []int64
		want []int64
	}{
		{"descending", []int64{vfs.ZeroScanBytes + 6, vfs.ZeroScanBytes + 5, 11, 10, 0}, []int64{-1, vfs.ZeroScanBytes + 5, vfs.ZeroScanBytes + 5, vfs.ZeroScanBytes + 5, vfs.ZeroScanBytes + 5}},
		{"ascending", []int64{0, 11, vfs.ZeroScanBytes + 5, vfs.ZeroScanBytes + 6, int64(len(file))}, []int64{vfs.ZeroScanBytes + 5, vfs.ZeroScanBytes + 5, vfs.ZeroScanBytes + 5, -1, -1}},
		{"zero tail first", []int64{2 * vfs.ZeroScanBytes, vfs.ZeroScanBytes + 6, 12, 5}, []int64{-1, -1, vfs.ZeroScanBytes + 5, vfs.ZeroScanBytes + 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &countingReader{r: bytes.NewReader(file)}
			s := NewScanner(r, "f", int64(len(file)), true, nil, &Options{Prefix: "test"})
			for i, from := range tc.from {
				got, err := s.lastNonZero(from)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want[i] {
					t.Errorf("lastNonZero(%d) = %d, want %d", from, got, tc.want[i])
				}
			}
			if r.bytes > int64(len(file)) {
				t.Errorf("read %d bytes of a %d-byte file", r.bytes, len(file))
			}
		})
	}
}

type countingReader struct {
	r     *bytes.Reader
	bytes int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.bytes += int64(n)
	return n, err
}
