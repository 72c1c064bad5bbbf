package bookie

import (
	"bufio"
	"encoding/binary"
	"math/bits"
	"sync"

	"keeper/ledgerstore/bkproto"
)

// Request frames up to maxPooledFrameBytes are read into buffers from
// framePools, a pool per power of two from minPooledFrameBytes, so that
// the bytes of an add need not be copied out of the frame they came in:
// an add's body aliases its frame (bkproto.DecodeRequestAliased) until
// the journal has copied it into its write buffer, and only then does the
// frame go back to its pool (journalOp.release). A buffer fresh from the
// heap costs page faults on first touch; a pooled one is warm. Larger
// frames, rare, are read into a buffer of their own and left to the
// garbage collector.
const (
	minPooledFrameBytes = 512
	maxPooledFrameBytes = 64 << 10
)

// framePoolClasses is the number of pools: 512 B, 1 KiB, ..., 64 KiB.
const framePoolClasses = 8

var framePools [framePoolClasses]sync.Pool

// frameBuf is a pooled frame buffer, with the buffer an add read from it
// is decoded into (so that the decoded request is pooled with its frame:
// a fresh allocation per add costs its page faults). Its owner returns it
// with put, once, when nothing aliases it or refers to the request any
// more.
type frameBuf struct {
	b     []byte
	class int
	add   bkproto.AddBuffer
}

// poolClass returns the pool of frames of n bytes.
func poolClass(n int) int {
	if n <= minPooledFrameBytes {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(minPooledFrameBytes-1)
}

// getFrameBuf returns a buffer of at least n bytes, n ≤ maxPooledFrameBytes.
func getFrameBuf(n int) *frameBuf {
	class := poolClass(n)
	if fb, ok := framePools[class].Get().(*frameBuf); ok {
		return fb
	}
	return &frameBuf{b: make([]byte, minPooledFrameBytes<<class), class: class}
}

// put returns fb to its pool; nil does nothing.
func (fb *frameBuf) put() {
	if fb != nil {
		framePools[fb.class].Put(fb)
	}
}

// readFrame reads one request frame from r: into a pooled buffer, which it
// also returns, if the length prefix asks for at most maxPooledFrameBytes,
// else into a buffer of its own (fb nil). The caller owns fb.
func (c *conn) readFrame(r *bufio.Reader) (frame []byte, fb *frameBuf, err error) {
	if p, perr := r.Peek(bkproto.FrameLengthBytes); perr == nil {
		if n := int32(binary.BigEndian.Uint32(p)); n >= 0 && n <= maxPooledFrameBytes {
			fb = getFrameBuf(int(n))
		}
	}
	var buf []byte
	if fb != nil {
		buf = fb.b
	}
	frame, err = bkproto.ReadFrame(r, buf, c.b.cfg.MaxFrameBytes)
	if err != nil {
		fb.put()
		return nil, nil, err
	}
	return frame, fb, nil
}
