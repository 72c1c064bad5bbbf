package zkproto

import (
	"encoding/binary"
	"fmt"

	"keeper/coordination/jute"
)

// RequestHeader starts every request frame after the handshake (8 bytes).
//
//	xid int | type int
type RequestHeader struct {
	Xid int32 // echoed in the reply; see the reserved Xid* values
	Op  Op
}

// Encode implements jute.Record.
func (h *RequestHeader) Encode(e *jute.Encoder) { e.Int(h.Xid); e.Int(int32(h.Op)) }

// Decode implements jute.Record.
func (h *RequestHeader) Decode(d *jute.Decoder) { h.Xid = d.Int(); h.Op = Op(d.Int()) }

// ReplyHeader starts every reply and notification frame (16 bytes).
//
//	xid int | zxid long | err int
type ReplyHeader struct {
	Xid  int32 // the request's xid, or XidNotification
	Zxid int64 // the server's last processed zxid (docs/zookeeper-protocol.md §1.4 for exceptions)
	Err  Code  // CodeOK, or the failure; a failed reply has no body
}

// Encode implements jute.Record.
func (h *ReplyHeader) Encode(e *jute.Encoder) {
	e.Int(h.Xid)
	e.Long(h.Zxid)
	e.Int(int32(h.Err))
}

// Decode implements jute.Record.
func (h *ReplyHeader) Decode(d *jute.Decoder) {
	h.Xid = d.Int()
	h.Zxid = d.Long()
	h.Err = Code(d.Int())
}

// Header sizes on the wire.
const (
	RequestHeaderLen = 8
	ReplyHeaderLen   = 16
)

// recordFunc makes an empty record; a nil recordFunc in a table below means
// the op is known and its body is empty.
type recordFunc func() jute.Record

// requestRecords maps every opcode a client may send to its request record
// (docs/zookeeper-protocol.md §2.1). It is never modified.
var requestRecords = map[Op]recordFunc{
	OpCreate:               func() jute.Record { return &CreateRequest{} },
	OpDelete:               func() jute.Record { return &DeleteRequest{} },
	OpExists:               func() jute.Record { return &ExistsRequest{} },
	OpGetData:              func() jute.Record { return &GetDataRequest{} },
	OpSetData:              func() jute.Record { return &SetDataRequest{} },
	OpGetACL:               func() jute.Record { return &GetACLRequest{} },
	OpSetACL:               func() jute.Record { return &SetACLRequest{} },
	OpGetChildren:          func() jute.Record { return &GetChildrenRequest{} },
	OpSync:                 func() jute.Record { return &SyncRequest{} },
	OpPing:                 nil,
	OpGetChildren2:         func() jute.Record { return &GetChildren2Request{} },
	OpCheck:                func() jute.Record { return &CheckVersionRequest{} },
	OpMulti:                func() jute.Record { return &MultiRequest{} },
	OpCreate2:              func() jute.Record { return &CreateRequest{} },
	OpReconfig:             func() jute.Record { return &ReconfigRequest{} },
	OpCheckWatches:         func() jute.Record { return &CheckWatchesRequest{} },
	OpRemoveWatches:        func() jute.Record { return &RemoveWatchesRequest{} },
	OpCreateContainer:      func() jute.Record { return &CreateRequest{} },
	OpDeleteContainer:      func() jute.Record { return &DeleteContainerRequest{} },
	OpCreateTTL:            func() jute.Record { return &CreateTTLRequest{} },
	OpMultiRead:            func() jute.Record { return &MultiRequest{} },
	OpAuth:                 func() jute.Record { return &AuthPacket{} },
	OpSetWatches:           func() jute.Record { return &SetWatches{} },
	OpSASL:                 func() jute.Record { return &GetSASLRequest{} },
	OpGetEphemerals:        func() jute.Record { return &GetEphemeralsRequest{} },
	OpGetAllChildrenNumber: func() jute.Record { return &GetAllChildrenNumberRequest{} },
	OpSetWatches2:          func() jute.Record { return &SetWatches2{} },
	OpAddWatch:             func() jute.Record { return &AddWatchRequest{} },
	OpWhoAmI:               nil,
	OpCloseSession:         nil,
}

// responseRecords maps every opcode to the response record of its
// successful reply (docs/zookeeper-protocol.md §2.1). It is never modified.
var responseRecords = map[Op]recordFunc{
	OpCreate:               func() jute.Record { return &CreateResponse{} },
	OpDelete:               nil,
	OpExists:               func() jute.Record { return &ExistsResponse{} },
	OpGetData:              func() jute.Record { return &GetDataResponse{} },
	OpSetData:              func() jute.Record { return &SetDataResponse{} },
	OpGetACL:               func() jute.Record { return &GetACLResponse{} },
	OpSetACL:               func() jute.Record { return &SetACLResponse{} },
	OpGetChildren:          func() jute.Record { return &GetChildrenResponse{} },
	OpSync:                 func() jute.Record { return &SyncResponse{} },
	OpPing:                 nil,
	OpGetChildren2:         func() jute.Record { return &GetChildren2Response{} },
	OpMulti:                func() jute.Record { return &MultiResponse{} },
	OpCreate2:              func() jute.Record { return &Create2Response{} },
	OpReconfig:             func() jute.Record { return &GetDataResponse{} },
	OpCheckWatches:         nil,
	OpRemoveWatches:        nil,
	OpCreateContainer:      func() jute.Record { return &Create2Response{} },
	OpDeleteContainer:      nil,
	OpCreateTTL:            func() jute.Record { return &Create2Response{} },
	OpMultiRead:            func() jute.Record { return &MultiResponse{} },
	OpAuth:                 nil,
	OpSetWatches:           nil,
	OpSASL:                 func() jute.Record { return &SetSASLResponse{} },
	OpGetEphemerals:        func() jute.Record { return &GetEphemeralsResponse{} },
	OpGetAllChildrenNumber: func() jute.Record { return &GetAllChildrenNumberResponse{} },
	OpSetWatches2:          nil,
	OpAddWatch:             func() jute.Record { return &ErrorResponse{} },
	OpWhoAmI:               func() jute.Record { return &WhoAmIResponse{} },
	OpCloseSession:         nil,
}

// lookup applies the contract shared by NewRequest and NewResponse.
func lookup(table map[Op]recordFunc, op Op) (jute.Record, bool) {
	f, ok := table[op]
	if !ok {
		return nil, false
	}
	if f == nil {
		return nil, true
	}
	return f(), true
}

// NewRequest returns an empty request record for op, ready to Decode:
//
//	(record, true)  op is known and has a request body
//	(nil, true)     op is known and its body is empty: ping, whoAmI, closeSession
//	(nil, false)    op is unknown or never sent by a client (notification,
//	                createSession, error); the server answers Unimplemented
//
// check(13), deleteContainer(20) and reconfig(16) are decodable here; whether
// to serve them is the server's decision (docs/zookeeper-protocol.md §2.1, §2.4).
func NewRequest(op Op) (jute.Record, bool) { return lookup(requestRecords, op) }

// NewResponse returns an empty record for the body of a successful reply to
// op, with the same contract as NewRequest: (nil, true) for ops whose reply
// has no body (delete, ping, auth, setWatches, ...) and (nil, false) for
// unknown ops and for check(13), which has no reply outside multi.
func NewResponse(op Op) (jute.Record, bool) { return lookup(responseRecords, op) }

// DecodeRequest decodes a request payload (a frame without its length
// prefix): the header, then the record NewRequest gives for its op. maxLen
// bounds every buffer, string and vector inside (see jute.NewDecoder).
// Bytes after the record are ignored, as the Java server ignores them: that
// is how old servers stayed compatible with records that grew a field.
//
// The returned record is nil for ops with an empty body. On error:
//   - frame shorter than a RequestHeader: the error wraps jute.ErrShort and
//     is not a *Error; there is no xid to answer, so close the connection;
//   - unknown op: h is valid and the error wraps ErrUnimplemented;
//   - undecodable body: h is valid and the error wraps ErrMarshallingError
//     and the jute error (and ErrMultiBadOp for a bad op inside a multi).
//
// CodeOf(err) gives the code to answer with in the last two cases.
func DecodeRequest(frame []byte, maxLen int) (RequestHeader, jute.Record, error) {
	d := jute.NewDecoder(frame, maxLen)
	var h RequestHeader
	h.Decode(d)
	if err := d.Err(); err != nil {
		return RequestHeader{}, nil, fmt.Errorf("zkproto: decode request header: %w", err)
	}
	rec, ok := NewRequest(h.Op)
	if !ok {
		return h, nil, fmt.Errorf("zkproto: request op %v: %w", h.Op, ErrUnimplemented)
	}
	if rec == nil {
		return h, nil, nil
	}
	rec.Decode(d)
	if err := d.Err(); err != nil {
		return h, nil, fmt.Errorf("zkproto: decode %v request: %w: %w", h.Op, ErrMarshallingError, err)
	}
	return h, rec, nil
}

// EncodeRequest returns the payload of a request frame (no length prefix):
// the header followed by r. Pass r nil for ops with an empty body.
func EncodeRequest(h RequestHeader, r jute.Record) []byte {
	var e jute.Encoder
	h.Encode(&e)
	if r != nil {
		r.Encode(&e)
	}
	return e.B
}

// AppendRequestFrame appends a complete request frame (length prefix,
// header, r) to dst and returns the extended slice.
func AppendRequestFrame(dst []byte, h RequestHeader, r jute.Record) []byte {
	start := len(dst)
	e := jute.Encoder{B: append(dst, 0, 0, 0, 0)}
	h.Encode(&e)
	if r != nil {
		r.Encode(&e)
	}
	return patchLength(e.B, start)
}

// EncodeReply returns the payload of a reply frame (no length prefix): the
// header, then r only if h.Err is CodeOK (docs/zookeeper-protocol.md §1.4). Pass r nil for replies
// without a body. A notification is EncodeReply(ReplyHeader{Xid:
// XidNotification, Zxid: z}, &WatcherEvent{...}).
func EncodeReply(h ReplyHeader, r jute.Record) []byte {
	var e jute.Encoder
	h.Encode(&e)
	if r != nil && h.Err == CodeOK {
		r.Encode(&e)
	}
	return e.B
}

// AppendReplyFrame appends a complete reply frame (length prefix, then the
// EncodeReply payload) to dst and returns the extended slice.
func AppendReplyFrame(dst []byte, h ReplyHeader, r jute.Record) []byte {
	start := len(dst)
	e := jute.Encoder{B: append(dst, 0, 0, 0, 0)}
	h.Encode(&e)
	if r != nil && h.Err == CodeOK {
		r.Encode(&e)
	}
	return patchLength(e.B, start)
}

// patchLength writes the length of b[start+4:] into the 4-byte placeholder
// at b[start:].
func patchLength(b []byte, start int) []byte {
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// DecodeReplyHeader splits a reply payload (a frame without its length
// prefix) into its header and body, for client-side use. The body aliases
// frame. The error wraps jute.ErrShort if frame is shorter than a header.
func DecodeReplyHeader(frame []byte) (ReplyHeader, []byte, error) {
	d := jute.NewDecoder(frame, 0)
	var h ReplyHeader
	h.Decode(d)
	if err := d.Err(); err != nil {
		return ReplyHeader{}, nil, fmt.Errorf("zkproto: decode reply header: %w", err)
	}
	return h, d.Rest(), nil
}

// DecodeReply decodes a reply payload to a request of type op, for
// client-side use. A notification (xid XidNotification) decodes as a
// *WatcherEvent whatever op is; servers never set err in a notification,
// and one that does is rejected (EncodeReply would drop its body). A reply
// with a non-zero err, or to an op
// whose reply has no body, yields a nil record. Bytes after the record are
// ignored, as the Java client ignores them. An op NewResponse does not know
// gives an error wrapping ErrUnimplemented.
func DecodeReply(frame []byte, op Op, maxLen int) (ReplyHeader, jute.Record, error) {
	h, body, err := DecodeReplyHeader(frame)
	if err != nil {
		return h, nil, err
	}
	var rec jute.Record
	switch {
	case h.Xid == XidNotification && h.Err != CodeOK:
		return h, nil, fmt.Errorf("zkproto: notification with err %v: %w", h.Err, ErrMarshallingError)
	case h.Xid == XidNotification:
		rec = &WatcherEvent{}
	case h.Err != CodeOK:
		return h, nil, nil
	default:
		var ok bool
		if rec, ok = NewResponse(op); !ok {
			return h, nil, fmt.Errorf("zkproto: reply to op %v: %w", op, ErrUnimplemented)
		}
	}
	if rec == nil {
		return h, nil, nil
	}
	d := jute.NewDecoder(body, maxLen)
	rec.Decode(d)
	if err := d.Err(); err != nil {
		return h, nil, fmt.Errorf("zkproto: decode %v reply: %w", op, err)
	}
	return h, rec, nil
}
