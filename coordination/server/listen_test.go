package server

import (
	"errors"
	"net"
	"slices"
	"sync"
	"testing"

	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
)

// TestListenSeam checks that Config.Listen opens the client listener: the
// server serves clients on what it returned, and a Listen that fails
// fails Start.
func TestListenSeam(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	s := startServer(t, func(c *Config) {
		c.Listen = func(network, address string) (net.Listener, error) {
			mu.Lock()
			asked = append(asked, network+" "+address)
			mu.Unlock()
			return net.Listen(network, address)
		}
	})
	mu.Lock()
	got := slices.Clone(asked)
	mu.Unlock()
	if want := []string{"tcp 127.0.0.1:0"}; !slices.Equal(got, want) {
		t.Fatalf("Listen called with %q, want %q", got, want)
	}
	c := rawSession(t, s.Addr().String())
	if code, p := c.create("/seam", nil, worldACL(zkproto.PermAll), 0); code != zkproto.CodeOK || p != "/seam" {
		t.Fatalf("create through the seam's listener: %v %q", code, p)
	}

	refused := errors.New("no listening today")
	cfg := Config{ClientAddr: "127.0.0.1:0", Core: zkcore.DefaultConfig(),
		Listen: func(string, string) (net.Listener, error) { return nil, refused }}
	s2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Start(); !errors.Is(err, refused) {
		t.Fatalf("Start with a failing Listen: %v, want %v", err, refused)
	}
}
