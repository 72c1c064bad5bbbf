package snap

import (
	"bufio"
	"io"
	"sync"
)

// The 256 KiB buffers in front of a snapshot file are pooled. A member
// that snapshots often (and the simulator, whose members snapshot every
// few hundred transactions) would otherwise allocate and zero two for each
// file written or read, which was a fifth of the simulator's CPU.
var (
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, writeBufferBytes) }}

	readBuffers = sync.Pool{New: func() any {
		b := make([]byte, readBufferBytes)
		return &b
	}}
)

// getWriter returns a pooled writer of writeBufferBytes in front of w.
func getWriter(w io.Writer) *bufio.Writer {
	b := writers.Get().(*bufio.Writer)
	b.Reset(w)
	return b
}

// putWriter gives b back; whatever it still buffers is discarded, and it
// keeps no reference to its destination.
func putWriter(b *bufio.Writer) {
	b.Reset(nil)
	writers.Put(b)
}
