package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// freePorts returns n distinct ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// TestSandboxRunsServerAndBookies starts the sandbox, waits for its three
// bookies to register with its coordination server, stops it, and starts
// it again on the same data (the bookies' cookies must still match).
func TestSandboxRunsServerAndBookies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keeper-data")
	// Bookie ports must be consecutive for the sandbox; take a free one and
	// hope its two successors are free too, which on loopback they nearly
	// always are.
	ports := freePorts(t, 2)
	sc := sandboxConfig{dataDir: dir, port: ports[0], bookies: 3, bookiePort: ports[1]}
	want := make([]string, 3)
	for i := range want {
		want[i] = "127.0.0.1:" + strconv.Itoa(sc.bookiePort+i)
	}
	for round := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runSandbox(ctx, sc, slog.New(slog.DiscardHandler), io.Discard) }()

		conn, _, err := zk.Connect([]string{"127.0.0.1:" + strconv.Itoa(sc.port)}, 10*time.Second,
			zk.WithLogger(quietZKLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			kids, _, err := conn.Children("/ledgers/available")
			slices.Sort(kids)
			kids = slices.DeleteFunc(kids, func(s string) bool { return s == "readonly" })
			if err == nil && slices.Equal(kids, want) {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("round %d: sandbox stopped: %v", round, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: registered bookies %v (%v), want %v", round, kids, err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
		conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("round %d: sandbox stop: %v", round, err)
		}
	}
}

type quietZKLogger struct{}

func (quietZKLogger) Printf(string, ...any) {}
