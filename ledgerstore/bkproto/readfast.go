package bkproto

import (
	"encoding/binary"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of ReadRequest and ReadResponse, and of Response's read
// slot (docs/bookkeeper-protocol.md §6.1).
const (
	fieldRequestRead           = 100
	fieldResponseRead          = 100
	fieldReadLedgerID          = 1
	fieldReadEntryID           = 2
	fieldReadMasterKey         = 3
	fieldReadPreviousLAC       = 4
	fieldReadTimeOut           = 5
	fieldReadFlag              = 100
	fieldReadRespStatus        = 1
	fieldReadRespLedgerID      = 2
	fieldReadRespEntryID       = 3
	fieldReadRespBody          = 4
	fieldReadRespMaxLAC        = 5
	fieldReadRespLACUpdateTime = 6
)

// appendReadRequest encodes a plain READ_ENTRY request (a header and a
// ReadRequest with its required fields set, nothing else, no unknown
// fields) into the bytes AppendFrame gives, or reports false.
func appendReadRequest(dst []byte, req *Request) ([]byte, bool) {
	r := req.ReadRequest
	if r == nil || req.AddRequest != nil || req.AuthRequest != nil || req.WriteLacRequest != nil ||
		req.ReadLacRequest != nil || req.GetBookieInfoRequest != nil || req.StartTLSRequest != nil ||
		req.ForceLedgerRequest != nil || req.GetListOfEntriesOfLedgerRequest != nil || len(req.RequestContext) != 0 ||
		r.LedgerId == nil || r.EntryId == nil || !plain(req) || !plain(r) {
		return dst, false
	}
	hn, ok := headerSize(req.Header)
	if !ok {
		return dst, false
	}
	rn := 2 + protowire.SizeVarint(uint64(*r.LedgerId)) + protowire.SizeVarint(uint64(*r.EntryId))
	if r.MasterKey != nil {
		rn += 1 + protowire.SizeBytes(len(r.MasterKey))
	}
	if r.PreviousLAC != nil {
		rn += 1 + protowire.SizeVarint(uint64(*r.PreviousLAC))
	}
	if r.TimeOut != nil {
		rn += 1 + protowire.SizeVarint(uint64(*r.TimeOut))
	}
	if r.Flag != nil {
		rn += 2 + protowire.SizeVarint(enumWire(int32(*r.Flag)))
	}
	total := 1 + protowire.SizeBytes(hn) + 2 + protowire.SizeBytes(rn)
	if total > maxFastFrameBytes {
		return dst, false // AppendFrame reports it
	}
	b := binary.BigEndian.AppendUint32(dst, uint32(total))
	b = protowire.AppendVarint(b, tagBytes(fieldRequestHeader))
	b = appendHeader(protowire.AppendVarint(b, uint64(hn)), req.Header)
	b = protowire.AppendVarint(b, tagBytes(fieldRequestRead))
	b = protowire.AppendVarint(b, uint64(rn))
	b = protowire.AppendVarint(append(b, fieldReadLedgerID<<3), uint64(*r.LedgerId))
	b = protowire.AppendVarint(append(b, fieldReadEntryID<<3), uint64(*r.EntryId))
	if r.MasterKey != nil {
		b = protowire.AppendBytes(append(b, byte(tagBytes(fieldReadMasterKey))), r.MasterKey)
	}
	if r.PreviousLAC != nil {
		b = protowire.AppendVarint(append(b, fieldReadPreviousLAC<<3), uint64(*r.PreviousLAC))
	}
	if r.TimeOut != nil {
		b = protowire.AppendVarint(append(b, fieldReadTimeOut<<3), uint64(*r.TimeOut))
	}
	if r.Flag != nil {
		b = protowire.AppendVarint(protowire.AppendVarint(b, uint64(fieldReadFlag)<<3), enumWire(int32(*r.Flag)))
	}
	return b, true
}

// readRespAlloc holds a decoded read response and every field it points
// to but the body, so that decoding one costs two allocations.
type readRespAlloc struct {
	resp                    Response
	hdr                     BKPacketHeader
	read                    ReadResponse
	hv                      headerVals
	status, readStatus      StatusCode
	ledgerID, entryID       int64
	maxLAC, lacUpdateMillis int64
}

// read decodes t as a READ_ENTRY response, or returns nil. The body is
// copied, as protobuf copies it: nothing aliases the frame.
func (t responseParts) read() *Response {
	var hv headerVals
	status, ok := enumValue(t.status, knownStatuses)
	if !ok || !hv.decode(t.hdr) || hv.op != OperationType_READ_ENTRY {
		return nil
	}
	a := &readRespAlloc{hv: hv, status: StatusCode(status)}
	var body []byte
	var have uint8
	ok = fields(t.sub, func(num protowire.Number, typ protowire.Type, u uint64, v []byte) bool {
		switch {
		case typ == protowire.BytesType && num == fieldReadRespBody:
			body, have = v, have|8
		case typ != protowire.VarintType:
			return false
		case num == fieldReadRespStatus:
			s, ok := enumValue(u, knownStatuses)
			a.readStatus, have = StatusCode(s), have|1
			return ok
		case num == fieldReadRespLedgerID:
			a.ledgerID, have = int64(u), have|2
		case num == fieldReadRespEntryID:
			a.entryID, have = int64(u), have|4
		case num == fieldReadRespMaxLAC:
			a.maxLAC, have = int64(u), have|16
		case num == fieldReadRespLACUpdateTime:
			a.lacUpdateMillis, have = int64(u), have|32
		default:
			return false
		}
		return true
	})
	if !ok || have&7 != 7 {
		return nil
	}
	r := &a.read
	r.Status, r.LedgerId, r.EntryId = &a.readStatus, &a.ledgerID, &a.entryID
	if have&8 != 0 {
		// Present, even empty, is a non-nil slice, as protobuf decodes it.
		// make then copy into a local is compiled as one copying
		// allocation, without clearing the memory first.
		b := make([]byte, len(body))
		copy(b, body)
		r.Body = b
	}
	if have&16 != 0 {
		r.MaxLAC = &a.maxLAC
	}
	if have&32 != 0 {
		r.LacUpdateTimestamp = &a.lacUpdateMillis
	}
	a.hv.fill(&a.hdr)
	a.resp.Header, a.resp.Status, a.resp.ReadResponse = &a.hdr, &a.status, r
	return &a.resp
}
