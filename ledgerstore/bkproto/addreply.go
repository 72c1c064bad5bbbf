package bkproto

import "encoding/binary"

// AddReply holds, by value, what the response to an add repeats of its
// request's header, so that the response can be encoded after the
// request's memory has been reused (an AddBuffer, a pooled frame).
type AddReply struct {
	op                         OperationType
	txn                        uint64
	priority                   uint32
	hasOp, hasTxn, hasPriority bool
}

// AddReplyOf takes what a response repeats of request header h.
func AddReplyOf(h *BKPacketHeader) AddReply {
	r := AddReply{op: h.GetOperation(), txn: h.GetTxnId(), priority: h.GetPriority()}
	r.hasOp, r.hasTxn, r.hasPriority = h.Operation != nil, h.TxnId != nil, h.Priority != nil
	return r
}

// header rebuilds the fields of the request header that NewAddResponse
// reads.
func (r AddReply) header() *BKPacketHeader {
	h := &BKPacketHeader{}
	if r.hasOp {
		h.Operation = r.op.Enum()
	}
	if r.hasTxn {
		h.TxnId = &r.txn
	}
	if r.hasPriority {
		h.Priority = &r.priority
	}
	return h
}

// Response returns NewAddResponse(h, st, ledgerID, entryID) for the header
// h that r was taken from.
func (r AddReply) Response(st StatusCode, ledgerID, entryID int64) *Response {
	return NewAddResponse(r.header(), st, ledgerID, entryID)
}

// AppendFrame appends what AppendAddResponseFrame(dst, h, st, ledgerID,
// entryID) appends for the header h that r was taken from.
func (r AddReply) AppendFrame(dst []byte, st StatusCode, ledgerID, entryID int64) ([]byte, error) {
	if !r.hasOp || !r.hasTxn {
		return AppendFrame(dst, r.Response(st, ledgerID, entryID))
	}
	rh := headerFields{ProtocolVersionV3, r.op, r.txn, nil}
	if r.hasPriority {
		rh.priority = &r.priority
	}
	return appendAddResponseFields(dst, rh, rh.size(), st, st, ledgerID, entryID), nil
}

// AppendV2AddResponse appends what AppendV2Response appends for the
// response to the v2 add v2 with status st, without building the message.
func AppendV2AddResponse(dst []byte, v2 V2Request, st StatusCode) []byte {
	h := V2Header{Version: v2.Header.Version, OpCode: V2AddEntry}
	dst = binary.BigEndian.AppendUint32(dst, V2ResponseHeaderBytes)
	dst = binary.BigEndian.AppendUint32(dst, h.Uint32())
	dst = binary.BigEndian.AppendUint32(dst, uint32(V2Code(st)))
	dst = binary.BigEndian.AppendUint64(dst, uint64(v2.LedgerID))
	return binary.BigEndian.AppendUint64(dst, uint64(v2.EntryID))
}
