package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// Client is one workload client: a node of the Network ("c3") that holds
// a session across connections, prefers a home server and records every
// request, handshake and notification in a History. One goroutine drives
// it; Pause, Resume and Drop may come from another (the nemesis).
type Client struct {
	Name string
	cl   *Cluster
	h    *History
	// order is the servers to try, the home server first.
	order []*Server
	// Timeout is the session timeout asked for; ReqTimeout bounds each
	// request.
	Timeout, ReqTimeout time.Duration

	xids   atomic.Int32
	paused atomic.Bool
	wake   chan struct{} // a notification arrived (a hint; capacity 1)

	mu       sync.Mutex
	sess     Session
	srec     *SessionRec
	lastZxid int64
	conn     *Conn
	connNo   int
	server   *Server
	watches  map[string]bool // "data:/p", "exist:/p", "child:/p" set and not seen fired
}

// NewClient makes a client named name whose home server is home.
func NewClient(cl *Cluster, h *History, name string, home *Server, timeout, reqTimeout time.Duration) *Client {
	c := &Client{Name: name, cl: cl, h: h, Timeout: timeout, ReqTimeout: reqTimeout,
		wake: make(chan struct{}, 1), watches: map[string]bool{}}
	i := home.ID - 1
	for k := range cl.Servers {
		c.order = append(c.order, cl.Servers[(i+k)%len(cl.Servers)])
	}
	return c
}

// Wake is signalled when a notification arrives.
func (c *Client) Wake() <-chan struct{} { return c.wake }

// SessionID is the current session's id, 0 if none.
func (c *Client) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.ID
}

// Server is the server of the live connection, nil if none.
func (c *Client) Server() *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil || c.connDoneLocked() {
		return nil
	}
	return c.server
}

func (c *Client) connDoneLocked() bool {
	select {
	case <-c.conn.Done():
		return true
	default:
		return false
	}
}

// Connected reports whether the client has a live connection.
func (c *Client) Connected() bool { return c.Server() != nil }

// Pause stands for a stopped client process (see Conn.Pause); the driving
// goroutine should wait in WaitUnpaused.
func (c *Client) Pause() {
	c.paused.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Pause()
	}
}

// Resume ends Pause.
func (c *Client) Resume() {
	c.mu.Lock()
	if c.conn != nil {
		c.conn.Resume()
	}
	c.mu.Unlock()
	c.paused.Store(false)
}

// Paused reports whether Pause is in force.
func (c *Client) Paused() bool { return c.paused.Load() }

// Connect makes sure the client has a live connection: it resumes its
// session (or opens a new one if it has none) on the first server, in
// home-first order, that accepts. A server saying the session expired ends
// the session: Connect returns an error wrapping zkproto.ErrSessionExpired
// and the next Connect opens a new one.
func (c *Client) Connect(ctx context.Context) error {
	if c.Connected() {
		return nil
	}
	var errs []error
	for _, s := range c.order {
		err := c.ConnectTo(ctx, s)
		if err == nil || errors.Is(err, zkproto.ErrSessionExpired) {
			return err
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("chaos: %s: no server accepted: %w", c.Name, errors.Join(errs...))
}

// ConnectTo moves the client to s: the old connection, if any, is dropped
// (the session lives on) and the session resumed there. On a resumed
// session the watches not yet fired are set again (setWatches).
func (c *Client) ConnectTo(ctx context.Context, s *Server) error {
	addr, err := c.cl.ClientAddr(c.Name, s)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.conn != nil {
		c.retireLocked()
	}
	sess, last := c.sess, c.lastZxid
	c.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, c.dialTimeout())
	conn, err := Dial(dctx, addr, DialOptions{Session: sess, Timeout: c.Timeout, LastZxid: last, Xids: &c.xids})
	cancel()
	rec := ConnectRec{Client: c.Name, Server: s.ID, Session: sess.ID, LastZxid: last, At: c.h.Now(), Result: "ok"}
	switch {
	case errors.Is(err, ErrRefused):
		rec.Result = "refused"
	case errors.Is(err, zkproto.ErrSessionExpired):
		rec.Result = "expired"
	case err != nil:
		rec.Result = "error"
	}
	c.h.addConnect(rec)
	if err != nil {
		if errors.Is(err, zkproto.ErrSessionExpired) {
			c.endSession(true)
		}
		return err
	}
	c.install(conn, s, sess.ID != 0)
	if sess.ID != 0 {
		return c.restoreWatches(ctx)
	}
	return nil
}

// dialTimeout bounds one handshake: the session timeout shared among the
// servers, as the Java client's connect timeout is, so that a client whose
// server hangs can reach another before its session expires.
func (c *Client) dialTimeout() time.Duration {
	return max(c.Timeout/time.Duration(len(c.order)), 500*time.Millisecond)
}

// install makes conn the live connection.
func (c *Client) install(conn *Conn, s *Server, resumed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn, c.server = conn, s
	c.connNo++
	if !resumed {
		c.sess = conn.Session()
		c.srec = &SessionRec{Client: c.Name, ID: c.sess.ID, Timeout: c.sess.Timeout, LastHeard: c.h.Now()}
		c.h.addSession(c.srec)
		clear(c.watches)
	}
	if c.paused.Load() {
		conn.Pause()
	}
	go c.drain(conn, c.connNo, c.sess.ID)
}

// retireLocked drops the live connection, keeping the session.
func (c *Client) retireLocked() {
	c.conn.Drop()
	c.noteHeardLocked()
	if z := c.conn.LastZxid(); z > c.lastZxid {
		c.lastZxid = z
	}
	c.conn = nil
}

func (c *Client) noteHeardLocked() {
	if c.conn != nil && c.srec != nil {
		if t := c.h.At(c.conn.LastRecv()); t > c.srec.LastHeard {
			c.srec.LastHeard = t
		}
	}
}

// drain records conn's notifications until it ends.
func (c *Client) drain(conn *Conn, connNo int, session int64) {
	record := func(ev Event) {
		c.h.addEvent(EventRec{Client: c.Name, Session: session, Conn: connNo, Type: ev.Type, Path: ev.Path,
			Zxid: ev.Zxid, Seq: ev.Seq, At: c.h.At(ev.At)})
		c.mu.Lock()
		for _, fam := range eventFamilies(ev.Type) {
			delete(c.watches, fam+ev.Path)
		}
		c.mu.Unlock()
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	for {
		select {
		case ev := <-conn.Events():
			record(ev)
		case <-conn.Done():
			for {
				select {
				case ev := <-conn.Events():
					record(ev)
				default:
					return
				}
			}
		}
	}
}

// eventFamilies are the watch kinds an event type fires.
func eventFamilies(t zkproto.EventType) []string {
	switch t {
	case zkproto.EventNodeCreated:
		return []string{"exist:", "data:"}
	case zkproto.EventNodeDataChanged:
		return []string{"data:"}
	case zkproto.EventNodeDeleted:
		return []string{"data:", "child:"}
	case zkproto.EventNodeChildrenChanged:
		return []string{"child:"}
	}
	return nil
}

// restoreWatches sends setWatches for the watches not yet fired.
func (c *Client) restoreWatches(ctx context.Context) error {
	c.mu.Lock()
	var list []string
	for w := range c.watches {
		list = append(list, w)
	}
	rel := c.lastZxid
	c.mu.Unlock()
	if len(list) == 0 {
		return nil
	}
	sort.Strings(list)
	req := &zkproto.SetWatches{RelativeZxid: rel}
	for _, w := range list {
		switch {
		case len(w) > 5 && w[:5] == "data:":
			req.DataWatches = append(req.DataWatches, w[5:])
		case len(w) > 6 && w[:6] == "exist:":
			req.ExistWatches = append(req.ExistWatches, w[6:])
		case len(w) > 6 && w[:6] == "child:":
			req.ChildWatches = append(req.ChildWatches, w[6:])
		}
	}
	op := &Op{Kind: zkproto.OpSetWatches, Watches: list, RelZxid: rel}
	_, err := c.Do(ctx, op, req)
	return err
}

// Do sends req, recording op (whose Kind, Path, Data, Version, Flags and
// Watch the caller sets) in the history with its outcome. A reply with an
// error code is a reply; the error is for a reply that never came, and
// then the connection is gone.
func (c *Client) Do(ctx context.Context, op *Op, req jute.Record) (Reply, error) {
	c.mu.Lock()
	conn, s, connNo := c.conn, c.server, c.connNo
	if conn == nil {
		c.mu.Unlock()
		return Reply{}, fmt.Errorf("%w: %s is not connected", ErrConnLost, c.Name)
	}
	op.Client, op.Session, op.Conn, op.Server = c.Name, c.sess.ID, connNo, s.ID
	c.mu.Unlock()
	op.Return = -1
	op.Call = c.h.Now()
	c.h.add(op)
	rctx, cancel := context.WithTimeout(ctx, c.ReqTimeout)
	r, err := conn.Do(rctx, op.Kind, req)
	cancel()
	op.Xid = r.Xid
	if err != nil {
		op.Unknown = true
		c.mu.Lock()
		if c.conn == conn {
			c.retireLocked()
		}
		c.mu.Unlock()
		return r, err
	}
	op.Return = c.h.At(r.At)
	op.Err, op.Zxid, op.Seq = r.Header.Err, r.Header.Zxid, r.Seq
	fillResult(op, r.Record)
	c.noteReply(conn, op)
	return r, nil
}

// noteReply updates the session's bookkeeping after a reply.
func (c *Client) noteReply(conn *Conn, op *Op) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if op.Zxid > c.lastZxid {
		c.lastZxid = op.Zxid
	}
	if c.srec != nil && op.Return > c.srec.LastHeard {
		c.srec.LastHeard = op.Return
	}
	if !op.Watch {
		return
	}
	switch {
	case op.Err == zkproto.CodeOK && op.Kind == zkproto.OpGetChildren2:
		c.watches["child:"+op.Path] = true
	case op.Err == zkproto.CodeOK:
		c.watches["data:"+op.Path] = true
	case op.Err == zkproto.CodeNoNode && op.Kind == zkproto.OpExists:
		c.watches["exist:"+op.Path] = true
	}
}

// fillResult copies what the checkers need from a reply's record.
func fillResult(op *Op, rec jute.Record) {
	switch r := rec.(type) {
	case *zkproto.GetDataResponse:
		op.Value, op.Stat = string(r.Data), r.Stat
	case *zkproto.ExistsResponse:
		op.Stat = r.Stat
	case *zkproto.SetDataResponse:
		op.Stat = r.Stat
	case *zkproto.Create2Response:
		op.CreatedPath, op.Stat = r.Path, r.Stat
	case *zkproto.CreateResponse:
		op.CreatedPath = r.Path
	case *zkproto.GetChildren2Response:
		op.Children, op.Stat = r.Children, r.Stat
	}
}

// Close ends the session with closeSession (recorded) and the connection.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil || c.SessionID() == 0 {
		c.endSession(false)
		return nil
	}
	op := &Op{Kind: zkproto.OpCloseSession}
	_, err := c.Do(ctx, op, nil)
	c.mu.Lock()
	if err == nil && op.Err == zkproto.CodeOK && c.srec != nil {
		c.srec.ClosedByClient = true
	}
	c.mu.Unlock()
	c.endSession(false)
	return err
}

// Abandon drops the connection and forgets the session without closing
// it, as a crashed client would: the session expires on the servers.
func (c *Client) Abandon() { c.endSession(false) }

// Drop drops the connection and keeps the session, for a later Connect.
func (c *Client) Drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.retireLocked()
	}
}

// endSession forgets the session and its watches.
func (c *Client) endSession(expired bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.retireLocked()
	}
	if c.srec != nil && expired {
		c.srec.ExpiredSeen = true
	}
	c.sess, c.srec, c.lastZxid = Session{}, nil, 0
	clear(c.watches)
}

// Finish records the last time anything was heard; call it once the
// client is done.
func (c *Client) Finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noteHeardLocked()
}
