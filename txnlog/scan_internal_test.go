package txnlog

import (
	"bytes"
	"testing"
)

func TestLastNonZeroIn(t *testing.T) {
	sizes := []int{0, 1, 63, 64, 65, zeroBlock - 1, zeroBlock, zeroBlock + 1, 3*zeroBlock + 17}
	for _, n := range sizes {
		if got := lastNonZeroIn(make([]byte, n)); got != -1 {
			t.Errorf("all zeros, len %d: got %d, want -1", n, got)
		}
		for _, at := range []int{0, 1, 62, 63, 64, 65, zeroBlock - 1, zeroBlock, n - 65, n - 64, n - 2, n - 1} {
			if at < 0 || at >= n {
				continue
			}
			b := make([]byte, n)
			b[at] = 7
			if at > 0 {
				b[0] = 1 // an earlier non-zero byte must not win
			}
			if got := lastNonZeroIn(b); got != at {
				t.Errorf("len %d, non-zero at %d: got %d", n, at, got)
			}
		}
	}
}

// TestLastNonZeroReadsOnce checks that the scanner answers later questions
// about the tail from what it found, and that the answers match a scan.
func TestLastNonZeroReadsOnce(t *testing.T) {
	file := make([]byte, 3*zeroScanBytes+100)
	file[10], file[zeroScanBytes+5] = 1, 2
	cases := []struct {
		name string
		from []int64
		want []int64
	}{
		{"descending", []int64{zeroScanBytes + 6, zeroScanBytes + 5, 11, 10, 0}, []int64{-1, zeroScanBytes + 5, zeroScanBytes + 5, zeroScanBytes + 5, zeroScanBytes + 5}},
		{"ascending", []int64{0, 11, zeroScanBytes + 5, zeroScanBytes + 6, int64(len(file))}, []int64{zeroScanBytes + 5, zeroScanBytes + 5, zeroScanBytes + 5, -1, -1}},
		{"zero tail first", []int64{2 * zeroScanBytes, zeroScanBytes + 6, 12, 5}, []int64{-1, -1, zeroScanBytes + 5, zeroScanBytes + 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &countingReader{r: bytes.NewReader(file)}
			s := newScanner(r, "f", int64(len(file)), true, 1<<20)
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
