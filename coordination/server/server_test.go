package server

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/zkcore"
)

// startServer runs a standalone server on a free loopback port.
func startServer(t *testing.T, mutate ...func(*Config)) *Server {
	t.Helper()
	cfg := Config{
		ClientAddr:          "127.0.0.1:0",
		Core:                zkcore.DefaultConfig(),
		FourLetterWhitelist: []string{"*"},
	}
	cfg.Core.ExtendedTypes = true
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// connect opens a go-zookeeper session and waits until it is established.
func connect(t *testing.T, s *Server) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(zk.DefaultLogger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(waitTimeout)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatalf("no session; state %v", c.State())
		}
	}
	return c, ev
}

func TestBasicOperations(t *testing.T) {
	s := startServer(t)
	c, _ := connect(t, s)
	p, err := c.Create("/a", []byte("x"), 0, zk.WorldACL(zk.PermAll))
	if err != nil || p != "/a" {
		t.Fatalf("create: %q %v", p, err)
	}
	data, st, err := c.Get("/a")
	if err != nil || string(data) != "x" || st.Version != 0 {
		t.Fatalf("get: %q %+v %v", data, st, err)
	}
	if _, err := c.Set("/a", []byte("y"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/a", []byte("z"), 0); err != zk.ErrBadVersion {
		t.Fatalf("stale set: %v", err)
	}
	seq, err := c.Create("/a/s-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil || seq != "/a/s-0000000000" {
		t.Fatalf("sequential: %q %v", seq, err)
	}
	kids, _, err := c.Children("/a")
	if err != nil || len(kids) != 1 || kids[0] != "s-0000000000" {
		t.Fatalf("children: %v %v", kids, err)
	}
	if err := c.Delete("/a", -1); err != zk.ErrNotEmpty {
		t.Fatalf("delete non-empty: %v", err)
	}
	_, _, wch, err := c.GetW("/a/s-0000000000")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/a/s-0000000000", -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-wch:
		if ev.Type != zk.EventNodeDeleted || ev.Path != "/a/s-0000000000" {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no watch event")
	}
	ok, st, err := c.Exists("/a")
	if err != nil || !ok || st.Cversion != 2 || st.NumChildren != 0 {
		t.Fatalf("exists: %v %+v %v", ok, st, err)
	}
}

// TestCloseTwice: closing a server twice, standalone or an ensemble
// member, returns and does not panic.
func TestCloseTwice(t *testing.T) {
	s := startServer(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	ens := startEnsemble(t, 3)
	if err := ens[0].Close(); err != nil {
		t.Fatal(err)
	}
	if err := ens[0].Close(); err != nil {
		t.Errorf("second Close of a member: %v", err)
	}
}
