package bkproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"google.golang.org/protobuf/proto"
)

// FrameLengthBytes is the size of the length prefix of every frame.
const FrameLengthBytes = 4

// DefaultMaxFrameBytes is the default bound on a frame's length field:
// BookKeeper's nettyMaxFrameSizeBytes default of 5 MiB (docs/bookkeeper-protocol.md §6, §12). It
// also caps the size of an entry. (Netty counts the 4-byte prefix against
// the limit too, so a sender that must also suit Java bookies keeps frames
// at most DefaultMaxFrameBytes-FrameLengthBytes long.)
const DefaultMaxFrameBytes = 5 << 20

// readChunkBytes is how much ReadFrame allocates ahead of the bytes that have
// actually arrived. A length prefix alone therefore cannot make it allocate
// the whole frame limit; a peer has to send the bytes.
const readChunkBytes = 64 << 10

// ErrFrameTooLarge means a frame's length prefix was negative or above the
// frame limit. The connection cannot be resynchronised, so it is closed.
var ErrFrameTooLarge = errors.New("bkproto: frame length out of range")

// AppendFrame marshals m and appends it to dst with its 4-byte big-endian
// length prefix, returning the extended slice. It fails if a required field
// of m is unset (proto2 `required`) or the message does not fit a frame
// length. It does not apply a frame limit; the caller compares the result's
// length with its own.
func AppendFrame(dst []byte, m proto.Message) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, m)
	if err != nil {
		return dst[:start], fmt.Errorf("bkproto: marshal %T: %w", m, err)
	}
	n := len(dst) - start - FrameLengthBytes
	if n > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

// ParseFrameLength validates a 4-byte big-endian length prefix: as a signed
// int32 it must be in [0, maxFrameBytes]. maxFrameBytes <= 0 means
// DefaultMaxFrameBytes.
func ParseFrameLength(prefix [FrameLengthBytes]byte, maxFrameBytes int) (int, error) {
	if maxFrameBytes <= 0 {
		maxFrameBytes = DefaultMaxFrameBytes
	}
	n := int32(binary.BigEndian.Uint32(prefix[:]))
	if n < 0 || int64(n) > int64(maxFrameBytes) {
		return 0, fmt.Errorf("%w: %d, allowed [0, %d]", ErrFrameTooLarge, n, maxFrameBytes)
	}
	return int(n), nil
}

// ReadFrame reads one frame from r and returns its contents without the
// length prefix. maxFrameBytes <= 0 means DefaultMaxFrameBytes. The length
// is checked before anything is allocated, and the contents are read in
// chunks, so memory grows only with the bytes that actually arrive. The
// frame is read into buf when it fits (then it aliases buf and is valid
// until buf is reused) and into a new slice otherwise.
//
// ReadFrame returns io.EOF, unwrapped, if r ends cleanly before a frame; an
// error wrapping io.ErrUnexpectedEOF if it ends inside one; one wrapping
// ErrFrameTooLarge for a bad length; and other errors from r as they come.
func ReadFrame(r io.Reader, buf []byte, maxFrameBytes int) ([]byte, error) {
	var prefix [FrameLengthBytes]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("bkproto: read frame length: %w", err)
	}
	n, err := ParseFrameLength(prefix, maxFrameBytes)
	if err != nil {
		return nil, err
	}
	if n <= cap(buf) {
		frame := buf[:n]
		if _, err := io.ReadFull(r, frame); err != nil {
			return nil, frameReadError(n, err)
		}
		return frame, nil
	}
	frame := make([]byte, 0, min(n, readChunkBytes))
	for len(frame) < n {
		if len(frame) == cap(frame) {
			frame = slices.Grow(frame, min(n-len(frame), cap(frame))) // doubling
		}
		m, err := io.ReadFull(r, frame[len(frame):min(n, cap(frame))])
		frame = frame[:len(frame)+m]
		if err != nil {
			return nil, frameReadError(n, err)
		}
	}
	return frame, nil
}

// frameReadError wraps an error met inside a frame of n bytes; a clean EOF
// there is an unexpected one.
func frameReadError(n int, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("bkproto: read frame of %d bytes: %w", n, err)
}
