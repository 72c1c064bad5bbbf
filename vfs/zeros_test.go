package vfs

import (
	"bytes"
	"errors"
	"io"
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

func TestLastNonZero(t *testing.T) {
	file := make([]byte, 2*ZeroScanBytes+100)
	file[10], file[ZeroScanBytes+5] = 1, 2
	r := bytes.NewReader(file)
	var scratch []byte
	for _, tc := range []struct{ from, end, want int64 }{
		{0, int64(len(file)), ZeroScanBytes + 5},
		{ZeroScanBytes + 6, int64(len(file)), -1},
		{0, ZeroScanBytes + 5, 10},
		{11, ZeroScanBytes + 5, -1},
		{5, 5, -1},
	} {
		got, err := LastNonZero(r, tc.from, tc.end, &scratch)
		if err != nil || got != tc.want {
			t.Errorf("LastNonZero(%d, %d) = %d, %v; want %d", tc.from, tc.end, got, err, tc.want)
		}
	}
	if _, err := LastNonZero(r, 0, int64(len(file))+10, &scratch); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("reading past the end: %v, want ErrUnexpectedEOF", err)
	}
}
