package datatree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// growBytes is the most a bodyReader allocates ahead of bytes it has read.
const growBytes = 64 << 10

// bodyReader decodes jute values from a stream with a sticky error, like
// jute.Decoder does from a slice. It reads exactly the bytes it decodes.
type bodyReader struct {
	r       io.Reader
	maxLen  int
	off     int64 // bytes consumed, for error messages
	err     error
	scratch [68]byte
	sbuf    []byte // reused by string
}

func (b *bodyReader) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// read fills p, failing with jute.ErrShort if the stream ends first.
func (b *bodyReader) read(p []byte) bool {
	if b.err != nil {
		return false
	}
	n, err := io.ReadFull(b.r, p)
	b.off += int64(n)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		b.fail(fmt.Errorf("%w: snapshot body ends at offset %d", jute.ErrShort, b.off))
	case err != nil:
		b.fail(fmt.Errorf("datatree: read snapshot body at offset %d: %w", b.off, err))
	}
	return b.err == nil
}

func (b *bodyReader) int32() int32 {
	if !b.read(b.scratch[:4]) {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b.scratch[:4]))
}

func (b *bodyReader) int64() int64 {
	if !b.read(b.scratch[:8]) {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b.scratch[:8]))
}

// length reads a length or count: -1 for null, else 0..maxLen.
func (b *bodyReader) length() int {
	at := b.off
	n := b.int32()
	if b.err != nil {
		return -1
	}
	if n < -1 || int(n) > b.maxLen {
		b.fail(fmt.Errorf("%w: %d at offset %d", jute.ErrLength, n, at))
		return -1
	}
	return int(n)
}

// bytes reads a buffer; null reads as nil.
func (b *bodyReader) bytes() []byte {
	n := b.length()
	if n < 0 {
		return nil
	}
	return b.take(n)
}

// take reads n bytes into a new slice. The allocation grows with the bytes
// actually read, so a corrupt length cannot reserve maxLen up front.
func (b *bodyReader) take(n int) []byte {
	out := make([]byte, 0, min(n, growBytes))
	for len(out) < n && b.err == nil {
		chunk := min(n-len(out), growBytes)
		out = slices.Grow(out, chunk)
		b.read(out[len(out) : len(out)+chunk])
		out = out[:len(out)+chunk]
	}
	if b.err != nil {
		return nil
	}
	return out
}

// string reads a ustring; null reads as "". Short strings go through a
// reused buffer so that only the string itself is allocated.
func (b *bodyReader) string() string {
	n := b.length()
	if n <= 0 {
		return ""
	}
	if n > growBytes {
		return string(b.take(n))
	}
	b.sbuf = slices.Grow(b.sbuf[:0], n)[:n]
	if !b.read(b.sbuf) {
		return ""
	}
	return string(b.sbuf)
}

// acls reads a vector of ACLs, reporting a null vector separately.
func (b *bodyReader) acls() (acls []zkproto.ACL, isNull bool) {
	n := b.length()
	if n < 0 {
		return nil, b.err == nil
	}
	acls = make([]zkproto.ACL, 0, min(n, 16))
	for range n {
		var a zkproto.ACL
		a.Perms = b.int32()
		a.ID.Scheme = b.string()
		a.ID.ID = b.string()
		if b.err != nil {
			return nil, false
		}
		acls = append(acls, a)
	}
	return acls, false
}

// refAndStat reads a node's ACL reference and its 60-byte StatPersisted,
// which follow each other, in one read.
func (b *bodyReader) refAndStat(n *Node) {
	p := b.scratch[:68]
	if !b.read(p) {
		return
	}
	be := binary.BigEndian
	n.aclRef = int64(be.Uint64(p[0:]))
	s := &n.stat
	s.Czxid = int64(be.Uint64(p[8:]))
	s.Mzxid = int64(be.Uint64(p[16:]))
	s.Ctime = int64(be.Uint64(p[24:]))
	s.Mtime = int64(be.Uint64(p[32:]))
	s.Version = int32(be.Uint32(p[40:]))
	s.Cversion = int32(be.Uint32(p[44:]))
	s.Aversion = int32(be.Uint32(p[48:]))
	s.EphemeralOwner = int64(be.Uint64(p[52:]))
	s.Pzxid = int64(be.Uint64(p[60:]))
}
