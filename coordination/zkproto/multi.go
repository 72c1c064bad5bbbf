package zkproto

import (
	"errors"
	"fmt"

	"keeper/coordination/jute"
	"keeper/internal/invariants"
)

// ErrMultiBadOp means a multi request or response held an op type that is
// not allowed there. Decoding fails with an error wrapping it; the server
// answers the request with MarshallingError (docs/zookeeper-protocol.md §2.3).
var ErrMultiBadOp = errors.New("zkproto: op type not allowed in multi")

// MultiHeader precedes every op of a multi request and every result of a
// multi response, and a header with Done set ends the sequence.
//
//	type int | done boolean | err int
//
// The Java reader stops at the first header with done set and looks at
// neither its type nor its err; writers send {-1, true, -1}.
type MultiHeader struct {
	Type Op
	Done bool
	Err  Code // -1 in requests; 0, or the error code of an error result
}

// Encode implements jute.Record.
func (h *MultiHeader) Encode(e *jute.Encoder) {
	e.Int(int32(h.Type))
	e.Bool(h.Done)
	e.Int(int32(h.Err))
}

// Decode implements jute.Record.
func (h *MultiHeader) Decode(d *jute.Decoder) {
	h.Type = Op(d.Int())
	h.Done = d.Bool()
	h.Err = Code(d.Int())
}

// encodeMultiEnd appends the terminator of both multi requests and multi
// responses: MultiHeader{-1, true, -1}.
func encodeMultiEnd(e *jute.Encoder) {
	end := MultiHeader{Type: OpError, Done: true, Err: -1}
	end.Encode(e)
}

// IsMultiWriteOp reports whether op may appear inside multi(14): the
// create family, delete, setData and check.
func IsMultiWriteOp(op Op) bool {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData, OpCheck:
		return true
	}
	return false
}

// IsMultiReadOp reports whether op may appear inside multiRead(22):
// getChildren and getData only.
func IsMultiReadOp(op Op) bool { return op == OpGetChildren || op == OpGetData }

// newMultiOpRecord returns an empty request record for an op inside a multi
// request, or nil if the op is allowed in neither multi nor multiRead.
func newMultiOpRecord(op Op) jute.Record {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}
	case OpCreateTTL:
		return &CreateTTLRequest{}
	case OpDelete:
		return &DeleteRequest{}
	case OpSetData:
		return &SetDataRequest{}
	case OpCheck:
		return &CheckVersionRequest{}
	case OpGetChildren:
		return &GetChildrenRequest{}
	case OpGetData:
		return &GetDataRequest{}
	}
	return nil
}

// MultiOp is one operation of a multi request. Record is the op's request
// record: *CreateRequest for create, create2 and createContainer;
// *CreateTTLRequest for createTTL; *DeleteRequest; *SetDataRequest;
// *CheckVersionRequest for check; *GetChildrenRequest; *GetDataRequest.
type MultiOp struct {
	Op     Op
	Record jute.Record
}

// MultiRequest is the body of multi(14) and multiRead(22), Java's
// MultiOperationRecord (docs/zookeeper-protocol.md §2.3):
//
//	+----------------------+--------+-----+------------------------+
//	| MultiHeader{op,0,-1} | record | ... | MultiHeader{-1,1,-1}   |
//	+----------------------+--------+-----+------------------------+
//
// Decode accepts every op allowed in either kind of multi and fails with
// ErrMultiBadOp on any other. Whether the ops suit the opcode (only writes
// in multi, only reads in multiRead) is checked by Validate, which the
// server calls. An empty multi decodes with Ops nil.
type MultiRequest struct {
	Ops []MultiOp
}

// Encode implements jute.Record. Every op must carry its record.
func (m *MultiRequest) Encode(e *jute.Encoder) {
	for i, op := range m.Ops {
		invariants.Assertf(op.Record != nil, "zkproto: multi op %d (%v) has no record", i, op.Op)
		h := MultiHeader{Type: op.Op, Done: false, Err: -1}
		h.Encode(e)
		op.Record.Encode(e)
	}
	encodeMultiEnd(e)
}

// Decode implements jute.Record. The number of ops is bounded by the input:
// each takes at least a 9-byte header.
func (m *MultiRequest) Decode(d *jute.Decoder) {
	m.Ops = nil
	for {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		rec := newMultiOpRecord(h.Type)
		if rec == nil {
			d.Fail(fmt.Errorf("%w: request op %v at index %d", ErrMultiBadOp, h.Type, len(m.Ops)))
			return
		}
		rec.Decode(d)
		if d.Err() != nil {
			return
		}
		m.Ops = append(m.Ops, MultiOp{Op: h.Type, Record: rec})
	}
}

// Validate checks that every op suits the multi opcode kind (OpMulti or
// OpMultiRead): only writes in multi, only reads in multiRead. The error
// wraps both ErrMarshallingError, the code the server answers with, and
// ErrMultiBadOp.
func (m *MultiRequest) Validate(kind Op) error {
	allowed := IsMultiWriteOp
	switch kind {
	case OpMulti:
	case OpMultiRead:
		allowed = IsMultiReadOp
	default:
		return fmt.Errorf("zkproto: %w: %w: %v is not a multi opcode", ErrMarshallingError, ErrMultiBadOp, kind)
	}
	for i, op := range m.Ops {
		if !allowed(op.Op) {
			return fmt.Errorf("zkproto: %w: %w: %v at index %d inside %v",
				ErrMarshallingError, ErrMultiBadOp, op.Op, i, kind)
		}
	}
	return nil
}

// newMultiResultRecord returns an empty body for a result type of a multi
// response (docs/zookeeper-protocol.md §2.3 table): nil with true for delete and check, which have
// no body, and false for a type that may not appear.
func newMultiResultRecord(op Op) (jute.Record, bool) {
	switch op {
	case OpCreate:
		return &CreateResponse{}, true
	case OpCreate2:
		return &Create2Response{}, true
	case OpDelete, OpCheck:
		return nil, true
	case OpSetData:
		return &SetDataResponse{}, true
	case OpGetChildren:
		return &GetChildrenResponse{}, true
	case OpGetData:
		return &GetDataResponse{}, true
	case OpError:
		return &ErrorResponse{}, true
	}
	return nil, false
}

// MultiResult is one result of a multi response. Op is the result type,
// which is not always the request op: createTTL and createContainer answer
// with OpCreate2, and a failed op with OpError. Record is the body:
//
//	OpCreate      *CreateResponse
//	OpCreate2     *Create2Response
//	OpDelete      nil
//	OpSetData     *SetDataResponse
//	OpCheck       nil
//	OpGetChildren *GetChildrenResponse
//	OpGetData     *GetDataResponse
//	OpError       *ErrorResponse, with Err equal to the result's Err
//
// Err is the code in the result's MultiHeader: 0 except for error results.
// Build error results with ErrorResult so the two codes agree.
type MultiResult struct {
	Op     Op
	Err    Code
	Record jute.Record
}

// ErrorResult returns an error result carrying c in both its header and its
// ErrorResponse body.
func ErrorResult(c Code) MultiResult {
	return MultiResult{Op: OpError, Err: c, Record: &ErrorResponse{Err: c}}
}

// FailedMultiResponse builds the reply to a write multi of opCount ops whose
// op at failedIndex failed with c (docs/zookeeper-protocol.md §2.3): one error result per op, 0
// for the ops before it (rolled back), c for it, and RuntimeInconsistency
// for the ops after it (not attempted).
func FailedMultiResponse(opCount, failedIndex int, c Code) *MultiResponse {
	invariants.Assertf(failedIndex >= 0 && failedIndex < opCount,
		"zkproto: failed multi op index %d out of range [0, %d)", failedIndex, opCount)
	m := &MultiResponse{Results: make([]MultiResult, opCount)}
	for i := range m.Results {
		switch {
		case i < failedIndex:
			m.Results[i] = ErrorResult(CodeOK)
		case i == failedIndex:
			m.Results[i] = ErrorResult(c)
		default:
			m.Results[i] = ErrorResult(CodeRuntimeInconsistency)
		}
	}
	return m
}

// MultiResponse answers multi(14) and multiRead(22). It is laid out like
// MultiRequest, with a result per op in place of a request:
//
//	+-------------------------+------+-----+----------------------+
//	| MultiHeader{type,0,err} | body | ... | MultiHeader{-1,1,-1} |
//	+-------------------------+------+-----+----------------------+
//
// The reply header's err is 0 even when the multi failed; the failure is in
// the results. An empty response decodes with Results nil.
type MultiResponse struct {
	Results []MultiResult
}

// Encode implements jute.Record.
func (m *MultiResponse) Encode(e *jute.Encoder) {
	for _, r := range m.Results {
		h := MultiHeader{Type: r.Op, Done: false, Err: r.Err}
		h.Encode(e)
		if r.Record != nil {
			r.Record.Encode(e)
		}
	}
	encodeMultiEnd(e)
}

// Decode implements jute.Record. A result type outside the table on
// MultiResult fails with ErrMultiBadOp.
func (m *MultiResponse) Decode(d *jute.Decoder) {
	m.Results = nil
	for {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		rec, ok := newMultiResultRecord(h.Type)
		if !ok {
			d.Fail(fmt.Errorf("%w: result type %v at index %d", ErrMultiBadOp, h.Type, len(m.Results)))
			return
		}
		if rec != nil {
			rec.Decode(d)
			if d.Err() != nil {
				return
			}
		}
		m.Results = append(m.Results, MultiResult{Op: h.Type, Err: h.Err, Record: rec})
	}
}
