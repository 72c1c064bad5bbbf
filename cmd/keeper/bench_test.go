package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"keeper/coordination/server"
	"keeper/coordination/zkcore"
)

// runKeeper runs the keeper command line with args and returns its stdout.
func runKeeper(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(io.Discard)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// decodeLine checks that out is one JSON line and decodes it.
func decodeLine(t *testing.T, out string) map[string]any {
	t.Helper()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("want one line, got %q", out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	return m
}

// TestBenchNullAndZK starts `bench null`, reads its address, and loads it
// with `bench zk`.
func TestBenchNullAndZK(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		root := newRootCmd()
		root.SetArgs([]string{"bench", "null", "--addr", "127.0.0.1:0"})
		root.SetOut(pw)
		done <- root.ExecuteContext(ctx)
		pw.Close()
	}()
	addr, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	out, err := runKeeper(t, t.Context(), "bench", "zk", "--servers", strings.TrimSpace(addr),
		"--op", "get", "--clients", "2", "--inflight", "3", "--duration", benchWindow(200*time.Millisecond).String(),
		"--warmup", benchWindow(50*time.Millisecond).String(), "--keyspace", "10")
	if err != nil {
		t.Fatal(err)
	}
	m := decodeLine(t, out)
	if m["op"] != "get" || m["clients"] != 2.0 || m["inflight"] != 3.0 || m["ops"].(float64) <= 0 || m["errors"] != 0.0 {
		t.Errorf("result %v", m)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("bench null: %v", err)
	}
}

func TestBenchZKFlags(t *testing.T) {
	s, err := server.New(server.Config{ClientAddr: "127.0.0.1:0", Core: zkcore.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := s.Addr().String()
	out, err := runKeeper(t, t.Context(), "bench", "zk", "--servers", addr+","+addr, "--op", "mixed",
		"--clients", "2", "--inflight", "2", "--size", "10", "--duration", benchWindow(200*time.Millisecond).String(), "--warmup", "0s",
		"--keyspace", "20", "--read-ratio", "0.5")
	if err != nil {
		t.Fatal(err)
	}
	m := decodeLine(t, out)
	if m["op"] != "mixed" || m["size_bytes"] != 10.0 || len(m["servers"].([]any)) != 2 || m["ops"].(float64) <= 0 {
		t.Errorf("result %v", m)
	}
	out, err = runKeeper(t, t.Context(), "bench", "zk", "--servers", addr, "--op", "watch", "--watchers", "5", "--rounds", "3")
	if err != nil {
		t.Fatal(err)
	}
	if m := decodeLine(t, out); m["op"] != "watch" || m["watchers"] != 5.0 || m["ops"] != 3.0 {
		t.Errorf("watch result %v", m)
	}
	pid := strconv.Itoa(os.Getpid()) // this process runs the server
	out, err = runKeeper(t, t.Context(), "bench", "zk", "--servers", addr, "--op", "fill", "--keyspace", "50",
		"--clients", "2", "--inflight", "8", "--cpu-pid", pid+","+pid)
	if err != nil {
		t.Fatal(err)
	}
	m = decodeLine(t, out)
	root, _ := m["root"].(string)
	if m["op"] != "fill" || m["ops"] != 50.0 || root == "" || m["server_cpu_seconds"] == nil {
		t.Errorf("fill result %v", m)
	}
	out, err = runKeeper(t, t.Context(), "bench", "zk", "--servers", addr, "--op", "ready", "--path", root+"/k-49",
		"--duration", "5s")
	if err != nil {
		t.Fatal(err)
	}
	// A new attempt starts every 5 ms or more without waiting for the last
	// one, so a slow first answer (a loaded machine) means several.
	if m := decodeLine(t, out); m["op"] != "ready" || m["attempts"].(float64) < 1 || m["ready_sec"].(float64) <= 0 {
		t.Errorf("ready result %v", m)
	}
	if _, err := runKeeper(t, t.Context(), "bench", "zk", "--servers", addr, "--op", "nonsense"); err == nil ||
		!strings.Contains(err.Error(), "unknown op") {
		t.Errorf("bad op: %v", err)
	}
}

func TestBenchFsync(t *testing.T) {
	out, err := runKeeper(t, t.Context(), "bench", "fsync", "--dir", t.TempDir(), "--size", "512",
		"--duration", "50ms", "--prealloc", "65536")
	if err != nil {
		t.Fatal(err)
	}
	m := decodeLine(t, out)
	for _, mode := range []string{"append", "overwrite"} {
		r, ok := m[mode].(map[string]any)
		if !ok || r["ops"].(float64) <= 0 || r["p50_us"].(float64) <= 0 {
			t.Errorf("%s: %v", mode, m[mode])
		}
	}
	if m["size_bytes"] != 512.0 {
		t.Errorf("result %v", m)
	}
}

func TestBenchStalls(t *testing.T) {
	out, err := runKeeper(t, t.Context(), "bench", "stalls", "--dir", t.TempDir(), "--spinners", "1", "--writers", "1",
		"--rate", "100", "--duration", "50ms", "--gap", "2ms")
	if err != nil {
		t.Fatal(err)
	}
	m := decodeLine(t, out)
	if m["spinners"] != 1.0 || m["writers"] != 1.0 || m["rate_per_writer"] != 100.0 || m["gap_us"] != 2000.0 {
		t.Errorf("result %v", m)
	}
	for _, phase := range []string{"sync", "both"} {
		if r, ok := m[phase].(map[string]any); !ok || r["syncs"].(float64) <= 0 || r["sync_p50_us"].(float64) <= 0 {
			t.Errorf("%s: %v", phase, m[phase])
		}
	}
	if _, err := runKeeper(t, t.Context(), "bench", "stalls", "--dir", t.TempDir(), "--rate", "-5"); err == nil ||
		!strings.Contains(err.Error(), "rate -5 out of range") {
		t.Errorf("bad rate: %v", err)
	}
}
