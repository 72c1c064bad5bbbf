package snap

import (
	"hash"
	"hash/adler32"
	"io"
)

// sumWriter passes bytes on and keeps the Adler-32 of all of them, as
// Java's CheckedOutputStream does.
type sumWriter struct {
	w io.Writer
	h hash.Hash32
}

func (s *sumWriter) Write(p []byte) (int, error) {
	s.h.Write(p) // never fails
	return s.w.Write(p)
}

// sumReader is a buffered reader that keeps the Adler-32 of the bytes
// consumed from it (not of those merely buffered), as Java's
// CheckedInputStream under a BinaryInputArchive does. The checksum is
// brought up to date lazily, on refill and by sum, so each small read costs
// only a copy.
type sumReader struct {
	src    io.Reader
	h      hash.Hash32
	buf    []byte
	r, w   int   // buf[r:w] is unread
	summed int   // buf[:summed] has been added to h; summed <= r
	base   int64 // bytes consumed before buf[0]
	err    error // sticky error from src, io.EOF included
}

func newSumReader(src io.Reader, bufBytes int) *sumReader {
	if bufBytes == readBufferBytes {
		return &sumReader{src: src, h: adler32.New(), buf: *readBuffers.Get().(*[]byte)}
	}
	return &sumReader{src: src, h: adler32.New(), buf: make([]byte, max(bufBytes, 16))}
}

// release gives a pooled buffer back. The reader is not used after it:
// Read copies out of the buffer, so nothing read keeps a reference to it.
func (s *sumReader) release() {
	if len(s.buf) == readBufferBytes {
		b := s.buf
		s.buf = nil
		readBuffers.Put(&b)
	}
}

func (s *sumReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.r == s.w {
		s.fill()
		if s.r == s.w {
			return 0, s.err
		}
	}
	n := copy(p, s.buf[s.r:s.w])
	s.r += n
	return n, nil
}

// fill checksums the consumed bytes and refills the empty buffer.
func (s *sumReader) fill() {
	s.h.Write(s.buf[s.summed:s.r])
	s.base += int64(s.r)
	s.r, s.w, s.summed = 0, 0, 0
	for tries := 0; s.w == 0 && s.err == nil; tries++ {
		if tries == 100 {
			s.err = io.ErrNoProgress
			break
		}
		s.w, s.err = s.src.Read(s.buf)
	}
}

// sum returns the Adler-32 of every byte consumed so far.
func (s *sumReader) sum() uint32 {
	s.h.Write(s.buf[s.summed:s.r])
	s.summed = s.r
	return s.h.Sum32()
}

// offset returns the number of bytes consumed so far.
func (s *sumReader) offset() int64 { return s.base + int64(s.r) }

// adlerUpdate continues the Adler-32 checksum v over p.
func adlerUpdate(v uint32, p []byte) uint32 {
	const mod = 65521
	s1, s2 := v&0xffff, v>>16
	for _, b := range p {
		s1 = (s1 + uint32(b)) % mod
		s2 = (s2 + s1) % mod
	}
	return s2<<16 | s1
}
