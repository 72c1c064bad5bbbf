package zkclient

import (
	"context"
	"net"
	"testing"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/server"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
)

// testTimeout bounds every wait in these tests; a healthy run takes
// milliseconds.
const testTimeout = 10 * time.Second

// startServer runs an in-process keeper server on a free loopback port.
func startServer(t testing.TB, mutate ...func(*server.Config)) string {
	t.Helper()
	cfg := server.Config{
		ClientAddr:          "127.0.0.1:0",
		Core:                zkcore.DefaultConfig(),
		FourLetterWhitelist: []string{"*"},
	}
	cfg.Core.ExtendedTypes = true
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String()
}

// dial opens a session and closes it when the test ends.
func dial(t *testing.T, addr string, opts Options) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := Dial(ctx, addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testCtx returns a context bounded by testTimeout.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every few milliseconds until it holds, failing the
// test if it does not within testTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// nextEvent returns the next watch event, failing the test if none comes.
func nextEvent(t *testing.T, c *Conn) zkproto.WatcherEvent {
	t.Helper()
	select {
	case ev, ok := <-c.Events():
		if !ok {
			t.Fatalf("events closed: %v", c.Err())
		}
		return ev
	case <-time.After(testTimeout):
		t.Fatal("no watch event")
	}
	return zkproto.WatcherEvent{}
}

// startFake runs a scripted server for what a real one never does (stay
// silent, answer out of order, send garbage) on a free port. It serves
// one connection: handle runs after the handshake request has been read.
func startFake(t *testing.T, handle func(nc net.Conn, req zkproto.ConnectRequest)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		frame, err := zkproto.ReadFrame(nc, nil, 0)
		if err != nil {
			return
		}
		req, err := zkproto.DecodeConnectRequest(frame, 0)
		if err != nil {
			return
		}
		handle(nc, req)
	}()
	return ln.Addr().String()
}

// acceptSession writes a valid ConnectResponse with the given timeout.
func acceptSession(nc net.Conn, timeoutMs int32) error {
	resp := zkproto.ConnectResponse{
		TimeoutMs: timeoutMs, SessionID: 0x42, Passwd: make([]byte, zkproto.PasswdLen), HasReadOnly: true,
	}
	_, err := nc.Write(zkproto.AppendFrame(nil, jute.Marshal(&resp)))
	return err
}

// readRequests reads request frames from nc and sends their headers to
// the returned channel until the connection ends.
func readRequests(nc net.Conn) <-chan zkproto.RequestHeader {
	ch := make(chan zkproto.RequestHeader, 1024)
	go func() {
		defer close(ch)
		for {
			frame, err := zkproto.ReadFrame(nc, nil, 0)
			if err != nil {
				return
			}
			h, _, err := zkproto.DecodeRequest(frame, 0)
			if err != nil {
				return
			}
			ch <- h
		}
	}()
	return ch
}
