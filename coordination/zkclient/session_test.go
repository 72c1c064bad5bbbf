package zkclient

import (
	"context"
	"errors"
	"testing"
	"time"

	"keeper/coordination/quorumnet"
	"keeper/coordination/server"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/internal/testhost"
)

// sessionWait bounds the waits of the Session tests, which include an
// election on a loaded machine.
var sessionWait = testhost.Scale(30 * time.Second)

// startEnsemble runs n keeper servers of one ensemble in this process and
// returns them and their client addresses.
func startEnsemble(t *testing.T, n int) ([]*server.Server, []string) {
	t.Helper()
	ports := testhost.Addrs(t, 2*n)
	peers := map[zab.PeerID]quorumnet.PeerAddrs{}
	var voters []zab.PeerID
	for i := range n {
		id := zab.PeerID(i + 1)
		voters = append(voters, id)
		peers[id] = quorumnet.PeerAddrs{Quorum: ports[2*i], Election: ports[2*i+1]}
	}
	var out []*server.Server
	var addrs []string
	for i := range n {
		id := zab.PeerID(i + 1)
		core := zkcore.DefaultConfig()
		core.ServerID = int64(id)
		core.TickMs = 100
		core.MinSessionTimeoutMs = 2000
		core.MaxSessionTimeoutMs = 60000
		s, err := server.New(server.Config{
			ClientAddr: "127.0.0.1:0", Core: core,
			Storage: server.StorageConfig{DataDir: t.TempDir()},
			Quorum: &server.QuorumConfig{MyID: id, Voters: voters, Peers: peers,
				ListenQuorum: peers[id].Quorum, ListenElection: peers[id].Election,
				InitLimitTicks: 20, SyncLimitTicks: 10},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
		addrs = append(addrs, s.Addr().String())
	}
	return out, addrs
}

// openSession opens a Session within sessionWait and closes it when the
// test ends.
func openSession(t *testing.T, servers []string, opts SessionOptions) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sessionWait)
	defer cancel()
	s, err := OpenSession(ctx, servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitState reads States until one with state arrives and returns it.
func waitState(t *testing.T, s *Session, state int32) SessionEvent {
	t.Helper()
	deadline := time.NewTimer(sessionWait)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-s.States():
			if !ok {
				t.Fatalf("states closed waiting for state %d", state)
			}
			if ev.State == state {
				return ev
			}
		case <-deadline.C:
			t.Fatalf("no state %d within %v", state, sessionWait)
		}
	}
}

// retryLoss runs op until it does not fail with a lost connection,
// failing the test on another error or after sessionWait.
func retryLoss(t *testing.T, op func() error) {
	t.Helper()
	deadline := time.Now().Add(sessionWait)
	for {
		err := op()
		switch {
		case err == nil:
			return
		case !errors.Is(err, ErrConnectionLoss) || time.Now().After(deadline):
			t.Fatal(err)
		}
	}
}

// watchEvent returns the event of a one-shot watch.
func watchEvent(t *testing.T, ch <-chan zkproto.WatcherEvent) zkproto.WatcherEvent {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(sessionWait):
		t.Fatal("the watch did not fire")
	}
	return zkproto.WatcherEvent{}
}

// TestSessionReattachesToAnotherServer kills the server a session is on:
// the Session reattaches the same session to another member, its
// ephemeral node stays, and a watch armed before the move fires for a
// change made after it.
func TestSessionReattachesToAnotherServer(t *testing.T) {
	servers, addrs := startEnsemble(t, 3)
	s := openSession(t, addrs, SessionOptions{Options: Options{SessionTimeout: testhost.Scale(10 * time.Second)}})
	ctx, cancel := context.WithTimeout(context.Background(), sessionWait)
	defer cancel()
	if _, _, err := s.Create(ctx, "/e", nil, CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, "/w", []byte("a"), CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, changed, err := s.GetW(ctx, "/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, created, err := s.ExistsW(ctx, "/later")
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, was := s.SessionID(), c.Addr()
	for i, a := range addrs {
		if a == was {
			servers[i].Close()
		}
	}
	waitState(t, s, StateDisconnected)
	if got := s.SessionID(); got != id {
		t.Fatalf("SessionID while reattaching: %#x, want %#x", got, id)
	}
	if ev := waitState(t, s, StateConnected); ev.SessionID != id {
		t.Fatalf("reconnected as session %#x, want %#x", ev.SessionID, id)
	}
	if c, err = s.Conn(ctx); err != nil || c.Addr() == was {
		t.Fatalf("after the move: conn on %v (%v), want another server than %s", c.Addr(), err, was)
	}
	// The ensemble may still be electing a leader: its members drop
	// their clients until it has one, and the Session moves again.
	var st zkproto.Stat
	var ok bool
	retryLoss(t, func() (err error) { st, ok, err = s.Exists(ctx, "/e"); return err })
	if !ok || st.EphemeralOwner != id {
		t.Fatalf("the ephemeral node after the move: %v owner %#x, want owner %#x", ok, st.EphemeralOwner, id)
	}
	retryLoss(t, func() error { _, err := s.Set(ctx, "/w", []byte("b"), -1); return err })
	if ev := watchEvent(t, changed); ev.Type != zkproto.EventNodeDataChanged || ev.Path != "/w" {
		t.Fatalf("data watch fired %+v", ev)
	}
	retryLoss(t, func() error {
		_, _, err := s.Create(ctx, "/later", nil, CreateOptions{})
		if errors.Is(err, zkproto.ErrNodeExists) {
			return nil // an earlier attempt made it
		}
		return err
	})
	if ev := watchEvent(t, created); ev.Type != zkproto.EventNodeCreated || ev.Path != "/later" {
		t.Fatalf("exist watch fired %+v", ev)
	}
}

// TestSessionExpiry expires a session under a Session (another connection
// takes it over and closes it): the Session opens a new session, says so
// on States, and ends the old session's watches with StateExpired; the
// old session's ephemeral node is gone and calls go on on the new one.
func TestSessionExpiry(t *testing.T) {
	addr := startServer(t)
	s := openSession(t, []string{addr}, SessionOptions{})
	ctx := testCtx(t)
	if _, _, err := s.Create(ctx, "/e", nil, CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	_, _, watch, err := s.ChildrenW(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old, passwd := c.SessionID(), c.SessionPasswd()
	// The Session may take the session back between the thief's handshake
	// and its closeSession; the thief tries until the Session sees expiry.
	var expired SessionEvent
	deadline := time.Now().Add(sessionWait)
	for expired.State != StateExpired && time.Now().Before(deadline) {
		if thief, err := Dial(ctx, addr, Options{SessionID: old, SessionPasswd: passwd}); err == nil {
			thief.Close()
		}
		select {
		case ev := <-s.States():
			if ev.State == StateExpired {
				expired = ev
			}
		case <-time.After(100 * time.Millisecond):
		}
	}
	if expired.SessionID != old {
		t.Fatalf("expired %+v, want session %#x expired", expired, old)
	}
	if ev := watchEvent(t, watch); ev.Type != zkproto.EventNone || ev.State != StateExpired {
		t.Fatalf("the old session's watch ended with %+v, want EventNone/StateExpired", ev)
	}
	ev := waitState(t, s, StateConnected)
	if ev.SessionID == old || ev.SessionID == 0 {
		t.Fatalf("new session %#x after %#x expired", ev.SessionID, old)
	}
	if _, ok, err := s.Exists(ctx, "/e"); err != nil || ok {
		t.Fatalf("the expired session's ephemeral node: exists %v, %v", ok, err)
	}
	if _, _, err := s.Create(ctx, "/e", nil, CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
}

// TestSessionCloseWhileReconnecting closes a Session whose only server is
// gone: Close returns, a call waiting for a connection fails with
// ErrClosed, armed watches end with StateClosed and States closes.
func TestSessionCloseWhileReconnecting(t *testing.T) {
	cfg := server.Config{ClientAddr: "127.0.0.1:0", Core: zkcore.DefaultConfig()}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSession(testCtx(t), []string{srv.Addr().String(), testhost.DeadAddr(t)}, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	_, _, watch, err := s.ExistsW(ctx, "/x")
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	waitState(t, s, StateDisconnected)
	waiting := make(chan error, 1)
	go func() {
		_, _, err := s.Get(ctx, "/")
		waiting <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatalf("close while reconnecting: %v", err)
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrConnectionLoss) {
			t.Fatalf("a call made while reconnecting: %v, want ErrClosed", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("a call made while reconnecting still waits after Close")
	}
	if ev := watchEvent(t, watch); ev.Type != zkproto.EventNone || ev.State != StateClosed {
		t.Fatalf("watch ended with %+v, want EventNone/StateClosed", ev)
	}
	waitState(t, s, StateClosed)
	if _, ok := <-s.States(); ok {
		t.Fatal("States still open after Close")
	}
	if _, _, err := s.Get(ctx, "/"); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close: %v, want ErrClosed", err)
	}
}

// TestSessionOptions refuses what a Session sets itself, and a connect
// string it cannot use.
func TestSessionOptions(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		name    string
		servers []string
		opts    SessionOptions
	}{
		{"no servers", nil, SessionOptions{}},
		{"session id", []string{"a:1"}, SessionOptions{Options: Options{SessionID: 1, SessionPasswd: make([]byte, 16)}}},
		{"watches", []string{"a:1"}, SessionOptions{Options: Options{Watches: &zkproto.SetWatches2{}}}},
		{"negative backoff", []string{"a:1"}, SessionOptions{FirstBackoff: -1}},
	} {
		if _, err := OpenSession(ctx, tc.servers, tc.opts); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	for _, tc := range []struct {
		in   string
		want int
	}{{"a:1", 1}, {"a:1,b:2, c:3", 3}, {"a:1/chroot", 0}, {"", 0}, {"a:1,,b:2", 0}} {
		got, err := ParseServers(tc.in)
		if len(got) != tc.want || (tc.want == 0) != (err != nil) {
			t.Errorf("ParseServers(%q) = %v, %v", tc.in, got, err)
		}
	}
}

// TestSessionExpiresWithoutServers stops the only server for longer than
// the session timeout: the Session declares the session expired by itself
// (no server is there to say so), and opens a new one once a server is
// back.
func TestSessionExpiresWithoutServers(t *testing.T) {
	addr := testhost.Addr(t)
	start := func() *server.Server {
		core := zkcore.DefaultConfig()
		core.TickMs, core.MinSessionTimeoutMs = 100, 200
		srv, err := server.New(server.Config{ClientAddr: addr, Core: core})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		return srv
	}
	srv := start()
	s := openSession(t, []string{addr}, SessionOptions{Options: Options{SessionTimeout: time.Second}})
	ctx := testCtx(t)
	_, _, watch, err := s.ExistsW(ctx, "/x")
	if err != nil {
		t.Fatal(err)
	}
	old := s.SessionID()
	srv.Close()
	if ev := waitState(t, s, StateExpired); ev.SessionID != old {
		t.Fatalf("expired %#x, want %#x", ev.SessionID, old)
	}
	if ev := watchEvent(t, watch); ev.State != StateExpired {
		t.Fatalf("watch ended with %+v, want StateExpired", ev)
	}
	start() // a fresh server: it numbers its sessions from the start again
	waitState(t, s, StateConnected)
	if _, _, err := s.Get(ctx, "/"); err != nil {
		t.Fatal(err)
	}
}
