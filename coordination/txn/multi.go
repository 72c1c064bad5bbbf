package txn

import (
	"encoding/binary"
	"errors"
	"fmt"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// errNullMulti is reported for a null vector or a null sub-txn buffer, which
// no ZooKeeper version writes and none can replay.
var errNullMulti = errors.New("txn: null vector or buffer in multi")

// Multi is MultiTxn, the record of multi(14): all sub-ops share the
// header's zxid and time. A failed multi is logged with every sub-op an
// Error.
type Multi struct {
	Ops []Op
}

// Op is one sub-txn of a Multi: on the wire Txn{int type; buffer data},
// with data holding Record serialized.
type Op struct {
	Type zkproto.Op
	// Record is the sub-record: *Create (create, create2), *CreateContainer,
	// *CreateTTL, *Delete (delete, deleteContainer), *SetData,
	// *CheckVersion (check) or *Error (error). It must not be nil.
	Record jute.Record
}

// Encode implements jute.Record. Each sub-record is encoded in place and
// its length patched in afterwards, so no intermediate buffer is needed.
func (m *Multi) Encode(e *jute.Encoder) {
	e.VectorLen(len(m.Ops), false) // Java always writes a list, never null
	for _, op := range m.Ops {
		e.Int(int32(op.Type))
		at := len(e.B)
		e.Int(0)
		if op.Record != nil {
			op.Record.Encode(e)
		}
		binary.BigEndian.PutUint32(e.B[at:], uint32(len(e.B)-at-4))
	}
}

// Decode implements jute.Record. Every sub-record must fill its buffer
// exactly; an unknown sub type fails with ErrUnknownType.
func (m *Multi) Decode(d *jute.Decoder) {
	n := d.VectorLen(8) // type + buffer length
	if n < 0 {
		d.Fail(errNullMulti)
		m.Ops = nil
		return
	}
	m.Ops = make([]Op, 0, n)
	for i := range n {
		typ := zkproto.Op(d.Int())
		data := d.Buffer()
		if d.Err() != nil {
			return
		}
		if data == nil {
			d.Fail(fmt.Errorf("%w: sub-txn %d", errNullMulti, i))
			return
		}
		rec, err := decodeSub(typ, data)
		if err != nil {
			d.Fail(fmt.Errorf("txn: multi sub-txn %d: %w", i, err))
			return
		}
		m.Ops = append(m.Ops, Op{Type: typ, Record: rec})
	}
}

// decodeSub decodes one sub-record. Its lengths are bounded by len(data),
// which the outer decoder already bounded by its maxLen.
func decodeSub(typ zkproto.Op, data []byte) (jute.Record, error) {
	rec, err := subRecord(typ)
	if err != nil {
		return nil, err
	}
	if err := jute.Unmarshal(data, rec, max(len(data), 1)); err != nil {
		return nil, fmt.Errorf("%v: %w", typ, err)
	}
	return rec, nil
}
