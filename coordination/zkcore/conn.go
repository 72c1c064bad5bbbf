package zkcore

import (
	"net/netip"

	"keeper/coordination/jute"
	"keeper/coordination/sasl"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// kind says when a queued request may run.
type kind uint8

const (
	// kindRead runs once every earlier write of the connection is applied.
	kindRead kind = iota
	// kindWrite is prepared at once and completes when its txn is applied.
	kindWrite
	// kindEager runs at arrival (ping, auth); only its reply waits its turn.
	kindEager
	// kindConnect is the handshake of a new session: nothing behind it runs
	// until its createSession txn is applied.
	kindConnect
)

// entry is one request in a connection's queue.
type entry struct {
	kind     kind
	xid      int32
	op       zkproto.Op
	body     jute.Record
	raw      []byte  // writes: the body as the client sent it (Request.Raw)
	badBody  bool    // the body did not decode: reply MarshallingError
	executed bool    // prepared (writes) or run (reads, eager)
	done     bool    // reply is in reply, ready to leave in order
	zxid     zxid.ID // for writes: the zxid of the txn
	reply    []byte  // the whole frame, length prefix included
	close    bool    // close the connection after this reply
	received int64   // MonoMs at arrival, for latency statistics
	// revalidating: a learner's reattach waiting for the leader's
	// verdict (Revalidated).
	revalidating bool
	// connect is a handshake's request (kindConnect), kept so that a
	// handshake still unanswered when the member changes role can be held
	// again instead of refused (rehold).
	connect *zkproto.ConnectRequest
	// gated: enforced authentication may refuse this request; pump
	// decides when it comes to it, after the auth and sasl requests before
	// it ran. unknown: the opcode is one a client may not send.
	gated, unknown bool
}

// conn is the server's view of one client connection.
type conn struct {
	id     ConnID
	remote netip.AddrPort
	// establishedMs is the wall time the connection was accepted.
	establishedMs int64
	ids           []zkproto.ID // auth identities, in the order they were added
	session       int64        // 0 until the handshake assigned one
	timeoutMs     int32
	// readOnlyByte: the ConnectRequest carried the optional readOnly byte,
	// so the response carries one too.
	readOnlyByte bool
	// hold is the handshake waiting for the member to serve (hold.go);
	// heldAhead is set once it waited for the member to catch up.
	hold      *heldHandshake
	heldAhead bool

	// sasl is the connection's SASL exchange, from its first sasl(102).
	sasl sasl.Mechanism

	queue []*entry

	out        []byte // frames not yet taken by Ready
	completed  int    // requests whose replies are in out
	dirty      bool   // out has data, or closeAfter is set; c is in Server.dirty
	closeAfter bool   // close once out is sent
	closing    bool   // ignore further requests: a closing reply is queued

	// heldBytes is the output emitted for c that its driver has not yet
	// reported written (Written): in out, or handed out in Ready.Sends.
	heldBytes int
	// blocked: pump stopped running c's requests because its output, or
	// all connections' output, was over budget; Written resumes it.
	blocked bool

	stats connStats
}

// classify says when a request may run. In a quorum a sync waits, like a
// write, for the leader's commit point.
func (s *Server) classify(op zkproto.Op) kind {
	switch op {
	case zkproto.OpSync:
		if s.mode == Standalone {
			return kindRead
		}
		return kindWrite
	case zkproto.OpAuth, zkproto.OpSASL:
		return kindEager
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL,
		zkproto.OpDelete, zkproto.OpSetData, zkproto.OpSetACL, zkproto.OpMulti,
		zkproto.OpReconfig, zkproto.OpCloseSession:
		return kindWrite
	}
	return kindRead
}

// pump runs whatever c's queue allows, then moves finished replies at the
// head of the queue to the connection's output. It runs nothing new while
// the connection's output is over budget (see outputBlocked): the request
// waits in the queue, and Written pumps again once the client has read.
func (s *Server) pump(c *conn, now Now) {
	if c.hold != nil {
		return // nothing runs or leaves before the handshake's answer
	}
	pendingWrites := 0
	produced := 0 // bytes of replies made by this pump, not yet emitted
	c.blocked = false
queue:
	for _, e := range c.queue {
		if c.closing && !e.executed {
			break
		}
		if !e.executed && s.outputBlocked(c, produced) {
			s.block(c)
			break queue
		}
		if e.gated {
			e.gated = false
			if s.mustAuthenticate(c, e.op) {
				s.refuseUnauthenticated(c, e)
			} else {
				s.admit(c, e)
			}
		}
		switch {
		case e.done:
		case e.executed:
			if e.kind == kindConnect {
				s.flush(c, now)
				return
			}
			pendingWrites++
		case e.kind == kindWrite:
			s.prepWrite(c, e, now)
			if !e.done {
				pendingWrites++
			}
		case e.kind == kindEager:
			s.runEager(c, e, now)
			produced += len(e.reply)
		case pendingWrites == 0:
			s.runRead(c, e, now)
			produced += len(e.reply)
		}
	}
	s.flush(c, now)
}

// flush moves the replies of finished requests at the head of c's queue to
// its output, stopping at the first unfinished one.
func (s *Server) flush(c *conn, now Now) {
	n := 0
	for _, e := range c.queue {
		if !e.done {
			break
		}
		n++
		s.emit(c, e.reply)
		if e.kind != kindConnect {
			s.metrics.response(e.reply, false)
		}
		c.stats.lastRespMs = now.MonoMs
		if ms, ok := s.stats.recordLatency(c, e); ok {
			s.metrics.latency(e, ms)
		}
		if e.close {
			s.closeConn(c)
			n = len(c.queue)
			break
		}
	}
	c.completed += n
	if n > 0 {
		s.markDirty(c)
		clear(c.queue[:n])
		c.queue = c.queue[n:]
		if len(c.queue) == 0 {
			c.queue = nil
		}
	}
}

// emit appends one frame to c's output. Nothing follows a close: once the
// server decided to end the connection (its session closed or expired), a
// reply would speak for a session that no longer exists.
func (s *Server) emit(c *conn, frame []byte) {
	if frame == nil || c.closeAfter {
		return
	}
	if c.out == nil {
		c.out = frame // the entry's frame is not used again: no copy
	} else {
		c.out = append(c.out, frame...)
	}
	c.heldBytes += len(frame)
	s.heldBytes += len(frame)
	c.stats.sent++
	s.stats.packetsSent++
	s.markDirty(c)
}

// closeConn asks the driver to close c once its output is sent. No further
// request on it runs.
func (s *Server) closeConn(c *conn) {
	c.closing = true
	c.closeAfter = true
	s.markDirty(c)
}

func (s *Server) markDirty(c *conn) {
	if !c.dirty {
		c.dirty = true
		s.dirty = append(s.dirty, c.id)
	}
}

// finish completes e with a reply frame built from header and body.
func (s *Server) finish(e *entry, zx zxid.ID, code zkproto.Code, body jute.Record) {
	e.reply = s.replyFrame(e.xid, zx, code, body)
	e.done = true
	e.executed = true
}

// maxScratchBytes bounds the encoding buffer replyFrame keeps between
// replies.
const maxScratchBytes = 64 << 10

// replyFrame encodes a length-prefixed reply. The body is present only when
// code is OK (docs/zookeeper-protocol.md §1.4). The frame is allocated at
// its exact size: most replies are a header and a stat or a path, and
// every byte allocated per request brings the next collection closer. A
// getData reply is encoded straight into a buffer of its size (its data
// may be large); every other reply is encoded into the server's scratch
// buffer first and copied out.
func (s *Server) replyFrame(xid int32, zx zxid.ID, code zkproto.Code, body jute.Record) []byte {
	if r, ok := body.(*zkproto.GetDataResponse); ok && code == zkproto.CodeOK {
		const statBytes = 68 // a Stat on the wire
		e := jute.Encoder{B: make([]byte, 4, 4+16+4+len(r.Data)+statBytes)}
		encodeReply(&e, xid, zx, code, body)
		return e.B
	}
	e := jute.Encoder{B: s.scratch[:0]}
	e.B = append(e.B, 0, 0, 0, 0)
	encodeReply(&e, xid, zx, code, body)
	frame := make([]byte, len(e.B))
	copy(frame, e.B)
	if cap(e.B) <= maxScratchBytes {
		s.scratch = e.B[:0]
	}
	return frame
}

// encodeReply encodes a reply after the 4 bytes e.B already holds for
// its length, and fills them in.
func encodeReply(e *jute.Encoder, xid int32, zx zxid.ID, code zkproto.Code, body jute.Record) {
	e.Int(xid)
	e.Long(int64(zx))
	e.Int(int32(code))
	if code == zkproto.CodeOK && body != nil {
		body.Encode(e)
	}
	putLength(e.B)
}

// putLength writes len(b)-4 into the first four bytes of b.
func putLength(b []byte) {
	n := uint32(len(b) - 4)
	b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
}
