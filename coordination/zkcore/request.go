package zkcore

import (
	"errors"
	"fmt"
	"slices"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// Request is one decoded request frame.
type Request struct {
	Header zkproto.RequestHeader
	// Body is the request record; nil for ops that have none.
	Body jute.Record
	// Bad is set when the body failed to decode: the reply is
	// MarshallingError and the connection stays open.
	Bad bool
	// Unknown is set for opcodes a client may not send: the reply is
	// Unimplemented and the connection is closed.
	Unknown bool
	// Bytes is the frame's size, its length prefix included.
	Bytes int
	// Raw is the body as the client sent it (the frame after the
	// RequestHeader), kept for writes only: a learner forwards those bytes
	// to the leader as they came, as Apache ZooKeeper's learners do
	// (docs/zookeeper-protocol.md §10.3), so the leader decodes exactly
	// what the client sent.
	Raw []byte
}

// ErrShortFrame means a frame was too short to hold a request header; the
// connection must be closed.
var ErrShortFrame = errors.New("zkcore: frame shorter than a request header")

// DecodeRequest decodes the payload of one request frame (without its
// length prefix). It is pure and safe to call from any goroutine, so
// drivers decode on their connection's reader. Only a frame too short for a
// header is an error.
func DecodeRequest(payload []byte, maxBuffer int) (Request, error) {
	if len(payload) < 8 {
		return Request{}, fmt.Errorf("%w: %d bytes", ErrShortFrame, len(payload))
	}
	d := jute.NewDecoder(payload, maxBuffer)
	r := Request{Bytes: len(payload) + frameHeaderBytes}
	r.Header.Xid = d.Int()
	r.Header.Op = zkproto.Op(d.Int())
	if forwarded(r.Header.Op) {
		r.Raw = payload[8:len(payload):len(payload)]
	}
	if clientMayNotSend(r.Header.Op) {
		r.Unknown = true
		return r, nil
	}
	body, known := zkproto.NewRequest(r.Header.Op)
	if !known {
		r.Unknown = true
		return r, nil
	}
	if body == nil {
		return r, nil
	}
	// Like Java's reader, ignore bytes after the record.
	body.Decode(d)
	if d.Err() != nil || !multiKindOK(r.Header.Op, body) || !normalizeMulti(body) {
		r.Bad = true
		return r, nil
	}
	r.Body = body
	return r, nil
}

// forwarded lists the client requests a learner forwards with their bytes
// (a sync goes as zab's own sync request, createSession is not a client
// request).
func forwarded(op zkproto.Op) bool {
	switch op {
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL,
		zkproto.OpDelete, zkproto.OpSetData, zkproto.OpSetACL, zkproto.OpMulti,
		zkproto.OpReconfig, zkproto.OpCloseSession:
		return true
	}
	return false
}

// clientMayNotSend lists opcodes that exist but are not client requests.
// check(13) outside a multi is refused rather than logged: Apache ZooKeeper
// 3.4–3.9 logs it as a txn it then cannot replay (docs/zookeeper-protocol.md §2.4).
func clientMayNotSend(op zkproto.Op) bool {
	switch op {
	case zkproto.OpNotification, zkproto.OpCheck, zkproto.OpDeleteContainer,
		zkproto.OpCreateSession, zkproto.OpError:
		return true
	}
	return false
}

// multiKindOK enforces that multi holds only writes and multiRead only
// reads; mixing is a MarshallingError (docs/zookeeper-protocol.md §2.3).
func multiKindOK(op zkproto.Op, body jute.Record) bool {
	m, ok := body.(*zkproto.MultiRequest)
	if !ok {
		return true
	}
	for _, sub := range m.Ops {
		isRead := sub.Op == zkproto.OpGetData || sub.Op == zkproto.OpGetChildren
		if isRead != (op == zkproto.OpMultiRead) {
			return false
		}
	}
	return true
}

// normalizeMulti gives the ops of a multi the meaning Apache ZooKeeper's
// MultiOperationRecord gives them when it decodes: a create's kind comes
// from its flags, not its op (the container flag makes a container, a
// non-TTL createTTL a plain create, ignoring its ttl; TTL flags on another
// op are left for prep to refuse), and the watch flag of a multiRead's
// reads is dropped. It reports false for a request ZooKeeper cannot decode
// (MarshallingError).
func normalizeMulti(body jute.Record) bool {
	m, ok := body.(*zkproto.MultiRequest)
	if !ok {
		return true
	}
	for i := range m.Ops {
		sub := &m.Ops[i]
		switch r := sub.Record.(type) {
		case *zkproto.GetDataRequest:
			r.Watch = false
		case *zkproto.GetChildrenRequest:
			r.Watch = false
		case *zkproto.CreateRequest:
			switch {
			case r.Flags == zkproto.FlagContainer:
				sub.Op = zkproto.OpCreateContainer
			case sub.Op == zkproto.OpCreateContainer:
				sub.Op = zkproto.OpCreate
			}
		case *zkproto.CreateTTLRequest:
			ttlFlags := r.Flags == zkproto.FlagPersistentWithTTL || r.Flags == zkproto.FlagPersistentSequentialWithTTL
			if !ttlFlags {
				sub.Op = zkproto.OpCreate
				if r.Flags == zkproto.FlagContainer {
					sub.Op = zkproto.OpCreateContainer
				}
				sub.Record = &zkproto.CreateRequest{Path: r.Path, Data: r.Data, ACL: r.ACL, Flags: r.Flags}
			}
		}
	}
	return true
}

// Request queues one request from connection id and runs what it can.
func (s *Server) Request(id ConnID, r Request, now Now) {
	c, ok := s.conns[id]
	if !ok || c.closing {
		return
	}
	if c.hold != nil {
		c.hold.reqs = append(c.hold.reqs, r) // runs once the handshake is answered
		return
	}
	s.stats.packetsReceived++
	s.metrics.bytesReceived.Add(int64(r.Bytes))
	c.stats.received++
	c.stats.lastOp = r.Header.Op
	s.touch(c, now)
	e := &entry{
		kind:     s.classify(r.Header.Op),
		xid:      r.Header.Xid,
		op:       r.Header.Op,
		body:     r.Body,
		raw:      r.Raw,
		badBody:  r.Bad,
		unknown:  r.Unknown,
		received: now.MonoMs,
	}
	if s.mustAuthenticate(c, e.op) {
		e.gated = true // pump refuses it, or admits it once earlier auth succeeded
	} else {
		s.admit(c, e)
	}
	c.queue = append(c.queue, e)
	s.pump(c, now)
}

// admit answers at once the requests that need no run: an unknown opcode,
// and a body that did not decode.
func (s *Server) admit(c *conn, e *entry) {
	switch {
	case e.unknown:
		e.kind = kindEager
		s.finish(e, -1, zkproto.CodeUnimplemented, nil)
		e.close = true
		c.closing = true
	case e.badBody && e.op == zkproto.OpSASL:
		// ZooKeeper's server fails reading it and drops the connection.
		s.closeWithoutReply(c, e)
	case e.badBody && e.kind != kindWrite:
		// A write with a bad body still becomes an error txn (below, in
		// prep); a read just gets the error, in order.
		e.kind = kindEager
		s.finish(e, s.LastZxid(), zkproto.CodeMarshallingError, nil)
	}
}

// runEager runs a request whose effect does not depend on earlier writes:
// auth, which Apache ZooKeeper also answers at once.
func (s *Server) runEager(c *conn, e *entry, now Now) {
	switch e.op {
	case zkproto.OpAuth:
		s.runAuth(c, e)
	case zkproto.OpSASL:
		s.runSASL(c, e)
	default:
		s.finish(e, s.LastZxid(), zkproto.CodeUnimplemented, nil)
	}
}

// runAuth adds the identities an auth packet proves. A rejected packet gets
// AuthFailed and the connection is closed (docs/zookeeper-protocol.md §7.5). Auth replies carry
// zxid 0.
func (s *Server) runAuth(c *conn, e *entry) {
	p := e.body.(*zkproto.AuthPacket)
	ids, err := s.authenticate(c, p)
	if err != nil {
		s.stats.authFailed++
		s.finish(e, 0, zkproto.CodeAuthFailed, nil)
		e.close = true
		c.closing = true
		return
	}
	for _, id := range ids {
		if !slices.Contains(c.ids, id) {
			c.ids = append(c.ids, id)
		}
	}
	s.finish(e, 0, zkproto.CodeOK, nil)
}
