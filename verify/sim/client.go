package sim

import (
	"encoding/binary"

	"keeper/coordination/jute"
	"keeper/coordination/session"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
)

// client is a ZooKeeper client: one session at a time, on one connection
// at a time, pipelining a few requests. When a request gets no reply in
// time it gives up on the connection (the outcome of what was in flight is
// unknown) and reattaches its session on another server; when a server
// says the session expired, it starts a new one.
type client struct {
	c  *Cluster
	id int

	// The session: id and password, the timeout asked for and the one
	// negotiated, and the highest zxid seen (sent on reattach).
	session       int64
	passwd        []byte
	wantTimeoutMs int32
	timeoutMs     int32
	lastZxid      int64
	sess          *sessionRecord
	closing       bool // closeSession sent: no more requests on this session

	conn       *conn
	nextXid    int32
	pipeline   int   // most requests in flight at once
	nextDialMs int64 // backoff after a failed connection
	lastServer int   // the server of the last connection; the next one tries another

	draining bool // end of run: no new requests
	gone     bool // end of run: the client has left without closing its session

	versions map[string]int32 // last data version seen per path, for CAS
	values   int              // counter for unique payloads

	// operator marks the client that changes the membership (operator.go);
	// config is the configuration its last successful reconfig returned.
	operator bool
	config   *zoocfg.Ensemble
}

// conn is one client connection.
type conn struct {
	id        zkcore.ConnID
	server    int
	inc       int
	openedMs  int64
	lastAtMs  int64 // FIFO towards the server
	handshake bool  // waiting for the ConnectResponse
	lastSend  int64 // ms of the last request sent
	pending   []*op // sent and not answered, in order (pings too)
	rec       *connRecord
	authed    bool // the operator sent its credentials on this connection
}

func newClient(c *Cluster, id int) *client {
	cl := &client{c: c, id: id, pipeline: 1 + c.rng.IntN(3), versions: map[string]int32{},
		wantTimeoutMs: int32(15+c.rng.IntN(25)) * int32(c.opts.TickMs)}
	cl.nextXid = 1
	c.schedule(c.rng.Int64N(c.opts.TickMs), event{kind: evClientWake, client: id})
	return cl
}

// clientWake lets a client act: give up on a silent connection, connect,
// send a request or a ping.
func (c *Cluster) clientWake(cl *client) {
	if cl.gone {
		return
	}
	c.schedule(c.nowMs+5+c.rng.Int64N(30), event{kind: evClientWake, client: cl.id})
	if cn := cl.conn; cn != nil && c.connTimedOut(cl, cn) {
		c.hangUp(cl, "timeout")
	}
	cn := cl.conn
	switch {
	case cn == nil:
		if c.nowMs >= cl.nextDialMs && (!cl.draining || cl.session != 0) {
			c.connect(cl)
		}
	case cn.handshake:
	case cl.operator && !cn.authed:
		c.authenticate(cl)
	case !cl.draining && !cl.closing && len(cn.pending) < cl.pipeline && c.rng.IntN(3) == 0:
		c.issue(cl, c.nextOp(cl))
	case int64(c.nowMs-cn.lastSend) > int64(cl.negotiated()/3):
		ping := &op{kind: zkproto.OpPing, xid: zkproto.XidPing}
		c.send(cl, ping)
		c.hist.ops = append(c.hist.ops, ping)
	}
}

// negotiated is the session timeout the client works with.
func (cl *client) negotiated() int32 {
	if cl.timeoutMs > 0 {
		return cl.timeoutMs
	}
	return cl.wantTimeoutMs
}

// connTimedOut applies rules like the Java client's: the handshake must
// finish within half the session timeout, and the oldest request (a ping,
// when idle) must be answered within two thirds of it.
func (c *Cluster) connTimedOut(cl *client, cn *conn) bool {
	t := int64(cl.negotiated())
	if cn.handshake {
		return c.nowMs-cn.openedMs > t/2
	}
	return len(cn.pending) > 0 && c.nowMs-cn.pending[0].callMs > 2*t/3
}

// connect dials a random server, with the session if there is one.
func (c *Cluster) connect(cl *client) {
	id := 1 + c.rng.IntN(len(c.servers)-1)
	if cl.lastServer != 0 && id == cl.lastServer && len(c.servers) > 2 { // standalone: the only one
		id = 1 + (id+c.rng.IntN(len(c.servers)-2))%(len(c.servers)-1) // another server
	}
	cl.lastServer = id
	req := zkproto.ConnectRequest{TimeoutMs: cl.wantTimeoutMs, LastZxidSeen: cl.lastZxid, Passwd: make([]byte, 16)}
	if cl.session != 0 {
		req.SessionID, req.Passwd = cl.session, cl.passwd
	}
	cl.conn = c.dial(cl, id, req)
	cl.conn.rec = &connRecord{client: cl.id, session: cl.session, server: id, conn: cl.conn.id}
	c.hist.conns = append(c.hist.conns, cl.conn.rec)
}

// hangUp closes the client's connection: what was in flight has an unknown
// outcome. The client reconnects after a short backoff.
func (c *Cluster) hangUp(cl *client, why string) {
	cn := cl.conn
	if cn == nil {
		return
	}
	if why == "timeout" {
		c.tracef("client %d: connection %d to server %d timed out (%d in flight)", cl.id, cn.id, cn.server, len(cn.pending))
	}
	c.sendToServer(cn, event{frame: frameClose})
	c.dropConn(cl)
}

// dropConn forgets the client's connection.
func (c *Cluster) dropConn(cl *client) {
	c.stats.Unknown += len(cl.conn.pending)
	cl.conn = nil
	cl.nextDialMs = c.nowMs + 5 + c.rng.Int64N(50)
	if cl.closing {
		cl.forgetSession() // closeSession was sent: this session is over either way
	}
}

func (cl *client) forgetSession() {
	cl.session, cl.passwd, cl.timeoutMs, cl.sess, cl.closing = 0, nil, 0, nil, false
}

// issue sends one workload request.
func (c *Cluster) issue(cl *client, o *op) {
	o.xid = cl.nextXid
	cl.nextXid++
	if o.kind == zkproto.OpCloseSession {
		cl.closing = true
	}
	c.send(cl, o)
	c.hist.ops = append(c.hist.ops, o)
}

// send puts a request on the client's connection.
func (c *Cluster) send(cl *client, o *op) {
	cn := cl.conn
	o.client, o.session, o.conn, o.server = cl.id, cl.session, cn.id, cn.server
	c.seq++
	o.callSeq, o.callMs = c.seq, c.nowMs
	body := requestBody(o)
	payload := zkproto.EncodeRequest(zkproto.RequestHeader{Xid: o.xid, Op: o.kind}, body)
	cn.pending = append(cn.pending, o)
	cn.rec.sent = append(cn.rec.sent, o.xid)
	cn.lastSend = c.nowMs
	c.sendToServer(cn, event{frame: frameRequest, payload: payload})
	if c.tracing() {
		c.debugf("client %d conn %d -> server %d: %v %s xid=%d v=%d %q", cl.id, cn.id, cn.server, o.kind, o.path, o.xid, o.version, o.value)
	}
}

// deliverToClient hands server bytes to a client.
func (c *Cluster) deliverToClient(e *event) {
	cl := c.clients[e.client]
	cn := cl.conn
	if cn == nil || cn.id != e.conn {
		return // a connection the client already gave up
	}
	if e.lost {
		if c.tracing() {
			c.debugf("client %d: connection %d to server %d broke", cl.id, cn.id, cn.server)
		}
		c.dropConn(cl)
		return
	}
	b := e.payload
	for len(b) >= 4 && cl.conn == cn {
		n := int(binary.BigEndian.Uint32(b))
		if n > len(b)-4 {
			c.violate("client", "client %d: truncated frame from server %d", cl.id, cn.server)
			break
		}
		c.frame(cl, cn, b[4:4+n])
		b = b[4+n:]
	}
	if e.close && cl.conn == cn {
		if c.tracing() {
			c.debugf("client %d: server %d closed connection %d", cl.id, cn.server, cn.id)
		}
		c.dropConn(cl)
	}
}

// frame handles one frame from the server.
func (c *Cluster) frame(cl *client, cn *conn, p []byte) {
	if cn.handshake {
		c.handshake(cl, cn, p)
		return
	}
	h, _, err := zkproto.DecodeReplyHeader(p)
	if err != nil {
		c.violate("client", "client %d: bad reply frame from server %d: %v", cl.id, cn.server, err)
		return
	}
	if h.Xid == zkproto.XidNotification {
		_, rec, err := zkproto.DecodeReply(p, zkproto.OpNotification, 0)
		if ev, ok := rec.(*zkproto.WatcherEvent); ok && err == nil {
			c.seq++
			c.hist.events = append(c.hist.events, watchEvent{client: cl.id, session: cl.session, conn: cn.id,
				seq: c.seq, typ: ev.Type, path: ev.Path})
		}
		return
	}
	cn.rec.got = append(cn.rec.got, h.Xid)
	o := takePending(cn, h.Xid)
	if o == nil {
		return // the FIFO checker reports the stray reply
	}
	c.complete(cl, o, p)
}

// takePending removes and returns the request xid answers: the oldest one,
// if the server kept the order.
func takePending(cn *conn, xid int32) *op {
	for i, o := range cn.pending {
		if o.xid == xid {
			cn.pending = append(cn.pending[:i:i], cn.pending[i+1:]...)
			return o
		}
	}
	return nil
}

// handshake handles the ConnectResponse.
func (c *Cluster) handshake(cl *client, cn *conn, p []byte) {
	r, err := zkproto.DecodeConnectResponse(p, 0)
	if err != nil {
		c.violate("client", "client %d: bad connect response from server %d: %v", cl.id, cn.server, err)
		c.hangUp(cl, "bad handshake")
		return
	}
	if r.TimeoutMs <= 0 {
		if cl.sess != nil {
			c.seq++
			cl.sess.expiredSeq = c.seq
			c.tracef("client %d: session %#x expired (told by server %d)", cl.id, cl.session, cn.server)
		}
		cl.forgetSession()
		return // the server closes the connection
	}
	cn.handshake = false
	cn.lastSend = c.nowMs
	if cl.session != 0 && r.SessionID != cl.session {
		c.violate("session", "client %d reattached session %#x on server %d and got %#x", cl.id, cl.session, cn.server, r.SessionID)
	}
	if cl.session == 0 {
		if want := session.Password(r.SessionID); string(r.Passwd) != string(want[:]) {
			c.violate("session", "session %#x from server %d came with a wrong password", r.SessionID, cn.server)
		}
		c.seq++
		cl.session, cl.passwd = r.SessionID, r.Passwd
		cl.sess = &sessionRecord{id: r.SessionID, client: cl.id, createdSeq: c.seq, timeoutMs: r.TimeoutMs}
		c.hist.sessions = append(c.hist.sessions, cl.sess)
		c.tracef("client %d: new session %#x on server %d", cl.id, cl.session, cn.server)
	}
	cl.timeoutMs = r.TimeoutMs
	cn.rec.session = cl.session
}

// complete records a reply.
func (c *Cluster) complete(cl *client, o *op, p []byte) {
	c.seq++
	o.retSeq, o.retMs, o.done = c.seq, c.nowMs, true
	h, rec, err := zkproto.DecodeReply(p, o.kind, jute.DefaultMaxBuffer)
	if err != nil {
		c.violate("client", "client %d: reply to %v xid %d does not decode: %v", cl.id, o.kind, o.xid, err)
		return
	}
	o.hdr = h
	cl.lastZxid = max(cl.lastZxid, h.Zxid)
	if c.tracing() {
		c.debugf("client %d conn %d <- server %d: %v %s xid=%d %v zxid=%s", cl.id, o.conn, o.server, o.kind, o.path, o.xid, h.Err, zx(h.Zxid))
	}
	switch r := rec.(type) {
	case *zkproto.SetDataResponse:
		o.stat = r.Stat
	case *zkproto.GetDataResponse:
		o.stat, o.data = r.Stat, r.Data
	case *zkproto.ExistsResponse:
		o.stat = r.Stat
	}
	if o.kind == zkproto.OpPing || o.kind == zkproto.OpAuth {
		return
	}
	if o.kind == zkproto.OpReconfig {
		c.reconfigAnswered(cl, o, rec)
	}
	c.stats.Ops++
	if o.isWrite() && h.Err == zkproto.CodeOK {
		c.stats.Writes++
	}
	switch {
	case h.Err != zkproto.CodeOK:
		if h.Err == zkproto.CodeNoNode {
			delete(cl.versions, o.path)
		}
	case o.kind == zkproto.OpCreate:
		cl.versions[o.path] = 0
	case o.kind == zkproto.OpDelete:
		delete(cl.versions, o.path)
	case o.kind == zkproto.OpSetData || o.kind == zkproto.OpGetData || o.kind == zkproto.OpExists:
		cl.versions[o.path] = o.stat.Version
	}
}
