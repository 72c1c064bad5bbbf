package bkproto

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// ProtocolVersionV3 is the header version v3 peers send and accept.
const ProtocolVersionV3 = ProtocolVersion_VERSION_THREE

// DecodeRequest unmarshals and validates one request frame (without its
// length prefix). The error tells the caller what to do:
//
//   - an error that is not an *Error: the frame is not a v3 Request
//     (malformed protobuf, or a required field missing). req is nil; the
//     connection cannot be trusted and should be closed.
//   - an *Error: the frame is a Request, but not a well-formed one (see
//     ValidateRequest). req is non-nil with its header set, so the bookie can
//     answer txnId with StatusOf(err), as a Java bookie does.
//
// The request's byte fields alias nothing: proto.Unmarshal copies them, so
// frame may be reused after the call.
func DecodeRequest(frame []byte) (*Request, error) {
	req := &Request{}
	if err := proto.Unmarshal(frame, req); err != nil {
		return nil, fmt.Errorf("bkproto: decode request: %w", err)
	}
	if err := ValidateRequest(req); err != nil {
		return req, err
	}
	return req, nil
}

// DecodeResponse unmarshals and validates one response frame (without its
// length prefix). As with DecodeRequest, an error that is not an *Error
// means the frame is not a v3 Response and resp is nil; an *Error means resp
// (non-nil, header set) is malformed for its operation (see
// ValidateResponse). Either way a client should treat the connection as
// broken; the header lets it fail the right pending request first.
//
// An add or read response in the layout bookies send (a header, a status
// and the operation's sub-response, each field once, nothing unknown) is
// decoded directly, without protobuf's reflection; FuzzDecodeAddResponse
// and FuzzDecodeReadResponse check that it gives what protobuf gives. The
// response's byte fields alias nothing, so frame may be reused after the
// call.
func DecodeResponse(frame []byte) (*Response, error) {
	if t, ok := splitResponse(frame); ok {
		var resp *Response
		switch t.slot {
		case fieldResponseAdd:
			resp = t.add()
		case fieldResponseRead:
			resp = t.read()
		}
		if resp != nil {
			return resp, validateDirectResponse(resp)
		}
	}
	return decodeResponseProto(frame)
}

// decodeResponseProto is DecodeResponse through protobuf.
func decodeResponseProto(frame []byte) (*Response, error) {
	resp := &Response{}
	if err := proto.Unmarshal(frame, resp); err != nil {
		return nil, fmt.Errorf("bkproto: decode response: %w", err)
	}
	if err := ValidateResponse(resp); err != nil {
		return resp, err
	}
	return resp, nil
}

// NewHeader returns a v3 packet header for op and txnID. The header and
// the values it points to are one allocation, as every request sent costs
// one header.
func NewHeader(op OperationType, txnID uint64) *BKPacketHeader {
	a := &headerAlloc{version: ProtocolVersionV3, op: op, txn: txnID}
	a.h.Version, a.h.Operation, a.h.TxnId = &a.version, &a.op, &a.txn
	return &a.h
}

// headerAlloc holds a header and the values its fields point to.
type headerAlloc struct {
	h       BKPacketHeader
	version ProtocolVersion
	op      OperationType
	txn     uint64
}

// ResponseStatus returns the outcome of a response: its overall status if
// that is not EOK, otherwise the status in the sub-response of the header's
// operation (AUTH and START_TLS have none, so EOK). An EOK response without
// that sub-response is malformed and yields EBADREQ. Turn the result into an
// error with ErrorOf.
func ResponseStatus(resp *Response) StatusCode {
	if s := resp.GetStatus(); s != StatusCode_EOK {
		return s
	}
	switch resp.GetHeader().GetOperation() {
	case OperationType_READ_ENTRY:
		if r := resp.ReadResponse; r != nil {
			return r.GetStatus()
		}
	case OperationType_ADD_ENTRY:
		if r := resp.AddResponse; r != nil {
			return r.GetStatus()
		}
	case OperationType_WRITE_LAC:
		if r := resp.WriteLacResponse; r != nil {
			return r.GetStatus()
		}
	case OperationType_READ_LAC:
		if r := resp.ReadLacResponse; r != nil {
			return r.GetStatus()
		}
	case OperationType_GET_BOOKIE_INFO:
		if r := resp.GetBookieInfoResponse; r != nil {
			return r.GetStatus()
		}
	case OperationType_FORCE_LEDGER:
		if r := resp.ForceLedgerResponse; r != nil {
			return r.GetStatus()
		}
	case OperationType_GET_LIST_OF_ENTRIES_OF_LEDGER:
		if r := resp.GetListOfEntriesOfLedgerResponse; r != nil {
			return r.GetStatus()
		}
	case OperationType_AUTH:
		if resp.AuthResponse != nil {
			return StatusCode_EOK
		}
	case OperationType_START_TLS:
		if resp.StartTLSResponse != nil {
			return StatusCode_EOK
		}
	}
	return StatusCode_EBADREQ
}
