package jute

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// DefaultMaxBuffer is ZooKeeper's default jute.maxbuffer: the largest frame a
// server accepts and the largest buffer or string a record may hold.
const DefaultMaxBuffer = 0xfffff

var (
	// ErrShort means the input ended inside a value.
	ErrShort = errors.New("jute: input too short")
	// ErrLength means a length or count field was negative (other than the
	// null marker -1) or larger than allowed.
	ErrLength = errors.New("jute: unreasonable length")
	// ErrTrailing means a record was followed by bytes it does not define.
	ErrTrailing = errors.New("jute: trailing bytes after record")
)

// Record is a jute record: a struct encoded as its fields in order.
type Record interface {
	Encode(e *Encoder)
	Decode(d *Decoder)
}

// Encoder appends jute values to B. The zero value is ready to use.
type Encoder struct {
	B []byte
}

// Byte appends one byte.
func (e *Encoder) Byte(v byte) { e.B = append(e.B, v) }

// Bool appends a boolean as 0 or 1.
func (e *Encoder) Bool(v bool) {
	if v {
		e.B = append(e.B, 1)
	} else {
		e.B = append(e.B, 0)
	}
}

// Int appends a 4-byte big-endian int.
func (e *Encoder) Int(v int32) { e.B = binary.BigEndian.AppendUint32(e.B, uint32(v)) }

// Long appends an 8-byte big-endian long.
func (e *Encoder) Long(v int64) { e.B = binary.BigEndian.AppendUint64(e.B, uint64(v)) }

// Buffer appends a length-prefixed buffer; nil is written as the null buffer
// (length -1), an empty non-nil slice as length 0.
func (e *Encoder) Buffer(v []byte) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	e.B = append(e.B, v...)
}

// String appends a length-prefixed UTF-8 string. The empty string is written
// with length 0; ZooKeeper readers treat it like the null string.
func (e *Encoder) String(v string) {
	e.Int(int32(len(v)))
	e.B = append(e.B, v...)
}

// VectorLen appends a vector's count; a nil vector is written as -1.
// Pass isNil = (slice == nil) so that null and empty vectors stay distinct.
func (e *Encoder) VectorLen(n int, isNil bool) {
	if isNil {
		e.Int(-1)
		return
	}
	e.Int(int32(n))
}

// Strings appends a vector of strings.
func (e *Encoder) Strings(v []string) {
	e.VectorLen(len(v), v == nil)
	for _, s := range v {
		e.String(s)
	}
}

// Record appends r.
func (e *Encoder) Record(r Record) { r.Encode(e) }

// Decoder reads jute values from a byte slice. Buffers it returns are copies,
// so they stay valid after the input is reused.
type Decoder struct {
	b      []byte
	off    int
	err    error
	maxLen int
}

// NewDecoder returns a Decoder over b that rejects any buffer, string or
// vector longer than maxLen (in bytes or elements). maxLen <= 0 means
// DefaultMaxBuffer.
func NewDecoder(b []byte, maxLen int) *Decoder {
	if maxLen <= 0 {
		maxLen = DefaultMaxBuffer
	}
	return &Decoder{b: b, maxLen: maxLen}
}

// Reset makes d read from b, clearing any error.
func (d *Decoder) Reset(b []byte) { d.b, d.off, d.err = b, 0, nil }

// Err returns the first error the decoder met, or nil.
func (d *Decoder) Err() error { return d.err }

// Offset returns the number of bytes consumed so far.
func (d *Decoder) Offset() int { return d.off }

// Remaining returns the number of bytes not yet read.
func (d *Decoder) Remaining() int { return len(d.b) - d.off }

// Rest returns the unread bytes without copying and consumes them.
func (d *Decoder) Rest() []byte {
	r := d.b[d.off:]
	d.off = len(d.b)
	return r
}

// Fail records err as the decoder's error unless one is already recorded.
// Record decoders use it to report semantic problems (a bad enum value).
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Finish reports an error if bytes remain after a record, else Err().
func (d *Decoder) Finish() error {
	if d.err == nil && d.off != len(d.b) {
		d.err = fmt.Errorf("%w: %d bytes at offset %d", ErrTrailing, len(d.b)-d.off, d.off)
	}
	return d.err
}

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b)-d.off {
		d.err = fmt.Errorf("%w: need %d bytes at offset %d, have %d", ErrShort, n, d.off, len(d.b)-d.off)
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	p := d.take(1)
	if p == nil {
		return 0
	}
	return p[0]
}

// Bool reads a boolean; any non-zero byte is true, as in Java's reader.
func (d *Decoder) Bool() bool { return d.Byte() != 0 }

// Int reads a 4-byte big-endian int.
func (d *Decoder) Int() int32 {
	p := d.take(4)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

// Long reads an 8-byte big-endian long.
func (d *Decoder) Long() int64 {
	p := d.take(8)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

// length reads a length field. It returns -1 for null, and fails unless the
// length is -1 or within [0, maxLen] and at most the remaining bytes divided
// by minElemBytes.
func (d *Decoder) length(minElemBytes int) int {
	start := d.off
	n := d.Int()
	if d.err != nil {
		return -1
	}
	if n == -1 {
		return -1
	}
	if n < 0 || int(n) > d.maxLen || int(n)*minElemBytes > len(d.b)-d.off {
		d.Fail(fmt.Errorf("%w: %d at offset %d", ErrLength, n, start))
		return -1
	}
	return int(n)
}

// Buffer reads a buffer; the null buffer is returned as nil and an empty one
// as a non-nil empty slice. The result is a copy.
func (d *Decoder) Buffer() []byte {
	n := d.length(1)
	if n < 0 {
		return nil
	}
	p := d.take(n)
	if p == nil {
		return nil
	}
	out := make([]byte, n)
	copy(out, p)
	return out
}

// String reads a string; the null string reads as "".
func (d *Decoder) String() string {
	n := d.length(1)
	if n < 0 {
		return ""
	}
	return string(d.take(n))
}

// VectorLen reads a vector count: -1 for a null vector, otherwise a count
// that is guaranteed to fit in the remaining bytes when each element takes
// at least minElemBytes. On error it returns -1, so loops do not run.
func (d *Decoder) VectorLen(minElemBytes int) int {
	if minElemBytes < 1 {
		minElemBytes = 1
	}
	return d.length(minElemBytes)
}

// Strings reads a vector of strings; a null vector reads as nil.
func (d *Decoder) Strings() []string {
	n := d.VectorLen(4)
	if n < 0 {
		return nil
	}
	out := make([]string, 0, n)
	for range n {
		out = append(out, d.String())
		if d.err != nil {
			return nil
		}
	}
	return out
}

// Record decodes r in place.
func (d *Decoder) Record(r Record) { r.Decode(d) }

// Marshal returns the encoding of r.
func Marshal(r Record) []byte {
	var e Encoder
	r.Encode(&e)
	return e.B
}

// Unmarshal decodes b into r, rejecting trailing bytes. maxLen bounds every
// length inside (see NewDecoder).
func Unmarshal(b []byte, r Record, maxLen int) error {
	d := NewDecoder(b, maxLen)
	r.Decode(d)
	return d.Finish()
}
