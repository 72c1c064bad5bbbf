package txn

import (
	"errors"
	"fmt"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// Sizes of the fixed parts of a payload.
const (
	HeaderSize = 32 // TxnHeader
	DigestSize = 12 // TxnDigest
)

// DigestVersion is the TxnDigest version ZooKeeper 3.6+ writes: the tree
// digest of docs/zookeeper-protocol.md §9.5.
const DigestVersion int32 = 2

// ErrUnknownType means a payload's header (or a multi sub-txn) names a type
// that has no replayable record. This includes check(13) outside a multi,
// which ZooKeeper 3.4–3.9 can log but never replay.
var ErrUnknownType = errors.New("txn: unknown txn type")

// Header is TxnHeader, the first 32 bytes of every payload.
type Header struct {
	ClientID int64 // the session that issued the request
	Cxid     int32 // the client's xid for the request
	Zxid     zxid.ID
	Time     int64 // ms since the Unix epoch, from the leader's clock
	Type     zkproto.Op
}

// Encode implements jute.Record.
func (h *Header) Encode(e *jute.Encoder) {
	e.Long(h.ClientID)
	e.Int(h.Cxid)
	e.Long(int64(h.Zxid))
	e.Long(h.Time)
	e.Int(int32(h.Type))
}

// Decode implements jute.Record.
func (h *Header) Decode(d *jute.Decoder) {
	h.ClientID = d.Long()
	h.Cxid = d.Int()
	h.Zxid = zxid.ID(d.Long())
	h.Time = d.Long()
	h.Type = zkproto.Op(d.Int())
}

// Digest is TxnDigest, the optional trailer carrying the tree digest after
// the txn was applied.
type Digest struct {
	Version    int32 // DigestVersion
	TreeDigest int64
}

// Encode implements jute.Record.
func (g *Digest) Encode(e *jute.Encoder) {
	e.Int(g.Version)
	e.Long(g.TreeDigest)
}

// Decode implements jute.Record.
func (g *Digest) Decode(d *jute.Decoder) {
	g.Version = d.Int()
	g.TreeDigest = d.Long()
}

// Txn is one decoded payload.
type Txn struct {
	Header Header
	// Record is the pointer record Header.Type selects (*Create, *Delete,
	// ...; see the package doc). It must not be nil.
	Record jute.Record
	Digest *Digest // nil when the payload has no trailer
}

// Marshal returns t's payload: header, record, then the digest if any.
func Marshal(t *Txn) []byte {
	e := jute.Encoder{B: make([]byte, 0, marshalCap)}
	AppendTo(&e, t)
	return e.B
}

// marshalCap is Marshal's first buffer: a header, a path and about 100
// bytes of data fit without the buffer growing on the write path.
const marshalCap = 256

// AppendTo appends t's payload to e, for callers that frame payloads in a
// buffer of their own.
func AppendTo(e *jute.Encoder, t *Txn) {
	t.Header.Encode(e)
	if t.Record != nil {
		t.Record.Encode(e)
	}
	if t.Digest != nil {
		t.Digest.Encode(e)
	}
}

// Unmarshal decodes a payload. maxLen bounds every buffer, string and
// vector inside it (see jute.NewDecoder). The record is chosen by the
// header's type; any bytes after it must form exactly one TxnDigest.
// Unknown types give an error wrapping ErrUnknownType; malformed input gives
// one wrapping a jute error.
func Unmarshal(payload []byte, maxLen int) (*Txn, error) {
	d := jute.NewDecoder(payload, maxLen)
	t := &Txn{}
	t.Header.Decode(d)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("txn: decode header: %w", err)
	}
	rec, err := topRecord(t.Header.Type)
	if err != nil {
		return nil, err
	}
	if cs, ok := rec.(*CloseSession); ok && closeSessionHasNoBody(payload[d.Offset():]) {
		cs.NoBody = true
	} else {
		rec.Decode(d)
	}
	t.Record = rec
	if d.Err() == nil && d.Remaining() > 0 {
		t.Digest = &Digest{}
		t.Digest.Decode(d)
	}
	if err := d.Finish(); err != nil {
		return nil, fmt.Errorf("txn: decode %v txn at zxid %v: %w", t.Header.Type, t.Header.Zxid, err)
	}
	return t, nil
}

// closeSessionHasNoBody reports whether the bytes after a closeSession
// header are no record at all: nothing, or a bare 12-byte digest that does
// not parse as a complete CloseSessionTxn.
func closeSessionHasNoBody(rest []byte) bool {
	switch len(rest) {
	case 0:
		return true
	case DigestSize:
		d := jute.NewDecoder(rest, len(rest))
		var cs CloseSession
		cs.Decode(d)
		return d.Err() != nil || d.Remaining() != 0
	}
	return false
}

// topRecord returns an empty record for a top-level txn of type op.
func topRecord(op zkproto.Op) (jute.Record, error) {
	switch op {
	case zkproto.OpMulti:
		return &Multi{}, nil
	case zkproto.OpSetACL:
		return &SetACL{}, nil
	case zkproto.OpCreateSession:
		return &CreateSession{}, nil
	case zkproto.OpCloseSession:
		return &CloseSession{}, nil
	case zkproto.OpReconfig:
		return &SetData{}, nil
	case zkproto.OpCheck:
		return nil, fmt.Errorf("%w: check(13) outside a multi", ErrUnknownType)
	}
	return subRecord(op)
}

// subRecord returns an empty record for a multi sub-txn of type op.
func subRecord(op zkproto.Op) (jute.Record, error) {
	switch op {
	case zkproto.OpCreate, zkproto.OpCreate2:
		return &Create{}, nil
	case zkproto.OpCreateContainer:
		return &CreateContainer{}, nil
	case zkproto.OpCreateTTL:
		return &CreateTTL{}, nil
	case zkproto.OpDelete, zkproto.OpDeleteContainer:
		return &Delete{}, nil
	case zkproto.OpSetData:
		return &SetData{}, nil
	case zkproto.OpCheck:
		return &CheckVersion{}, nil
	case zkproto.OpError:
		return &Error{}, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnknownType, op)
}
