package vfs

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
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

// TestLastNonZeroSkipsHoles: an operating system file preallocated as the
// logs are (one byte written at the end) is read only where it has data,
// and gives the same answers as reading it all.
func TestLastNonZeroSkipsHoles(t *testing.T) {
	const size = 64 << 20
	f, err := Default.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := bytes.Repeat([]byte{7}, 300)
	for _, w := range []struct {
		b   []byte
		off int64
	}{{head, 0}, {[]byte{0}, size - 1}} {
		if _, err := f.WriteAt(w.b, w.off); err != nil {
			t.Fatal(err)
		}
	}
	counter := &countingReaderAt{File: f}
	var scratch []byte
	check := func(from, end, want int64) {
		t.Helper()
		counter.n = 0
		got, err := LastNonZero(osFileOf(t, f, counter), from, end, &scratch)
		if err != nil || got != want {
			t.Fatalf("LastNonZero(%d, %d) = %d, %v; want %d", from, end, got, err, want)
		}
		dense, err := lastNonZeroRead(f, from, end, &scratch)
		if err != nil || dense != want {
			t.Fatalf("reading it all: %d, %v; want %d", dense, err, want)
		}
	}
	check(0, size, 299)
	check(300, size, -1)
	if counter.n > 1<<20 {
		t.Errorf("read %d bytes of a sparse 64 MiB tail", counter.n)
	}
	if _, err := f.WriteAt([]byte{9}, 40<<20); err != nil {
		t.Fatal(err)
	}
	check(300, size, 40<<20)
	check(300, 40<<20, -1)
	if _, err := f.WriteAt([]byte{5}, size-1); err != nil {
		t.Fatal(err)
	}
	check(300, size, size-1)
	if _, err := LastNonZero(f, 0, size+10, &scratch); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("reading past the end: %v, want ErrUnexpectedEOF", err)
	}
	// The file's offset is where it was.
	buf := make([]byte, 3)
	if _, err := io.ReadFull(f, buf); err != nil || !bytes.Equal(buf, head[:3]) {
		t.Errorf("reading from the file's offset after the scans: %v, %v", buf, err)
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	File
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.File.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// osFileOf returns f with its reads counted, still finding data as f does.
func osFileOf(t *testing.T, f File, c *countingReaderAt) io.ReaderAt {
	t.Helper()
	df, ok := f.(dataFinder)
	if !ok {
		t.Skip("this platform's files do not report their data regions")
	}
	return struct {
		*countingReaderAt
		dataFinder
	}{c, df}
}
