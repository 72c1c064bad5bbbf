package zkproto

import "keeper/coordination/jute"

// This file holds the authentication records: auth(100), sasl(102) and
// whoAmI(107) (docs/zookeeper-protocol.md §2.2, §7.5, §7.6).

// AuthPacket is the body of auth(100). Its reply has no body and zxid 0;
// a rejected packet gets AuthFailed and the connection is closed.
//
//	type int | scheme ustring | auth buffer
type AuthPacket struct {
	Type   int32 // always 0; ignored
	Scheme string
	Auth   []byte // scheme-specific credentials, such as "user:pass" for digest
}

// Encode implements jute.Record.
func (r *AuthPacket) Encode(e *jute.Encoder) {
	e.Int(r.Type)
	e.String(r.Scheme)
	e.Buffer(r.Auth)
}

// Decode implements jute.Record.
func (r *AuthPacket) Decode(d *jute.Decoder) {
	r.Type = d.Int()
	r.Scheme = d.String()
	r.Auth = d.Buffer()
}

// GetSASLRequest is the body of sasl(102): one client token of a SASL
// exchange.
//
//	token buffer
type GetSASLRequest struct {
	Token []byte
}

// Encode implements jute.Record.
func (r *GetSASLRequest) Encode(e *jute.Encoder) { e.Buffer(r.Token) }

// Decode implements jute.Record.
func (r *GetSASLRequest) Decode(d *jute.Decoder) { r.Token = d.Buffer() }

// SetSASLResponse answers sasl(102) with the server's next token.
//
//	token buffer
type SetSASLResponse struct {
	Token []byte
}

// Encode implements jute.Record.
func (r *SetSASLResponse) Encode(e *jute.Encoder) { e.Buffer(r.Token) }

// Decode implements jute.Record.
func (r *SetSASLResponse) Decode(d *jute.Decoder) { r.Token = d.Buffer() }

// ClientInfo is one authenticated identity of a connection, as whoAmI
// reports it: ("ip", "127.0.0.1") or ("digest", "user").
//
//	authScheme ustring | user ustring
type ClientInfo struct {
	AuthScheme string
	User       string
}

// Encode implements jute.Record.
func (r *ClientInfo) Encode(e *jute.Encoder) { e.String(r.AuthScheme); e.String(r.User) }

// Decode implements jute.Record.
func (r *ClientInfo) Decode(d *jute.Decoder) { r.AuthScheme = d.String(); r.User = d.String() }

// WhoAmIResponse answers whoAmI(107) with the connection's identities in
// the order they were added.
//
//	clientInfo vector<ClientInfo>
type WhoAmIResponse struct {
	ClientInfo []ClientInfo
}

// Encode implements jute.Record.
func (r *WhoAmIResponse) Encode(e *jute.Encoder) {
	e.VectorLen(len(r.ClientInfo), r.ClientInfo == nil)
	for i := range r.ClientInfo {
		r.ClientInfo[i].Encode(e)
	}
}

// Decode implements jute.Record. A null vector reads as nil.
func (r *WhoAmIResponse) Decode(d *jute.Decoder) {
	r.ClientInfo = nil
	n := d.VectorLen(8) // two string lengths
	if n < 0 {
		return
	}
	out := make([]ClientInfo, n)
	for i := range out {
		out[i].Decode(d)
	}
	if d.Err() == nil {
		r.ClientInfo = out
	}
}
