package zkclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/server"
	"keeper/coordination/zkproto"
)

func TestDialNegotiatesSession(t *testing.T) {
	addr := startServer(t)
	c := dial(t, addr, Options{SessionTimeout: time.Second}) // below the 4 s minimum
	if c.SessionID() == 0 || c.SessionTimeout() != 4*time.Second || c.ReadOnly() || c.Addr() != addr {
		t.Fatalf("session %#x timeout %v readOnly %v addr %s", c.SessionID(), c.SessionTimeout(), c.ReadOnly(), c.Addr())
	}
	if _, _, err := c.Create(testCtx(t), "/z", nil, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if c.LastZxid() < 2 {
		t.Fatalf("LastZxid %d after a create", c.LastZxid())
	}
	d := dial(t, addr, Options{})
	if d.SessionID() == c.SessionID() {
		t.Fatal("two connections share a session id")
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{SessionTimeout: -1}, {SessionTimeout: time.Duration(math.MaxInt32+1) * time.Millisecond},
		{MaxBuffer: -1}, {EventBuffer: -1},
	} {
		if o.Validate() == nil {
			t.Errorf("%+v is valid", o)
		}
		if _, err := Dial(context.Background(), "127.0.0.1:1", o); err == nil {
			t.Errorf("Dial accepted %+v", o)
		}
	}
}

// TestPipelineFIFO sends 1,000 requests without waiting and checks that
// the callbacks run in request order with the right replies.
func TestPipelineFIFO(t *testing.T) {
	c := dial(t, startServer(t), Options{})
	const n = 1000
	var mu sync.Mutex
	var order []int
	var xids []int32
	done := make(chan struct{})
	for i := range n {
		var op zkproto.Op
		var req jute.Record
		if i%2 == 0 {
			op, req = zkproto.OpCreate, &zkproto.CreateRequest{Path: fmt.Sprintf("/n%d", i), ACL: zkproto.OpenACLUnsafe}
		} else { // reads of the node the previous request creates
			op, req = zkproto.OpExists, &zkproto.ExistsRequest{Path: fmt.Sprintf("/n%d", i-1)}
		}
		c.Go(op, req, func(r Result) {
			if r.Err != nil {
				t.Errorf("request %d: %v", i, r.Err)
			} else if cr, ok := r.Record.(*zkproto.CreateResponse); ok && cr.Path != fmt.Sprintf("/n%d", i) {
				t.Errorf("request %d answered with %s", i, cr.Path)
			}
			mu.Lock()
			order = append(order, i)
			xids = append(xids, r.Header.Xid)
			mu.Unlock()
			if i == n-1 {
				close(done)
			}
		})
	}
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("pipelined requests did not complete")
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		if order[i] != i || xids[i] != int32(i+1) {
			t.Fatalf("completion %d was request %d with xid %d", i, order[i], xids[i])
		}
	}
}

// TestXidWraps checks that xids wrap from 2^31-1 to 1, as Java's do.
func TestXidWraps(t *testing.T) {
	c := dial(t, startServer(t), Options{})
	c.mu.Lock()
	c.xid = math.MaxInt32 - 2
	c.mu.Unlock()
	var got []int32
	for range 4 {
		h, _, err := c.Do(testCtx(t), zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Xid)
	}
	want := []int32{math.MaxInt32 - 1, math.MaxInt32, 1, 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("xids %v, want %v", got, want)
	}
}

func TestWatchEvents(t *testing.T) {
	addr := startServer(t)
	c := dial(t, addr, Options{})
	other := dial(t, addr, Options{})
	ctx := testCtx(t)
	if _, _, err := c.Create(ctx, "/w", []byte("a"), CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(ctx, "/w", true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Children(ctx, "/w", true); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Exists(ctx, "/w/new", true); ok || err != nil {
		t.Fatalf("Exists = %v %v", ok, err)
	}
	if _, err := other.Set(ctx, "/w", []byte("b"), -1); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, c); ev != (zkproto.WatcherEvent{Type: zkproto.EventNodeDataChanged, State: zkproto.StateSyncConnected, Path: "/w"}) {
		t.Fatalf("event %+v", ev)
	}
	// A write on this connection: its events are queued before its reply.
	if _, _, err := c.Create(ctx, "/w/new", nil, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []zkproto.WatcherEvent{
		{Type: zkproto.EventNodeCreated, State: zkproto.StateSyncConnected, Path: "/w/new"},
		{Type: zkproto.EventNodeChildrenChanged, State: zkproto.StateSyncConnected, Path: "/w"},
	} {
		select {
		case ev := <-c.Events():
			if ev != want {
				t.Fatalf("event %+v, want %+v", ev, want)
			}
		default:
			t.Fatalf("event %+v not queued before the reply", want)
		}
	}
	// Persistent recursive watches fire for every change below.
	if err := c.AddWatch(ctx, "/w", zkproto.AddWatchPersistentRecursive); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := other.Set(ctx, "/w/new", nil, -1); err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, c); ev.Type != zkproto.EventNodeDataChanged || ev.Path != "/w/new" {
			t.Fatalf("recursive watch event %+v", ev)
		}
	}
}

// TestEventOverflowFailsConnection fills a one-event channel.
func TestEventOverflowFailsConnection(t *testing.T) {
	c := dial(t, startServer(t), Options{EventBuffer: 1})
	ctx := testCtx(t)
	if err := c.AddWatch(ctx, "/", zkproto.AddWatchPersistentRecursive); err != nil {
		t.Fatal(err)
	}
	c.Create(ctx, "/a", nil, CreateOptions{}) // one event: fits
	_, _, err := c.Create(ctx, "/b", nil, CreateOptions{})
	if !errors.Is(err, ErrEventOverflow) || !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("create after overflow: %v", err)
	}
	<-c.Done()
	if !errors.Is(c.Err(), ErrEventOverflow) {
		t.Fatalf("Err() = %v", c.Err())
	}
	if ev, ok := <-c.Events(); !ok || ev.Path != "/a" {
		t.Fatalf("queued event %+v %v", ev, ok)
	}
	if _, ok := <-c.Events(); ok {
		t.Fatal("events not closed")
	}
}

// TestPingKeepsSessionAlive idles a real server's session across 4.5
// ping intervals (1.5 session timeouts) and checks that the session and
// its ephemeral survive; the same connection without pings must expire,
// or the test proves nothing. The timeout is short but not tight, so the
// test passes on a loaded two-core machine under -race;
// TestKeepAliveTiming checks the exact timing in virtual time.
func TestPingKeepsSessionAlive(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	addr := startServer(t, func(cfg *server.Config) {
		cfg.Core.TickMs = 100
		cfg.Core.MinSessionTimeoutMs = int32(timeout.Milliseconds())
		cfg.Core.MaxSessionTimeoutMs = 10 * int32(timeout.Milliseconds())
	})
	observer := dial(t, addr, Options{SessionTimeout: 10 * time.Second})
	for _, ping := range []bool{true, false} {
		t.Run(fmt.Sprintf("ping=%v", ping), func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			c := dial(t, addr, Options{SessionTimeout: timeout, noPing: !ping})
			path := fmt.Sprintf("/eph-%v", ping)
			if _, _, err := c.Create(ctx, path, nil, CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
				t.Fatal(err)
			}
			if !ping {
				waitFor(t, "the unpinged session to expire", func() bool {
					_, ok, err := observer.Exists(ctx, path, false)
					return err == nil && !ok
				})
				<-c.Done()
				return
			}
			start := time.Now()
			waitFor(t, "4 ping replies over 1.5 session timeouts", func() bool {
				if err := c.Err(); err != nil {
					t.Fatalf("connection ended after %d pings: %v", c.pongs.Load(), err)
				}
				return c.pongs.Load() >= 4 && time.Since(start) > 3*timeout/2
			})
			st, ok, err := observer.Exists(ctx, path, false)
			if err != nil || !ok || st.EphemeralOwner != c.SessionID() {
				t.Fatalf("ephemeral after idling: %+v %v %v", st, ok, err)
			}
			if _, _, err := c.Get(ctx, path, false); err != nil {
				t.Fatalf("session unusable after idling: %v", err)
			}
		})
	}
}

func TestClose(t *testing.T) {
	addr := startServer(t)
	c := dial(t, addr, Options{})
	observer := dial(t, addr, Options{})
	ctx := testCtx(t)
	if _, _, err := c.Create(ctx, "/e", nil, CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The server deletes ephemerals before it answers closeSession.
	if _, ok, err := observer.Exists(ctx, "/e", false); ok || err != nil {
		t.Fatalf("ephemeral after Close: %v %v", ok, err)
	}
	if _, _, err := c.Get(ctx, "/", false); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if !errors.Is(c.Err(), ErrClosed) {
		t.Fatalf("Err() = %v", c.Err())
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed")
	}
	if _, ok := <-c.Events(); ok {
		t.Fatal("Events not closed")
	}
}

// TestConnectionLossFailsPending has a server read requests and then hang
// up without answering: every call fails, in order, with a clear error.
func TestConnectionLossFailsPending(t *testing.T) {
	addr := startFake(t, func(nc net.Conn, _ zkproto.ConnectRequest) {
		acceptSession(nc, 30000)
		reqs := readRequests(nc)
		for range 3 {
			<-reqs
		}
	})
	c := dial(t, addr, Options{})
	var mu sync.Mutex
	var order []int
	var errs []error
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		c.Go(zkproto.OpSync, &zkproto.SyncRequest{Path: "/"}, func(r Result) {
			mu.Lock()
			order, errs = append(order, i), append(errs, r.Err)
			mu.Unlock()
			wg.Done()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if order[i] != i || !errors.Is(err, ErrConnectionLoss) || !errors.Is(err, io.EOF) ||
			zkproto.CodeOf(err) != zkproto.CodeConnectionLoss {
			t.Fatalf("completion %d: request %d, %v", i, order[i], err)
		}
	}
	if _, _, err := c.Get(testCtx(t), "/", false); !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("call on a dead connection: %v", err)
	}
	if err := c.Close(); !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("Close of a dead connection: %v", err)
	}
}

// TestXidOutOfOrder answers with the wrong xid: the connection must end.
func TestXidOutOfOrder(t *testing.T) {
	addr := startFake(t, func(nc net.Conn, _ zkproto.ConnectRequest) {
		acceptSession(nc, 30000)
		h := <-readRequests(nc)
		nc.Write(zkproto.AppendReplyFrame(nil, zkproto.ReplyHeader{Xid: h.Xid + 1}, &zkproto.SyncResponse{Path: "/"}))
		io.Copy(io.Discard, nc)
	})
	c := dial(t, addr, Options{})
	if _, err := c.Sync(testCtx(t), "/"); !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("Sync with a bad reply xid: %v", err)
	}
}

func TestDialFailures(t *testing.T) {
	expired := startFake(t, func(nc net.Conn, req zkproto.ConnectRequest) {
		if !req.HasReadOnly || !req.ReadOnly || len(req.Passwd) != zkproto.PasswdLen || req.TimeoutMs != 5000 {
			return // Dial fails on EOF and the test reports the request
		}
		acceptSession(nc, 0)
	})
	_, err := Dial(testCtx(t), expired, Options{SessionTimeout: 5 * time.Second, ReadOnly: true})
	if !errors.Is(err, zkproto.ErrSessionExpired) {
		t.Fatalf("Dial to an expiring server: %v", err)
	}

	silent := startFake(t, func(nc net.Conn, _ zkproto.ConnectRequest) { io.Copy(io.Discard, nc) })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Dial(ctx, silent, Options{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial to a silent server: %v", err)
	}
}

func TestDoContext(t *testing.T) {
	hangUp := make(chan struct{})
	addr := startFake(t, func(nc net.Conn, _ zkproto.ConnectRequest) {
		acceptSession(nc, 30000)
		go io.Copy(io.Discard, nc)
		<-hangUp
	})
	defer close(hangUp) // before Close, which would wait for a reply
	c := dial(t, addr, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.Do(ctx, zkproto.OpSync, &zkproto.SyncRequest{Path: "/"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with a cancelled context: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := c.Do(ctx, zkproto.OpSync, &zkproto.SyncRequest{Path: "/"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do without a reply: %v", err)
	}
}
