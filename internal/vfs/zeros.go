package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// ZeroScanBytes is how much LastNonZero reads at a time: a preallocated
// log tail is tens of MiB of zeros, so few large reads beat many small ones.
const ZeroScanBytes = 1 << 20

// zeroBlock is the size of the slices compared against zeros at once.
const zeroBlock = 4 << 10

var zeros [zeroBlock]byte

// LastNonZero returns the offset of the last non-zero byte of r in
// [from, end), or -1 if they are all zero, reading backwards in chunks of
// up to ZeroScanBytes into *scratch (grown as needed and kept for the next
// call). A short read is an error wrapping io.ErrUnexpectedEOF. Log
// scanners use it to tell a preallocated, zero-filled tail from data
// after a damaged record.
//
// A file that can tell where its data lies (an operating system file on
// Linux, through SEEK_DATA and SEEK_HOLE) is read only where it has data:
// holes read as zeros, and a tail preallocated by writing its last byte is
// one, so its 64 MiB are not read at every start.
func LastNonZero(r io.ReaderAt, from, end int64, scratch *[]byte) (int64, error) {
	if df, ok := r.(dataFinder); ok {
		if q, ok, err := lastNonZeroInData(df, r, from, end, scratch); ok {
			return q, err
		}
	}
	return lastNonZeroRead(r, from, end, scratch)
}

// dataFinder is a file that reports its data regions; the rest are holes.
type dataFinder interface {
	// nextData returns the first data region at or after off, or io.EOF
	// when only holes follow.
	nextData(off int64) (start, end int64, err error)
	Stat() (os.FileInfo, error)
}

// lastNonZeroInData is LastNonZero reading only r's data regions. ok is
// false when the file cannot say (an error from the filesystem, or a range
// past its end, which lastNonZeroRead reports): then nothing is decided.
func lastNonZeroInData(df dataFinder, r io.ReaderAt, from, end int64, scratch *[]byte) (q int64, ok bool, err error) {
	info, err := df.Stat()
	if err != nil || end > info.Size() {
		return 0, false, nil
	}
	last := int64(-1)
	for off := from; off < end; {
		start, stop, err := df.nextData(off)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, false, nil
		}
		if start >= end {
			break
		}
		stop = min(max(stop, start+1), end)
		q, err := lastNonZeroRead(r, max(start, off), stop, scratch)
		if err != nil {
			return 0, true, err
		}
		if q >= 0 {
			last = q
		}
		off = stop
	}
	return last, true, nil
}

// lastNonZeroRead is LastNonZero reading every byte of [from, end).
func lastNonZeroRead(r io.ReaderAt, from, end int64, scratch *[]byte) (int64, error) {
	if want := min(end-from, ZeroScanBytes); int64(len(*scratch)) < want {
		*scratch = make([]byte, want)
	}
	for end > from {
		start := max(from, end-int64(len(*scratch)))
		buf := (*scratch)[:end-start]
		if n, err := r.ReadAt(buf, start); n < len(buf) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("read at offset %d: %w", start, err)
		}
		if i := lastNonZeroIn(buf); i >= 0 {
			return start + int64(i), nil
		}
		end = start
	}
	return -1, nil
}

// lastNonZeroIn returns the index of the last non-zero byte of b, or -1.
// Whole blocks are compared with bytes.Equal, which is vectorised; only the
// last block with data is looked at a byte at a time, in small pieces.
func lastNonZeroIn(b []byte) int {
	const piece = 64
	for end := len(b); end > 0; {
		start := max(0, end-zeroBlock)
		if bytes.Equal(b[start:end], zeros[:end-start]) {
			end = start
			continue
		}
		for pend := end; pend > start; pend -= piece {
			pstart := max(start, pend-piece)
			if bytes.Equal(b[pstart:pend], zeros[:pend-pstart]) {
				continue
			}
			for i := pend - 1; ; i-- {
				if b[i] != 0 {
					return i
				}
			}
		}
	}
	return -1
}
