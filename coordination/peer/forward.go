package peer

import (
	"errors"
	"fmt"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
)

// ErrBadForward means a forwarded request does not decode.
var ErrBadForward = errors.New("peer: bad forwarded request")

// forwardHeaderBytes is what REQUEST data holds before the request body:
// long sessionId; int cxid; int type.
const forwardHeaderBytes = 16

// EncodeForward encodes a learner's forwarded write as Apache ZooKeeper's
// learners do (docs/zookeeper-protocol.md §10.3): the REQUEST data is
// long sessionId; int cxid; int type; then the request body with no
// length of its own, running to the end; the client's identities go in
// the QuorumPacket's authinfo (returned jute-encoded, as vector<Id>, for
// zab.Message.AuthInfo).
//
// The body is the client's own bytes when the learner kept them (Raw):
// the leader then decodes what the client sent, and a body the learner
// could not decode fails on the leader too (MarshallingError). Otherwise
// it is Body encoded: a createSession's CreateSessionTxn {int timeOut},
// the 4 bytes ZooKeeper's learner sends.
func EncodeForward(f zkcore.Forward) (data, authInfo []byte) {
	var e jute.Encoder
	e.Long(f.SessionID)
	e.Int(f.Cxid)
	e.Int(int32(f.Op))
	switch {
	case f.Raw != nil:
		e.B = append(e.B, f.Raw...)
	case f.Body != nil && !f.Bad:
		f.Body.Encode(&e)
	}
	var a jute.Encoder
	a.VectorLen(len(f.IDs), false)
	for i := range f.IDs {
		f.IDs[i].Encode(&a)
	}
	return e.B, a.B
}

// DecodeForward reads a forwarded write from a keeper or an Apache
// ZooKeeper learner: REQUEST data and authinfo as EncodeForward lays them
// out. The body is decoded as the leader decodes a client's (trailing
// bytes ignored, as Java's reader does); one that does not decode sets
// Bad, for a MarshallingError. An op a client may not send is an error.
func DecodeForward(data, authInfo []byte, maxLen int) (zkcore.Forward, error) {
	var f zkcore.Forward
	if len(data) < forwardHeaderBytes {
		return f, fmt.Errorf("%w: %d bytes", ErrBadForward, len(data))
	}
	d := jute.NewDecoder(data[:forwardHeaderBytes], maxLen)
	f.SessionID, f.Cxid, f.Op = d.Long(), d.Int(), zkproto.Op(d.Int())
	ids, err := decodeAuthInfo(authInfo, maxLen)
	if err != nil {
		return f, err
	}
	f.IDs = ids
	body := data[forwardHeaderBytes:]
	if f.Op == zkproto.OpCreateSession {
		var cs txn.CreateSession
		bd := jute.NewDecoder(body, maxLen)
		cs.Decode(bd)
		if bd.Err() != nil {
			return f, fmt.Errorf("%w: createSession body: %v", ErrBadForward, bd.Err())
		}
		f.Body = &cs
		return f, nil
	}
	// The client's frame without its length: cxid and op, then the body.
	payload := make([]byte, 0, 8+len(body))
	payload = append(payload, data[8:forwardHeaderBytes]...)
	payload = append(payload, body...)
	r, err := zkcore.DecodeRequest(payload, maxLen)
	if err != nil || r.Unknown {
		return f, fmt.Errorf("%w: op %v", ErrBadForward, f.Op)
	}
	f.Body, f.Bad, f.Raw = r.Body, r.Bad, r.Raw
	return f, nil
}

// decodeAuthInfo reads a REQUEST's authinfo, vector<Id>; nil or a null
// vector is no identity.
func decodeAuthInfo(b []byte, maxLen int) ([]zkproto.ID, error) {
	if b == nil {
		return nil, nil
	}
	d := jute.NewDecoder(b, maxLen)
	n := d.VectorLen(8) // an Id takes at least 8 bytes
	var ids []zkproto.ID
	for i := 0; i < n && d.Err() == nil; i++ {
		var id zkproto.ID
		id.Decode(d)
		ids = append(ids, id)
	}
	if err := d.Finish(); err != nil {
		return nil, fmt.Errorf("%w: authinfo: %v", ErrBadForward, err)
	}
	return ids, nil
}
