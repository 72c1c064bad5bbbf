package zkproto

import (
	"fmt"

	"keeper/coordination/jute"
)

// PasswdLen is the length of a session password. A ConnectResponse must
// carry exactly this many bytes: the C client reads the response into a
// fixed 41-byte struct (docs/zookeeper-protocol.md §1.3).
const PasswdLen = 16

// Handshake payload sizes with a 16-byte password (docs/zookeeper-protocol.md §1.2, §1.3).
const (
	ConnectRequestLen  = 45 // with the readOnly byte; 44 without
	ConnectResponseLen = 37 // with the readOnly byte; 36 without
)

// ConnectRequest is the first frame a client sends on a new connection. It
// has no RequestHeader (docs/zookeeper-protocol.md §1.2).
//
//	protocolVersion int | lastZxidSeen long | timeOut int | sessionId long |
//	passwd buffer | [readOnly bool]
//
// The readOnly byte is optional: clients older than 3.4 omit it, and the
// server must then omit it from its response too. Decode sets HasReadOnly
// when the byte is present; Encode writes it only when HasReadOnly is set.
type ConnectRequest struct {
	ProtocolVersion int32  // always 0; servers ignore it
	LastZxidSeen    int64  // the highest zxid the client has seen, 0 if none
	TimeoutMs       int32  // requested session timeout in milliseconds
	SessionID       int64  // 0 asks for a new session; else reattach
	Passwd          []byte // 16 bytes; zeros for a new session
	ReadOnly        bool   // the client accepts a read-only server
	HasReadOnly     bool   // the readOnly byte is (to be) on the wire
}

// Encode implements jute.Record.
func (r *ConnectRequest) Encode(e *jute.Encoder) {
	e.Int(r.ProtocolVersion)
	e.Long(r.LastZxidSeen)
	e.Int(r.TimeoutMs)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode implements jute.Record. The readOnly byte is read if any input
// remains after the password, so a ConnectRequest must be the last record in
// the decoder's input. Bytes after the readOnly byte are left unread, as the
// Java server leaves them; jute.Unmarshal rejects them, DecodeConnectRequest
// ignores them.
func (r *ConnectRequest) Decode(d *jute.Decoder) {
	r.ProtocolVersion = d.Int()
	r.LastZxidSeen = d.Long()
	r.TimeoutMs = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	r.ReadOnly = false
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
}

// DecodeConnectRequest decodes the payload of a connection's first frame.
// maxLen bounds the password length (see jute.NewDecoder). Trailing bytes
// after the readOnly byte are ignored, as the Java server ignores them.
// Errors wrap the jute error; the server answers them by closing the
// connection, since no session exists to reply to.
func DecodeConnectRequest(payload []byte, maxLen int) (ConnectRequest, error) {
	var r ConnectRequest
	d := jute.NewDecoder(payload, maxLen)
	r.Decode(d)
	if err := d.Err(); err != nil {
		return ConnectRequest{}, fmt.Errorf("zkproto: decode connect request: %w", err)
	}
	return r, nil
}

// ConnectResponse is the server's answer to a ConnectRequest (docs/zookeeper-protocol.md §1.3).
//
//	protocolVersion int | timeOut int | sessionId long | passwd buffer |
//	[readOnly bool]
//
// A TimeoutMs of 0 tells the client its session is invalid or expired; the
// server then sends SessionID 0 and 16 zero bytes of password. The readOnly
// byte follows the same presence rule as in ConnectRequest: send it exactly
// when the request had it.
type ConnectResponse struct {
	ProtocolVersion int32  // 0
	TimeoutMs       int32  // negotiated session timeout in ms; 0 = invalid session
	SessionID       int64  // 0 when invalid
	Passwd          []byte // must be exactly PasswdLen bytes
	ReadOnly        bool   // the server is in read-only mode
	HasReadOnly     bool   // the readOnly byte is (to be) on the wire
}

// Encode implements jute.Record. It does not check the password length;
// the server builds the response and must pass PasswdLen bytes.
func (r *ConnectResponse) Encode(e *jute.Encoder) {
	e.Int(r.ProtocolVersion)
	e.Int(r.TimeoutMs)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode implements jute.Record; the readOnly byte is read if any input
// remains, so a ConnectResponse must be the last record in the input.
func (r *ConnectResponse) Decode(d *jute.Decoder) {
	r.ProtocolVersion = d.Int()
	r.TimeoutMs = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	r.ReadOnly = false
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
}

// DecodeConnectResponse decodes the payload of the server's first frame, for
// client-side use. Trailing bytes after the readOnly byte are ignored, as
// the Java client ignores them.
func DecodeConnectResponse(payload []byte, maxLen int) (ConnectResponse, error) {
	var r ConnectResponse
	d := jute.NewDecoder(payload, maxLen)
	r.Decode(d)
	if err := d.Err(); err != nil {
		return ConnectResponse{}, fmt.Errorf("zkproto: decode connect response: %w", err)
	}
	return r, nil
}
