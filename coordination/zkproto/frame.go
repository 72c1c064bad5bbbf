package zkproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"keeper/coordination/jute"
)

// FrameLengthLen is the size of the length prefix of every frame.
const FrameLengthLen = 4

// ErrFrameTooLarge means a frame's length prefix was negative or above the
// allowed maximum. The server closes the connection, as the Java server does
// (docs/zookeeper-protocol.md §1.1); the name follows the common case.
var ErrFrameTooLarge = errors.New("zkproto: frame length out of range")

// ParseFrameLength validates a 4-byte big-endian length prefix: it must be in
// [0, maxLen]. maxLen <= 0 means jute.DefaultMaxBuffer. A server reads the
// first 4 bytes of a connection itself, checks IsFourLetterWord, and then
// uses ParseFrameLength; later frames go through ReadFrame.
func ParseFrameLength(prefix [FrameLengthLen]byte, maxLen int) (int, error) {
	if maxLen <= 0 {
		maxLen = jute.DefaultMaxBuffer
	}
	n := int32(binary.BigEndian.Uint32(prefix[:]))
	if n < 0 || int64(n) > int64(maxLen) {
		return 0, fmt.Errorf("%w: %d, allowed [0, %d]", ErrFrameTooLarge, n, maxLen)
	}
	return int(n), nil
}

// ReadFrame reads one frame from r and returns its payload, without the
// length prefix. The length is checked with ParseFrameLength before anything
// is allocated, so a hostile prefix costs at most maxLen bytes. The payload
// is read into buf when it fits (then it aliases buf and is valid until buf
// is reused) and into a new slice otherwise.
//
// ReadFrame returns io.EOF, unwrapped, if r ends cleanly before a frame; an
// error wrapping io.ErrUnexpectedEOF if it ends inside one; one wrapping
// ErrFrameTooLarge for a bad length; and other errors from r as they come.
func ReadFrame(r io.Reader, buf []byte, maxLen int) ([]byte, error) {
	if cap(buf) < FrameLengthLen {
		buf = make([]byte, 0, FrameLengthLen)
	}
	prefix := buf[:FrameLengthLen]
	if _, err := io.ReadFull(r, prefix); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("zkproto: read frame length: %w", err)
	}
	n, err := ParseFrameLength([FrameLengthLen]byte(prefix), maxLen)
	if err != nil {
		return nil, err
	}
	var payload []byte
	if n <= cap(buf) {
		payload = buf[:n]
	} else {
		payload = make([]byte, n)
	}
	if _, err := io.ReadFull(r, payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("zkproto: read frame of %d bytes: %w", n, err)
	}
	return payload, nil
}

// AppendFrame appends payload with its 4-byte big-endian length prefix to
// dst and returns the extended slice.
func AppendFrame(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// IsFourLetterWord reports whether the first 4 bytes of a new connection
// name a four-letter-word command (docs/zookeeper-protocol.md §8.1), and returns its name. Each
// of these words, read as a length, is far above any frame limit, so they
// cannot be mistaken for a ConnectRequest. Whether the command is enabled
// is the caller's decision (the 4lw whitelist).
func IsFourLetterWord(first4 [4]byte) (string, bool) {
	switch w := string(first4[:]); w {
	case "ruok", "stat", "srvr", "cons", "crst", "srst", "envi", "conf",
		"wchs", "wchc", "wchp", "dump", "isro", "dirs", "mntr", "gtmk",
		"stmk", "hash":
		return w, true
	}
	return "", false
}
