package bkproto

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// DecodeRequestAliased is DecodeRequest for a reader that can keep frame
// unchanged for as long as the request's byte fields are in use. An
// ADD_ENTRY request in the layout every v3 client sends (a header and an
// AddRequest, each field once, nothing unknown) is decoded without
// protobuf's reflection and without copying: its masterKey and body alias
// frame, and aliased is true. Anything else (other operations, unknown or
// repeated fields, a value protobuf would keep as unknown, a missing
// required field) is decoded by DecodeRequest, copying, with aliased
// false. Either way the request, the error and its kind are those
// DecodeRequest gives for the same frame (FuzzDecodeRequestAliased
// checks it).
func DecodeRequestAliased(frame []byte) (req *Request, aliased bool, err error) {
	return DecodeRequestAliasedInto(new(AddBuffer), frame)
}

// AddBuffer is where the aliasing decoders put an add request: the
// request and every field it points to, so that decoding one costs no
// allocation once a reader keeps its buffers (a bookie keeps one with
// each pooled request frame). The request DecodeRequestAliasedInto or
// DecodeV2RequestAliasedInto returns lives in the buffer: it is valid
// until the buffer is used again.
type AddBuffer struct{ a addAlloc }

// DecodeRequestAliasedInto is DecodeRequestAliased decoding an add into
// buf instead of a fresh allocation (anything else is decoded as
// DecodeRequest decodes it and leaves buf alone).
func DecodeRequestAliasedInto(buf *AddBuffer, frame []byte) (req *Request, aliased bool, err error) {
	if req := decodeAddAliased(&buf.a, frame); req != nil {
		return req, true, validateAliasedAdd(req)
	}
	req, err = DecodeRequest(frame)
	return req, false, err
}

// addAlloc holds an aliased add request and every field it points to.
type addAlloc struct {
	req Request
	hdr BKPacketHeader
	add AddRequest

	hv                 headerVals
	ledgerID, entryID  int64
	flag               AddRequest_Flag
	writeFlags         int32
	hasFlag, hasWFlags bool
}

// Field numbers of the messages decodeAddAliased reads
// (docs/bookkeeper-protocol.md §6.1).
const (
	fieldRequestHeader   = 1
	fieldRequestAdd      = 101
	fieldHeaderVersion   = 1
	fieldHeaderOperation = 2
	fieldHeaderTxnID     = 3
	fieldHeaderPriority  = 4
	fieldAddLedgerID     = 1
	fieldAddEntryID      = 2
	fieldAddMasterKey    = 3
	fieldAddBody         = 4
	fieldAddWriteFlags   = 5
	fieldAddFlag         = 100
)

// decodeAddAliased decodes frame into a as an ADD_ENTRY Request whose
// byte fields alias frame, or returns nil if the frame is anything else or
// anything protobuf would decode in a way this does not reproduce.
func decodeAddAliased(a *addAlloc, frame []byte) *Request {
	*a = addAlloc{}
	var hdr, add []byte
	var seen uint8
	for b := frame; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return nil
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		switch num {
		case fieldRequestHeader:
			if seen&1 != 0 {
				return nil
			}
			seen |= 1
			hdr = v
		case fieldRequestAdd:
			if seen&2 != 0 {
				return nil
			}
			seen |= 2
			add = v
		default:
			return nil
		}
	}
	if seen != 3 || !a.hv.decode(hdr) || a.hv.op != OperationType_ADD_ENTRY || !a.decodeAdd(add) {
		return nil
	}
	a.hv.fill(&a.hdr)
	a.add.LedgerId, a.add.EntryId = &a.ledgerID, &a.entryID
	if a.hasFlag {
		a.add.Flag = &a.flag
	}
	if a.hasWFlags {
		a.add.WriteFlags = &a.writeFlags
	}
	a.req.Header, a.req.AddRequest = &a.hdr, &a.add
	return &a.req
}

// fields walks one message's fields, calling f with each varint value or
// bytes. Every field read here is numbered below 15 or exactly 100, and
// may appear once: fields reports false on a malformed, repeated or
// other field, or on whatever f refuses.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, u uint64, v []byte) bool) bool {
	var seen uint16
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var bit uint16
		switch {
		case num == fieldAddFlag:
			bit = 1 << 15
		case num < 15:
			bit = 1 << num
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		var u uint64
		var v []byte
		switch typ {
		case protowire.VarintType:
			u, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			return false
		}
		if n < 0 || !f(num, typ, u, v) {
			return false
		}
		b = b[n:]
	}
	return true
}

// enumSet is the values below 1024 an enum defines, a bit each: a faster
// test than its generated _name map.
type enumSet [16]uint64

func newEnumSet(names map[int32]string) *enumSet {
	var s enumSet
	for v := range names {
		if v >= 0 && v < 1024 {
			s[v/64] |= 1 << (v % 64)
		}
	}
	return &s
}

// The enums the direct decoders read.
var (
	knownVersions   = newEnumSet(ProtocolVersion_name)
	knownOperations = newEnumSet(OperationType_name)
	knownAddFlags   = newEnumSet(AddRequest_Flag_name)
	knownStatuses   = newEnumSet(StatusCode_name)
)

// enumValue converts a varint to an enum number if the enum defines it
// (values from 1024 on count as undefined: the caller leaves them to
// protobuf); protobuf keeps any other value of a proto2 enum as an unknown
// field.
func enumValue(u uint64, known *enumSet) (int32, bool) {
	if u >= 1024 {
		return 0, false
	}
	return int32(u), known[u/64]&(1<<(u%64)) != 0
}

// headerVals holds a decoded BKPacketHeader's values.
type headerVals struct {
	version     ProtocolVersion
	op          OperationType
	txn         uint64
	priority    uint32
	hasPriority bool
}

// decode decodes a header with its required fields set, or reports false.
func (hv *headerVals) decode(b []byte) bool {
	var have uint8
	ok := fields(b, func(num protowire.Number, typ protowire.Type, u uint64, _ []byte) bool {
		if typ != protowire.VarintType {
			return false
		}
		switch num {
		case fieldHeaderVersion:
			v, ok := enumValue(u, knownVersions)
			hv.version, have = ProtocolVersion(v), have|1
			return ok
		case fieldHeaderOperation:
			v, ok := enumValue(u, knownOperations)
			hv.op, have = OperationType(v), have|2
			return ok
		case fieldHeaderTxnID:
			hv.txn, have = u, have|4
		case fieldHeaderPriority:
			hv.priority, hv.hasPriority = uint32(u), true
		default:
			return false
		}
		return true
	})
	return ok && have == 7
}

// fill points h's fields at hv's values.
func (hv *headerVals) fill(h *BKPacketHeader) {
	h.Version, h.Operation, h.TxnId = &hv.version, &hv.op, &hv.txn
	if hv.hasPriority {
		h.Priority = &hv.priority
	}
}

func (a *addAlloc) decodeAdd(b []byte) bool {
	var have uint8
	ok := fields(b, func(num protowire.Number, typ protowire.Type, u uint64, v []byte) bool {
		switch {
		case typ == protowire.BytesType && num == fieldAddMasterKey:
			a.add.MasterKey, have = v[:len(v):len(v)], have|4
		case typ == protowire.BytesType && num == fieldAddBody:
			a.add.Body, have = v[:len(v):len(v)], have|8
		case typ != protowire.VarintType:
			return false
		case num == fieldAddLedgerID:
			a.ledgerID, have = int64(u), have|1
		case num == fieldAddEntryID:
			a.entryID, have = int64(u), have|2
		case num == fieldAddWriteFlags:
			a.writeFlags, a.hasWFlags = int32(u), true
		case num == fieldAddFlag:
			v, ok := enumValue(u, knownAddFlags)
			a.flag, a.hasFlag = AddRequest_Flag(v), true
			return ok
		default:
			return false
		}
		return true
	})
	return ok && have == 15
}

// validateAliasedAdd is ValidateRequest for what decodeAddAliased returns:
// an ADD_ENTRY header and only the AddRequest slot set, so that of
// ValidateRequest's checks only the version's and the add's own remain.
func validateAliasedAdd(req *Request) error {
	if v := req.Header.GetVersion(); v != ProtocolVersionV3 {
		return Errorf(StatusCode_EBADVERSION, "protocol version %d", int32(v))
	}
	return validateAdd(req.AddRequest)
}

// addRespAlloc holds a decoded add response and every field it points
// to, so that decoding one costs one allocation.
type addRespAlloc struct {
	resp              Response
	hdr               BKPacketHeader
	add               AddResponse
	hv                headerVals
	status, addStatus StatusCode
	ledgerID, entryID int64
}

// decodeAddResponse decodes frame as an ADD_ENTRY Response in the layout
// bookies send (header, status and an AddResponse, each field once,
// nothing unknown), or returns nil for anything else, which DecodeResponse
// leaves to protobuf. An add response has no byte fields: nothing
// aliases frame.
func decodeAddResponse(frame []byte) *Response {
	t, ok := splitResponse(frame)
	if !ok || t.slot != fieldResponseAdd {
		return nil
	}
	return t.add()
}

// responseParts is a Response's top level as the direct decoders split
// it: the header's bytes, the status and the one sub-response slot set.
type responseParts struct {
	hdr, sub []byte
	status   uint64
	slot     protowire.Number
}

// splitResponse splits frame into a header, a status and one sub-response
// of the slots the direct decoders know (an add's or a read's), each field
// once, nothing else; it reports false for anything else.
func splitResponse(frame []byte) (t responseParts, ok bool) {
	var seen uint8
	for b := frame; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return t, false
		}
		b = b[n:]
		switch {
		case num == fieldResponseHeader && typ == protowire.BytesType && seen&1 == 0:
			t.hdr, n = protowire.ConsumeBytes(b)
			seen |= 1
		case num == fieldResponseStatus && typ == protowire.VarintType && seen&2 == 0:
			t.status, n = protowire.ConsumeVarint(b)
			seen |= 2
		case (num == fieldResponseAdd || num == fieldResponseRead) && typ == protowire.BytesType && seen&4 == 0:
			t.sub, n = protowire.ConsumeBytes(b)
			t.slot, seen = num, seen|4
		default:
			return t, false
		}
		if n < 0 {
			return t, false
		}
		b = b[n:]
	}
	return t, seen == 7
}

// add decodes t as an ADD_ENTRY response, or returns nil.
func (t responseParts) add() *Response {
	var hv headerVals
	status, ok := enumValue(t.status, knownStatuses)
	if !ok || !hv.decode(t.hdr) || hv.op != OperationType_ADD_ENTRY {
		return nil
	}
	a := &addRespAlloc{hv: hv, status: StatusCode(status)}
	if !a.decodeAdd(t.sub) {
		return nil
	}
	a.hv.fill(&a.hdr)
	a.add.Status, a.add.LedgerId, a.add.EntryId = &a.addStatus, &a.ledgerID, &a.entryID
	a.resp.Header, a.resp.Status, a.resp.AddResponse = &a.hdr, &a.status, &a.add
	return &a.resp
}

func (a *addRespAlloc) decodeAdd(b []byte) bool {
	var have uint8
	ok := fields(b, func(num protowire.Number, typ protowire.Type, u uint64, _ []byte) bool {
		if typ != protowire.VarintType {
			return false
		}
		switch num {
		case fieldAddRespStatus:
			s, ok := enumValue(u, knownStatuses)
			a.addStatus, have = StatusCode(s), have|1
			return ok
		case fieldAddRespLedgerID:
			a.ledgerID, have = int64(u), have|2
		case fieldAddRespEntryID:
			a.entryID, have = int64(u), have|4
		default:
			return false
		}
		return true
	})
	return ok && have == 7
}

// validateDirectResponse is ValidateResponse for what the direct
// decoders return: a header and only its operation's slot set, which
// ValidateResponse's slot checks accept whatever the status.
func validateDirectResponse(resp *Response) error {
	if v := resp.Header.GetVersion(); v != ProtocolVersionV3 {
		return Errorf(StatusCode_EBADVERSION, "protocol version %d", int32(v))
	}
	if !KnownStatus(resp.GetStatus()) {
		return Errorf(StatusCode_EBADREQ, "unknown status %d", int32(resp.GetStatus()))
	}
	if s := ResponseStatus(resp); !KnownStatus(s) {
		return Errorf(StatusCode_EBADREQ, "%v response with unknown status %d", resp.Header.GetOperation(), int32(s))
	}
	return nil
}
