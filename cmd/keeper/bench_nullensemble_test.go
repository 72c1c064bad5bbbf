package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"keeper/bench"
	"keeper/internal/testhost"
)

// TestBenchNullEnsemble runs `keeper bench null-ensemble` and `keeper
// bench zk` writing through its first address (a follower's): the writes
// are answered, and the command ends cleanly when interrupted.
func TestBenchNullEnsemble(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(60*time.Second))
	defer cancel()
	addrs, stopNull := startCommand(t, ctx, 1, "bench", "null-ensemble", "--dir", t.TempDir(), "--log-level", "warn")
	servers := strings.TrimSpace(addrs.String())
	if n := len(strings.Split(servers, ",")); n != 3 {
		t.Fatalf("addresses %q: %d, want 3", servers, n)
	}

	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs([]string{"bench", "zk", "--servers", servers, "--op", "set", "--clients", "1", "--inflight", "1",
		"--keyspace", "10", "--duration", benchWindow(300 * time.Millisecond).String(), "--warmup", "0s", "--progress=false"})
	root.SetOut(&out)
	root.SetErr(io.Discard)
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("bench zk: %v\n%s", err, out.String())
	}
	var r bench.Result
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); err != nil || r.Ops == 0 || r.Errors != 0 {
		t.Fatalf("bench zk against the null ensemble: %q (%v)", out.String(), err)
	}

	if err := stopNull(); err != nil {
		t.Fatalf("bench null-ensemble: %v", err)
	}
}
