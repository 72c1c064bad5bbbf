package bkproto

import (
	"encoding/binary"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// AppendRequestFrame is AppendFrame for requests: a plain add or read (a
// header and an AddRequest or a ReadRequest with every required field
// set, nothing else, no unknown fields) is encoded directly, without
// protobuf's reflection, into the bytes proto.Marshal gives
// (TestAppendAddFrames, TestAppendReadFrames, FuzzAppendAddRequest and
// FuzzAppendReadRequest compare them); any other request goes through
// AppendFrame.
func AppendRequestFrame(dst []byte, req *Request) ([]byte, error) {
	if out, ok := appendAddRequest(dst, req); ok {
		return out, nil
	}
	if out, ok := appendReadRequest(dst, req); ok {
		return out, nil
	}
	return AppendFrame(dst, req)
}

// AppendResponseFrame is AppendRequestFrame for responses: a plain add
// response (header, status and an AddResponse) is encoded directly.
func AppendResponseFrame(dst []byte, resp *Response) ([]byte, error) {
	if out, ok := appendAddResponse(dst, resp); ok {
		return out, nil
	}
	return AppendFrame(dst, resp)
}

// plain reports whether m has no unknown fields.
func plain(m proto.Message) bool { return len(m.ProtoReflect().GetUnknown()) == 0 }

// headerSize returns the encoded size of a header with its required
// fields set, or false.
func headerSize(h *BKPacketHeader) (int, bool) {
	if h == nil || h.Version == nil || h.Operation == nil || h.TxnId == nil || !plain(h) {
		return 0, false
	}
	return headerFields{*h.Version, *h.Operation, *h.TxnId, h.Priority}.size(), true
}

// headerFields are a header's values, its priority nil when unset.
type headerFields struct {
	version  ProtocolVersion
	op       OperationType
	txn      uint64
	priority *uint32
}

func (f headerFields) size() int {
	n := 3 + protowire.SizeVarint(enumWire(int32(f.version))) + protowire.SizeVarint(enumWire(int32(f.op))) +
		protowire.SizeVarint(f.txn)
	if f.priority != nil {
		n += 1 + protowire.SizeVarint(uint64(*f.priority))
	}
	return n
}

func (f headerFields) append(b []byte) []byte {
	b = protowire.AppendVarint(append(b, fieldHeaderVersion<<3), enumWire(int32(f.version)))
	b = protowire.AppendVarint(append(b, fieldHeaderOperation<<3), enumWire(int32(f.op)))
	b = protowire.AppendVarint(append(b, fieldHeaderTxnID<<3), f.txn)
	if f.priority != nil {
		b = protowire.AppendVarint(append(b, fieldHeaderPriority<<3), uint64(*f.priority))
	}
	return b
}

func appendHeader(b []byte, h *BKPacketHeader) []byte {
	return headerFields{*h.Version, *h.Operation, *h.TxnId, h.Priority}.append(b)
}

// enumWire is the varint of an enum or int32 value: negative values are
// sign-extended to 64 bits, as protobuf encodes them.
func enumWire(v int32) uint64 { return uint64(int64(v)) }

// tagBytes returns field num's tag with the length-delimited wire type.
func tagBytes(num protowire.Number) uint64 { return uint64(num)<<3 | uint64(protowire.BytesType) }

func appendAddRequest(dst []byte, req *Request) ([]byte, bool) {
	a := req.AddRequest
	if a == nil || req.ReadRequest != nil || req.AuthRequest != nil || req.WriteLacRequest != nil ||
		req.ReadLacRequest != nil || req.GetBookieInfoRequest != nil || req.StartTLSRequest != nil ||
		req.ForceLedgerRequest != nil || req.GetListOfEntriesOfLedgerRequest != nil || len(req.RequestContext) != 0 ||
		a.LedgerId == nil || a.EntryId == nil || a.MasterKey == nil || a.Body == nil || !plain(req) || !plain(a) {
		return dst, false
	}
	hn, ok := headerSize(req.Header)
	if !ok {
		return dst, false
	}
	an := 4 + protowire.SizeVarint(uint64(*a.LedgerId)) + protowire.SizeVarint(uint64(*a.EntryId)) +
		protowire.SizeBytes(len(a.MasterKey)) + protowire.SizeBytes(len(a.Body))
	if a.WriteFlags != nil {
		an += 1 + protowire.SizeVarint(enumWire(*a.WriteFlags))
	}
	if a.Flag != nil {
		an += 2 + protowire.SizeVarint(enumWire(int32(*a.Flag)))
	}
	total := 1 + protowire.SizeBytes(hn) + 2 + protowire.SizeBytes(an)
	if total > maxFastFrameBytes {
		return dst, false // AppendFrame reports it
	}
	b := binary.BigEndian.AppendUint32(dst, uint32(total))
	b = protowire.AppendVarint(b, tagBytes(fieldRequestHeader))
	b = appendHeader(protowire.AppendVarint(b, uint64(hn)), req.Header)
	b = protowire.AppendVarint(b, tagBytes(fieldRequestAdd))
	b = protowire.AppendVarint(b, uint64(an))
	b = protowire.AppendVarint(append(b, fieldAddLedgerID<<3), uint64(*a.LedgerId))
	b = protowire.AppendVarint(append(b, fieldAddEntryID<<3), uint64(*a.EntryId))
	b = protowire.AppendBytes(append(b, byte(tagBytes(fieldAddMasterKey))), a.MasterKey)
	b = protowire.AppendBytes(append(b, byte(tagBytes(fieldAddBody))), a.Body)
	if a.WriteFlags != nil {
		b = protowire.AppendVarint(append(b, fieldAddWriteFlags<<3), enumWire(*a.WriteFlags))
	}
	if a.Flag != nil {
		b = protowire.AppendVarint(protowire.AppendVarint(b, uint64(fieldAddFlag)<<3), enumWire(int32(*a.Flag)))
	}
	return b, true
}

// maxFastFrameBytes bounds what the direct encoders write; a larger
// message goes through AppendFrame, which reports it.
const maxFastFrameBytes = 1<<31 - 1

// Field numbers of Response and AddResponse (docs/bookkeeper-protocol.md §6.1).
const (
	fieldResponseHeader   = 1
	fieldResponseStatus   = 2
	fieldResponseAdd      = 101
	fieldAddRespStatus    = 1
	fieldAddRespLedgerID  = 2
	fieldAddRespEntryID   = 3
	fieldAddRespFixedTags = 3
)

func appendAddResponse(dst []byte, resp *Response) ([]byte, bool) {
	a := resp.AddResponse
	if a == nil || resp.Status == nil || resp.ReadResponse != nil || resp.AuthResponse != nil ||
		resp.WriteLacResponse != nil || resp.ReadLacResponse != nil || resp.GetBookieInfoResponse != nil ||
		resp.StartTLSResponse != nil || resp.ForceLedgerResponse != nil || resp.GetListOfEntriesOfLedgerResponse != nil ||
		a.Status == nil || a.LedgerId == nil || a.EntryId == nil || !plain(resp) || !plain(a) {
		return dst, false
	}
	hn, ok := headerSize(resp.Header)
	if !ok {
		return dst, false
	}
	h := resp.Header
	return appendAddResponseFields(dst, headerFields{*h.Version, *h.Operation, *h.TxnId, h.Priority}, hn,
		*resp.Status, *a.Status, *a.LedgerId, *a.EntryId), true
}

// appendAddResponseFields appends the frame of an add response with
// header h (of encoded size hn), the overall status st, and the add's
// status and ids.
func appendAddResponseFields(dst []byte, h headerFields, hn int, st, addSt StatusCode, ledgerID, entryID int64) []byte {
	an := fieldAddRespFixedTags + protowire.SizeVarint(enumWire(int32(addSt))) +
		protowire.SizeVarint(uint64(ledgerID)) + protowire.SizeVarint(uint64(entryID))
	total := 1 + protowire.SizeBytes(hn) + 1 + protowire.SizeVarint(enumWire(int32(st))) + 2 + protowire.SizeBytes(an)
	b := binary.BigEndian.AppendUint32(dst, uint32(total))
	b = protowire.AppendVarint(b, tagBytes(fieldResponseHeader))
	b = h.append(protowire.AppendVarint(b, uint64(hn)))
	b = protowire.AppendVarint(append(b, fieldResponseStatus<<3), enumWire(int32(st)))
	b = protowire.AppendVarint(b, tagBytes(fieldResponseAdd))
	b = protowire.AppendVarint(b, uint64(an))
	b = protowire.AppendVarint(append(b, fieldAddRespStatus<<3), enumWire(int32(addSt)))
	b = protowire.AppendVarint(append(b, fieldAddRespLedgerID<<3), uint64(ledgerID))
	b = protowire.AppendVarint(append(b, fieldAddRespEntryID<<3), uint64(entryID))
	return b
}

// AppendAddResponseFrame appends the frame of NewAddResponse(h, st,
// ledgerID, entryID), as AppendFrame would, without building the message
// when h has its operation and txnId (a decoded request's header always
// has).
func AppendAddResponseFrame(dst []byte, h *BKPacketHeader, st StatusCode, ledgerID, entryID int64) ([]byte, error) {
	if h.Operation == nil || h.TxnId == nil {
		return AppendFrame(dst, NewAddResponse(h, st, ledgerID, entryID))
	}
	rh := headerFields{ProtocolVersionV3, *h.Operation, *h.TxnId, h.Priority}
	return appendAddResponseFields(dst, rh, rh.size(), st, st, ledgerID, entryID), nil
}

// addRespBuild holds an add response and what its fields point to, so
// that building one costs one allocation.
type addRespBuild struct {
	resp              Response
	hdr               BKPacketHeader
	add               AddResponse
	version           ProtocolVersion
	op                OperationType
	txn               uint64
	priority          uint32
	status            StatusCode
	ledgerID, entryID int64
}

// NewAddResponse returns the response to an add whose request had header
// h: h's operation, txnId and priority at version 3 (even when the
// request claimed another, so that the client can read EBADVERSION), st
// as both the overall and the add's status, and the add's ids.
func NewAddResponse(h *BKPacketHeader, st StatusCode, ledgerID, entryID int64) *Response {
	a := &addRespBuild{version: ProtocolVersionV3, op: h.GetOperation(), txn: h.GetTxnId(), status: st,
		ledgerID: ledgerID, entryID: entryID}
	a.hdr.Version = &a.version
	if h.TxnId != nil {
		a.hdr.TxnId = &a.txn
	}
	if h.Operation != nil {
		a.hdr.Operation = &a.op
	}
	if h.Priority != nil {
		a.priority = *h.Priority
		a.hdr.Priority = &a.priority
	}
	a.add.Status, a.add.LedgerId, a.add.EntryId = &a.status, &a.ledgerID, &a.entryID
	a.resp.Header, a.resp.Status, a.resp.AddResponse = &a.hdr, &a.status, &a.add
	return &a.resp
}
