package admin_test

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/server"
	"keeper/coordination/zkcore"
)

// testTimeout bounds every network wait in these tests.
const testTimeout = 10 * time.Second

// snapFileBytes is the size of the file startServer puts in the data
// directory, so that dirs and conf have a size to report.
const snapFileBytes = 1234

// startServer runs a standalone server with every four-letter word
// allowed and the admin HTTP server on a free loopback port.
func startServer(t *testing.T, mutate ...func(*server.Config)) *server.Server {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "version-2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "version-2", "snapshot.0"), make([]byte, snapFileBytes), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{
		ClientAddr:          "127.0.0.1:0",
		Core:                zkcore.DefaultConfig(),
		FourLetterWhitelist: []string{"*"},
		DataDir:             dir,
		DataLogDir:          dir,
		AdminAddr:           "127.0.0.1:0",
	}
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
	return s
}

// connect opens a go-zookeeper session and waits until it is established.
func connect(t *testing.T, s *server.Server) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{s.Addr().String()}, testTimeout, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(testTimeout)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatalf("no session; state %v", c.State())
		}
	}
	return c
}

// quietLogger drops go-zookeeper's connection chatter.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// fixture is a server with two sessions, ephemerals and watches:
//
//	c1: created /a, /a/b and the ephemeral /a/e; data and child watch on /a
//	c2: created the ephemeral /a/f; data watch on /a, exists watch on /nope
//
// That makes 9 nodes (4 more than a fresh tree), 2 ephemerals, 3 data-table
// watches over 2 paths and 2 connections, and 4 watches in all.
type fixture struct {
	s      *server.Server
	c1, c2 *zk.Conn
}

func newFixture(t *testing.T, mutate ...func(*server.Config)) *fixture {
	t.Helper()
	s := startServer(t, mutate...)
	c1 := connect(t, s)
	c2 := connect(t, s)
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/a", "/a/b"} {
		if _, err := c1.Create(p, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c1.Create("/a/e", []byte("x"), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Create("/a/f", []byte("y"), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c1.GetW("/a"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c1.ChildrenW("/a"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c2.GetW("/a"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c2.ExistsW("/nope"); err != nil {
		t.Fatal(err)
	}
	return &fixture{s: s, c1: c1, c2: c2}
}

// flw sends a four-letter word (with stmk's 8-byte argument if arg is not
// nil) and returns everything the server writes before closing.
func flw(t *testing.T, addr net.Addr, cmd string, arg *int64) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr.String(), testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(testTimeout))
	msg := []byte(cmd)
	if arg != nil {
		msg = binary.BigEndian.AppendUint64(msg, uint64(*arg))
	}
	if _, err := nc.Write(msg); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return string(out)
}

// getJSON fetches an admin URL path and decodes the JSON object it returns.
func getJSON(t *testing.T, s *server.Server, path string) map[string]any {
	t.Helper()
	body := get(t, s, path)
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%s: %v in %q", path, err, body)
	}
	return m
}

// get fetches an admin URL path and returns the body of a 200 answer.
func get(t *testing.T, s *server.Server, path string) string {
	t.Helper()
	client := http.Client{Timeout: testTimeout}
	resp, err := client.Get("http://" + s.AdminAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d: %s", path, resp.StatusCode, body)
	}
	return string(body)
}
