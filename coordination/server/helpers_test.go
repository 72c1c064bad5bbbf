package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
	"keeper/internal/testhost"
	"keeper/verify/compat/zkreal"
)

// waitTimeout bounds every wait in these tests. It is generous because the
// race detector on two cores slows everything down; a passing test never
// waits this long.
var waitTimeout = testhost.Scale(10 * time.Second)

// eventually polls cond until it holds, failing the test after timeout.
func eventually(t *testing.T, timeout time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for "+what, append([]any{timeout}, args...)...)
		}
		<-tick.C
	}
}

// fastSessions makes session expiry observable in a test: ticks of 100 ms,
// so the server accepts timeouts from 200 ms (2 ticks) up to 10 s.
func fastSessions(c *Config) {
	c.Core.TickMs = 100
	c.Core.MinSessionTimeoutMs = 200
	c.Core.MaxSessionTimeoutMs = 10000
}

// quietLogger discards go-zookeeper's logs, which would otherwise flood the
// test output on every reconnect.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// dialZK opens a go-zookeeper session on addrs and waits until it is
// established. Passing the same address twice makes go-zk reconnect at
// once after a drop instead of sleeping a second first (its host provider
// backs off only after a full pass over the list).
func dialZK(t *testing.T, timeout time.Duration, addrs ...string) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect(addrs, timeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	eventually(t, waitTimeout, func() bool { return c.State() == zk.StateHasSession }, "a session")
	return c, ev
}

// zkOpen connects a go-zookeeper client straight to s with a 10 s session.
func zkOpen(t *testing.T, s *Server) *zk.Conn {
	t.Helper()
	c, _ := dialZK(t, 10*time.Second, s.Addr().String())
	return c
}

// waitEvent returns the next event on ch.
func waitEvent(t *testing.T, ch <-chan zk.Event) zk.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed without an event")
		}
		return ev
	case <-time.After(waitTimeout):
		t.Fatal("no watch event")
	}
	return zk.Event{}
}

// waitState waits for a session event with the given state on a
// go-zookeeper event channel, skipping others.
func waitState(t *testing.T, states *sessionStates, want zk.State) {
	t.Helper()
	eventually(t, waitTimeout, func() bool { return states.seen(want) }, "session event %v", want)
}

// sessionStates records every session state a go-zookeeper client
// reports, through its event callback: go-zookeeper drops events when
// nobody drains its channel, which a client retrying through a cut
// connection fills within seconds.
type sessionStates struct {
	mu     sync.Mutex
	states []zk.State
}

func (s *sessionStates) record(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states = append(s.states, ev.State)
}

func (s *sessionStates) seen(want zk.State) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.states, want)
}

// goZKErrors maps go-zookeeper's error values back to wire codes.
var goZKErrors = map[error]zkproto.Code{
	zk.ErrAPIError:                zkproto.CodeAPIError,
	zk.ErrNoNode:                  zkproto.CodeNoNode,
	zk.ErrNoAuth:                  zkproto.CodeNoAuth,
	zk.ErrBadVersion:              zkproto.CodeBadVersion,
	zk.ErrNoChildrenForEphemerals: zkproto.CodeNoChildrenForEphemerals,
	zk.ErrNodeExists:              zkproto.CodeNodeExists,
	zk.ErrNotEmpty:                zkproto.CodeNotEmpty,
	zk.ErrSessionExpired:          zkproto.CodeSessionExpired,
	zk.ErrInvalidACL:              zkproto.CodeInvalidACL,
	zk.ErrAuthFailed:              zkproto.CodeAuthFailed,
	zk.ErrSessionMoved:            zkproto.CodeSessionMoved,
	zk.ErrReconfigDisabled:        zkproto.CodeReconfigDisabled,
	zk.ErrBadArguments:            zkproto.CodeBadArguments,
}

// codeOf returns the wire code behind a go-zookeeper error. Codes go-zk has
// no value for come back as "unknown error: <code>".
func codeOf(t *testing.T, err error) zkproto.Code {
	t.Helper()
	if err == nil {
		return zkproto.CodeOK
	}
	if c, ok := goZKErrors[err]; ok {
		return c
	}
	if n, ok := strings.CutPrefix(err.Error(), "unknown error: "); ok {
		if v, perr := strconv.Atoi(n); perr == nil {
			return zkproto.Code(v)
		}
	}
	t.Fatalf("not a server error: %v", err)
	return 0
}

// openACL is world:anyone:cdrwa.
var openACL = zk.WorldACL(zk.PermAll)

// mustCreate creates path with go-zk or fails the test.
func mustCreate(t *testing.T, c *zk.Conn, path string, data []byte, flags int32, acl []zk.ACL) string {
	t.Helper()
	p, err := c.Create(path, data, flags, acl)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return p
}

// mustStat returns the Stat of path or fails the test.
func mustStat(t *testing.T, c *zk.Conn, path string) *zk.Stat {
	t.Helper()
	ok, st, err := c.Exists(path)
	if err != nil || !ok {
		t.Fatalf("exists %s: %v %v", path, ok, err)
	}
	return st
}

// ---------------------------------------------------------------------------
// A raw protocol client, for what go-zookeeper cannot send (addWatch,
// whoAmI, bad input) and for checking exact frames and their order.

// rawClient speaks the wire protocol directly over one TCP connection. It
// is not safe for concurrent use.
type rawClient struct {
	t         *testing.T
	nc        net.Conn
	r         *bufio.Reader
	xid       int32
	SessionID int64
	Passwd    []byte
	TimeoutMs int32
}

// rawDial opens a TCP connection without a handshake.
func rawDial(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// rawSession dials addr and opens a new session with a 30 s timeout.
func rawSession(t *testing.T, addr string) *rawClient {
	t.Helper()
	c := rawDial(t, addr)
	resp, err := c.connect(newSessionRequest(30000))
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if resp.TimeoutMs == 0 || resp.SessionID == 0 {
		t.Fatalf("handshake refused: %+v", resp)
	}
	return c
}

// newSessionRequest is the ConnectRequest of a new session, as every
// current client sends it (with the readOnly byte).
func newSessionRequest(timeoutMs int32) *zkproto.ConnectRequest {
	return &zkproto.ConnectRequest{TimeoutMs: timeoutMs, Passwd: make([]byte, 16), HasReadOnly: true}
}

// connect sends req and reads the ConnectResponse. On success it records
// the session.
func (c *rawClient) connect(req *zkproto.ConnectRequest) (zkproto.ConnectResponse, error) {
	c.writeFrame(jute.Marshal(req))
	payload, err := c.readFrame()
	if err != nil {
		return zkproto.ConnectResponse{}, err
	}
	resp, err := zkproto.DecodeConnectResponse(payload, 0)
	if err != nil {
		return resp, err
	}
	if resp.SessionID != 0 {
		c.SessionID, c.Passwd, c.TimeoutMs = resp.SessionID, resp.Passwd, resp.TimeoutMs
	}
	return resp, nil
}

// writeFrame sends payload with its length prefix.
func (c *rawClient) writeFrame(payload []byte) {
	c.writeRaw(zkproto.AppendFrame(nil, payload))
}

// writeRaw sends bytes as they are.
func (c *rawClient) writeRaw(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(waitTimeout))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one frame's payload.
func (c *rawClient) readFrame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(waitTimeout))
	return zkproto.ReadFrame(c.r, nil, 16<<20)
}

// send queues a request with the next xid and returns that xid.
func (c *rawClient) send(op zkproto.Op, rec jute.Record) int32 {
	c.xid++
	c.sendXid(c.xid, op, rec)
	return c.xid
}

// sendXid queues a request with an explicit xid.
func (c *rawClient) sendXid(xid int32, op zkproto.Op, rec jute.Record) {
	c.writeRaw(zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: xid, Op: op}, rec))
}

// frame is one decoded frame from the server: a reply or a notification.
type frame struct {
	Header zkproto.ReplyHeader
	Body   jute.Record // nil for error replies and body-less ops
	Event  *zkproto.WatcherEvent
	Len    int // payload length, without the prefix
}

// next reads one frame, decoding a reply as the answer to op.
func (c *rawClient) next(op zkproto.Op) frame {
	c.t.Helper()
	payload, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("read (expecting a reply to %v): %v", op, err)
	}
	h, rec, err := zkproto.DecodeReply(payload, op, 0)
	if err != nil {
		c.t.Fatalf("decode reply to %v: %v (payload % x)", op, err, payload)
	}
	f := frame{Header: h, Body: rec, Len: len(payload)}
	if h.Xid == zkproto.XidNotification {
		f.Event = rec.(*zkproto.WatcherEvent)
		f.Body = nil
	}
	return f
}

// call sends one request and reads until its reply. It returns the reply
// and the notifications that arrived before it, in order. Any other reply
// fails the test.
func (c *rawClient) call(op zkproto.Op, rec jute.Record) (frame, []zkproto.WatcherEvent) {
	c.t.Helper()
	xid := c.send(op, rec)
	return c.await(xid, op)
}

// await reads until the reply with xid arrives.
func (c *rawClient) await(xid int32, op zkproto.Op) (frame, []zkproto.WatcherEvent) {
	c.t.Helper()
	var events []zkproto.WatcherEvent
	for {
		f := c.next(op)
		if f.Event != nil {
			events = append(events, *f.Event)
			continue
		}
		if f.Header.Xid != xid {
			c.t.Fatalf("reply xid %d, want %d (out of order)", f.Header.Xid, xid)
		}
		return f, events
	}
}

// mustOK calls op and fails the test unless it succeeds; it returns the
// reply body. Notifications that arrive first are dropped.
func (c *rawClient) mustOK(op zkproto.Op, rec jute.Record) jute.Record {
	c.t.Helper()
	f, _ := c.call(op, rec)
	if f.Header.Err != zkproto.CodeOK {
		c.t.Fatalf("%v: %v", op, f.Header.Err)
	}
	return f.Body
}

// code calls op and returns its result code.
func (c *rawClient) code(op zkproto.Op, rec jute.Record) zkproto.Code {
	c.t.Helper()
	f, _ := c.call(op, rec)
	return f.Header.Err
}

// events does a round trip and returns the notifications that arrived
// before its reply: everything triggered by writes that completed before
// this call.
func (c *rawClient) events() []zkproto.WatcherEvent {
	c.t.Helper()
	_, evs := c.call(zkproto.OpSync, &zkproto.SyncRequest{Path: "/"})
	return evs
}

// expectClosed reads until the server closes the connection and fails if
// anything but the end of the stream arrives.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitTimeout))
	b, err := c.r.ReadByte()
	if err == nil {
		rest, _ := c.r.Peek(c.r.Buffered())
		c.t.Fatalf("expected the server to close; got data % x", append([]byte{b}, rest...))
	}
	if !isClosedErr(err) {
		c.t.Fatalf("expected the server to close; got %v", err)
	}
}

// isClosedErr reports whether err means the peer closed the connection.
func isClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}

// create sends a create(1) and returns its code and path.
func (c *rawClient) create(path string, data []byte, acl []zkproto.ACL, flags int32) (zkproto.Code, string) {
	c.t.Helper()
	f, _ := c.call(zkproto.OpCreate, &zkproto.CreateRequest{Path: path, Data: data, ACL: acl, Flags: flags})
	if f.Header.Err != zkproto.CodeOK {
		return f.Header.Err, ""
	}
	return f.Header.Err, f.Body.(*zkproto.CreateResponse).Path
}

// mustCreate creates a persistent open node.
func (c *rawClient) mustCreate(path string, flags int32) string {
	c.t.Helper()
	code, p := c.create(path, nil, zkproto.OpenACLUnsafe, flags)
	if code != zkproto.CodeOK {
		c.t.Fatalf("create %s: %v", path, code)
	}
	return p
}

// ---------------------------------------------------------------------------
// Checking the expectations themselves against Apache ZooKeeper.

// referenceEnv names the environment variable that, set to 1, also runs
// every test written with forEachServer against Apache ZooKeeper 3.8
// (verify/compat/zkreal). That checks the tests' expectations against the real
// thing; it is off by default because each such test then starts a JVM.
const referenceEnv = "KEEPER_TEST_REFERENCE"

// target is a server under test.
type target struct {
	Addr string
	// Real is set for Apache ZooKeeper; assertions about what keeper
	// deliberately does differently (documented in docs/zookeeper-protocol.md, 3.8.4+
	// behaviour) are guarded by it.
	Real bool
	// Keeper is the keeper server, nil for Apache ZooKeeper.
	Keeper *Server
}

// forEachServer runs body as a subtest against a fresh keeper server with
// the default test configuration and, when KEEPER_TEST_REFERENCE=1,
// against a fresh Apache ZooKeeper with extended types enabled.
func forEachServer(t *testing.T, body func(t *testing.T, srv target)) {
	t.Helper()
	t.Run("keeper", func(t *testing.T) {
		s := startServer(t)
		body(t, target{Addr: s.Addr().String(), Keeper: s})
	})
	if os.Getenv(referenceEnv) != "1" {
		return
	}
	t.Run("zookeeper", func(t *testing.T) {
		zk := zkreal.Start(t, zkreal.Options{ExtendedTypes: true})
		body(t, target{Addr: zk.Addr(), Real: true})
	})
}

// keeperOnly skips the rest of the (sub)test against Apache ZooKeeper:
// what follows checks a documented keeper difference or a later release's
// behaviour that 3.8.0 does not have.
func (srv target) keeperOnly(t *testing.T, why string) {
	t.Helper()
	if srv.Real {
		t.Skipf("Apache ZooKeeper 3.8.0 differs here: %s", why)
	}
}

// zkDial connects a go-zookeeper client to addr with a 10 s session.
func zkDial(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _ := dialZK(t, 10*time.Second, addr)
	return c
}
