package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/internal/testhost"
)

// Tests of OpFill and OpReady, the workloads behind the resource figures.

func TestFillLeavesTree(t *testing.T) {
	addr := startKeeper(t)
	cfg := Config{Servers: []string{addr}, Op: OpFill, Clients: 3, Inflight: 4, KeySpace: 300, SizeBytes: 7,
		CPUPIDs: []int{os.Getpid()}}
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Op != OpFill || res.Ops != 300 || res.OpsPerSec <= 0 || !strings.HasPrefix(res.Root, "/bench-") ||
		res.ServerCPUSeconds == nil {
		t.Fatalf("result %+v", res)
	}
	c, err := zkclient.Dial(t.Context(), addr, zkclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kids, _, err := c.Children(t.Context(), res.Root, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 300 {
		t.Fatalf("%d children under %s, want 300", len(kids), res.Root)
	}
	data, _, err := c.Get(t.Context(), res.Root+"/k-299", false)
	if err != nil || len(data) != 7 {
		t.Fatalf("k-299: %q, %v", data, err)
	}
	// A read of the filled tree is what OpReady waits for.
	ready, err := Run(t.Context(), Config{Servers: []string{addr}, Op: OpReady, ReadyPath: res.Root + "/k-0"})
	if err != nil || ready.Attempts < 1 || ready.ReadySec <= 0 {
		t.Fatalf("ready: %+v, %v", ready, err)
	}
}

// gateAction is what startGate does with a connection.
type gateAction int

const (
	gateClose gateAction = iota // close it at once, as Apache ZooKeeper does while it loads
	gateHold                    // accept it and never answer
	gateRelay                   // relay it to the target
)

// startGate listens on an ephemeral port and treats its n'th connection
// (from 0) as policy(n) says.
func startGate(t *testing.T, policy func(n int) gateAction, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn // mu guards conns
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	keep := func(cs ...net.Conn) {
		mu.Lock()
		conns = append(conns, cs...)
		mu.Unlock()
	}
	relay := func(c net.Conn) {
		up, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			return
		}
		keep(c, up)
		wg.Go(func() { io.Copy(up, c); up.Close() })
		wg.Go(func() { io.Copy(c, up); c.Close() })
	}
	wg.Go(func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			switch policy(n) {
			case gateClose:
				c.Close()
			case gateHold:
				keep(c)
			case gateRelay:
				relay(c)
			}
		}
	})
	return ln.Addr().String()
}

// closeFirst closes the first k connections and relays the rest; k < 0
// closes them all.
func closeFirst(k int) func(int) gateAction {
	return func(n int) gateAction {
		if k < 0 || n < k {
			return gateClose
		}
		return gateRelay
	}
}

func TestReady(t *testing.T) {
	null := startNull(t)
	tests := []struct {
		name     string
		policy   func(int) gateAction
		pid      bool
		want     int    // fewest attempts; 0 for an error
		wantErr  string // substring of the error
		duration time.Duration
	}{
		{"at once", closeFirst(0), false, 1, "", 5 * time.Second},
		{"after three refusals", closeFirst(3), false, 4, "", 5 * time.Second},
		{"from this process's start", closeFirst(2), true, 3, "", 5 * time.Second},
		// A held connection must not make the next attempt wait for it.
		{"past a connection never answered", func(n int) gateAction { return []gateAction{gateHold, gateRelay}[min(n, 1)] },
			false, 2, "", readyAttemptTimeout / 2},
		{"never", closeFirst(-1), false, 0, "no read of / served within", 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Servers: []string{startGate(t, tt.policy, null)}, Op: OpReady, Duration: tt.duration}
			if tt.pid {
				cfg.CPUPIDs = []int{os.Getpid()}
			}
			res, err := Run(t.Context(), cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Op != OpReady || res.Attempts < tt.want || res.ReadySec <= 0 || (res.ServerCPUSeconds != nil) != tt.pid {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

// TestReadyNeedsTheZnode: a server that answers, but without the znode,
// is not ready.
func TestReadyNeedsTheZnode(t *testing.T) {
	// The run lasts Duration, long enough for a loaded machine to answer
	// at all; the error is the last one an attempt ended with by itself.
	cfg := Config{Servers: []string{startKeeper(t)}, Op: OpReady, ReadyPath: "/absent", Duration: testhost.Scale(2 * time.Second)}
	_, err := Run(t.Context(), cfg)
	if err == nil || zkproto.CodeOf(err) != zkproto.CodeNoNode {
		t.Fatalf("err %v, want NoNode", err)
	}
}

// TestServerAnswer: what OpReady counts as a server's answer, which it
// reports in preference to failures to reach a server.
func TestServerAnswer(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&zkproto.Error{Code: zkproto.CodeNoNode, Path: "/absent"}, true},
		{fmt.Errorf("get: %w", &zkproto.Error{Code: zkproto.CodeNoAuth}), true},
		{&zkproto.Error{Code: zkproto.CodeConnectionLoss}, false},
		{&zkproto.Error{Code: zkproto.CodeOperationTimeout}, false},
		{errors.New("dial tcp 127.0.0.1:1: i/o timeout"), false},
		{context.DeadlineExceeded, false},
	}
	for _, tt := range tests {
		if got := serverAnswer(tt.err); got != tt.want {
			t.Errorf("serverAnswer(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
