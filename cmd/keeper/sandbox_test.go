package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/internal/testhost"
)

// TestSandboxRunsServerAndBookies starts the sandbox, waits for its three
// bookies to register with its coordination server, stops it, and starts
// it again on the same data (the bookies' cookies must still match). No
// log line it wrote names a field twice.
func TestSandboxRunsServerAndBookies(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	defer func() { checkLogKeys(t, logs.String()) }()
	dir := filepath.Join(t.TempDir(), "keeper-data")
	// The sandbox's bookies take consecutive ports.
	sc := sandboxConfig{dataDir: dir, port: testhost.Port(t), bookies: 3, bookiePort: testhost.Run(t, 3)}
	want := make([]string, 3)
	for i := range want {
		want[i] = "127.0.0.1:" + strconv.Itoa(sc.bookiePort+i)
	}
	for round := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runSandbox(ctx, sc, logger, io.Discard) }()

		conn, _, err := zk.Connect([]string{"127.0.0.1:" + strconv.Itoa(sc.port)}, 10*time.Second,
			zk.WithLogger(quietZKLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(testhost.Scale(30 * time.Second))
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

// logKey finds the keys of a text log line's fields, outside quoted values.
var logKey = regexp.MustCompile(`(?:^| )([A-Za-z_][A-Za-z0-9_.]*)=(?:"(?:[^"\\]|\\.)*"|\S*)`)

// checkLogKeys fails the test for a log line that names a field twice
// (a wrapper's logger.With and the component's own, say): a reader, or a
// log pipeline keeping one of them, loses the other.
func checkLogKeys(t *testing.T, logs string) {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		seen := map[string]bool{}
		for _, m := range logKey.FindAllStringSubmatch(line, -1) {
			if seen[m[1]] {
				t.Errorf("log line names %s twice: %s", m[1], line)
				break
			}
			seen[m[1]] = true
		}
	}
}

type quietZKLogger struct{}

func (quietZKLogger) Printf(string, ...any) {}

// syncBuffer is a bytes.Buffer safe for one writer and a polling reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSandboxAddresses starts the sandbox while ZooKeeper's default admin
// port, 8080, is taken: the admin server and the bookies' metrics take
// free ports, and the sandbox prints every address it serves, each of
// which answers.
func TestSandboxAddresses(t *testing.T) {
	if ln, err := net.Listen("tcp", "127.0.0.1:8080"); err == nil {
		defer ln.Close() // otherwise something else holds it, which is as good
	}
	ports := testhost.Ports(t, 2)
	sc := sandboxConfig{dataDir: filepath.Join(t.TempDir(), "keeper-data"), port: ports[0], bookies: 1, bookiePort: ports[1]}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- runSandbox(ctx, sc, slog.New(slog.DiscardHandler), &out) }()
	deadline := time.Now().Add(testhost.Scale(30 * time.Second))
	for !strings.Contains(out.String(), "  try: ") {
		select {
		case err := <-done:
			t.Fatalf("sandbox stopped: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox did not say it runs:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	text := out.String()
	urls := regexp.MustCompile(`http://[0-9.:]+/(commands|metrics)`).FindAllString(text, -1)
	if len(urls) != 3 { // the admin server's two, and the bookie's metrics
		t.Fatalf("addresses printed: %v\n%s", urls, text)
	}
	for _, u := range urls {
		if strings.Contains(u, ":8080/") {
			t.Fatalf("%s: the sandbox took the busy port 8080", u)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", u, resp.Status)
		}
	}
	for _, want := range []string{"coordination server: 127.0.0.1:" + strconv.Itoa(ports[0]),
		"bookie:              127.0.0.1:" + strconv.Itoa(ports[1])} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
