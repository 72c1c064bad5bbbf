package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/ledgerclient/ledgertest"
	"keeper/ledgerstore/metadata"
)

// TestBenchNullBookie runs `keeper bench null-bookie` against a
// coordination server without bookies, and `keeper bench ledger` against
// the null bookies: adds are acknowledged, and the bookies leave the
// registry when the command ends.
func TestBenchNullBookie(t *testing.T) {
	cl := ledgertest.Start(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(60*time.Second))
	defer cancel()
	_, stopNull := startCommand(t, ctx, 3, "bench", "null-bookie", "--zk", cl.ZKAddr(), "--port", "0", "--dir", t.TempDir(), "--log-level", "warn")

	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs([]string{"bench", "ledger", "--zk", cl.ZKAddr(), "--log-level", "warn", "--quorums", "3/2/2",
		"--sizes", "100", "--inflight", "4", "--duration", benchWindow(300 * time.Millisecond).String(),
		"--warmup", benchWindow(100 * time.Millisecond).String()})
	root.SetOut(&out)
	root.SetErr(io.Discard)
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("bench ledger: %v\n%s", err, out.String())
	}
	var r benchLedgerResult
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); err != nil || r.Entries == 0 || r.Errors != 0 {
		t.Fatalf("bench ledger against null bookies: %q (%v)", out.String(), err)
	}

	if err := stopNull(); err != nil {
		t.Fatalf("bench null-bookie: %v", err)
	}
	sess, err := metadata.Dial(ctx, metadata.DialConfig{Servers: []string{cl.ZKAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	store, err := sess.NewStore(metadata.Config{Root: "/ledgers"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for {
		reg, err := store.Bookies(ctx)
		if err == nil && len(reg.Writable)+len(reg.ReadOnly) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("null bookies still registered after the command ended: %+v %v", reg, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
