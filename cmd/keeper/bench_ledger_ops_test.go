package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestBenchLedgerOps runs `keeper bench ledger --op recover`, `--op
// tail` and `--op read` on a small cluster: one line per run with the op's figures, and no
// ledger left behind.
func TestBenchLedgerOps(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	window := benchWindow(300 * time.Millisecond).String()
	tests := []struct {
		name  string
		args  []string
		check func(r benchLedgerResult) bool
		lines int
		// wantErr, if set, is in the error the command must fail with.
		wantErr string
	}{
		{name: "recover", lines: 4,
			args: []string{"--op", "recover", "--entries", "300", "--rounds", "2", "--recovery-read-batch-size", "1,16",
				"--protocols", "v3"},
			check: func(r benchLedgerResult) bool {
				return r.Op == "ledger_recover" && r.Entries == 300 && r.DurationSec > 0 &&
					(r.RecoveryReadBatchSize == 1 || r.RecoveryReadBatchSize == 16)
			}},
		{name: "recover over v2", lines: 1,
			args: []string{"--op", "recover", "--entries", "100", "--recovery-read-batch-size", "8", "--protocols", "v2"},
			check: func(r benchLedgerResult) bool {
				return r.Op == "ledger_recover" && r.Entries == 100 && r.Protocol == "v2"
			}},
		{name: "tail", lines: 2,
			args: []string{"--op", "tail", "--tail", "2", "--inflight", "4", "--protocols", "v3,v2",
				"--explicit-lac-interval", "20ms", "--duration", window, "--warmup", "0s"},
			check: func(r benchLedgerResult) bool {
				return r.Op == "ledger_tail" && r.Tailers == 2 && r.Entries > 0 && r.P50Us >= 0 && r.P99Us >= r.P50Us
			}},
		{name: "read", lines: 2,
			args: []string{"--op", "read", "--entries", "400", "--reads", "150", "--inflight", "4", "--protocols", "v3,v2"},
			check: func(r benchLedgerResult) bool {
				return r.Op == "ledger_read" && r.Entries == 150 && r.LedgerEntries == 400 && r.Inflight == 4 &&
					r.Phase == "flushed" && r.DurationSec > 0 && r.P50Us >= 0 && r.P99Us >= r.P50Us
			}},
		{name: "read more than the ledger", args: []string{"--op", "read", "--entries", "10", "--reads", "11"},
			wantErr: "--reads (11) <= --entries (10)"},
		{name: "read nothing", args: []string{"--op", "read", "--reads", "0"}, wantErr: "--reads (0)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(60*time.Second))
			defer cancel()
			var out bytes.Buffer
			root := newRootCmd()
			root.SetArgs(append([]string{"bench", "ledger", "--zk", cl.ZKAddr(), "--log-level", "warn",
				"--quorums", "3/2/2", "--sizes", "100"}, tc.args...))
			root.SetOut(&out)
			root.SetErr(io.Discard)
			err := root.ExecuteContext(ctx)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("bench ledger %v: err %v, want one containing %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("bench ledger: %v\n%s", err, out.String())
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != tc.lines {
				t.Fatalf("want %d lines, got %q", tc.lines, out.String())
			}
			for _, l := range lines {
				var r benchLedgerResult
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				t.Logf("%s", l)
				if !tc.check(r) {
					t.Errorf("line %s: unexpected figures", l)
				}
			}
			c, err := ledgerclient.New(ledgerclient.Config{ZKServers: []string{cl.ZKAddr()}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if ids, err := c.List(ctx); err != nil || len(ids) != 0 {
				t.Fatalf("ledgers left behind: %v, %v", ids, err)
			}
		})
	}
}

// TestBenchLedgerReadDuringCompaction runs `keeper bench ledger --op read
// --bookie-http` against bookies with small entry logs: after the flushed
// reads, an idle line and a compaction line, whose compaction removed
// entry logs (the deleted ledgers' share) while the reads went on.
func TestBenchLedgerReadDuringCompaction(t *testing.T) {
	cl := ledgertest.StartWith(t, 3, func(c *bookie.Config) {
		c.HTTPServerAddr = "127.0.0.1:0"
		c.EntryLogMaxBytes = 128 << 10
		c.WriteCacheBytes = 512 << 10
		c.MajorCompactionInterval = time.Hour // enabled; forced below
	})
	var admins []string
	for _, b := range cl.Bookies {
		admins = append(admins, b.HTTPAddr().String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(60*time.Second))
	defer cancel()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs([]string{"bench", "ledger", "--zk", cl.ZKAddr(), "--log-level", "warn", "--quorums", "3/2/2",
		"--sizes", "1024", "--op", "read", "--entries", "1500", "--reads", "200", "--inflight", "2",
		"--bookie-http", strings.Join(admins, ",")})
	root.SetOut(&out)
	root.SetErr(io.Discard)
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("bench ledger: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got %q", out.String())
	}
	var phases []string
	for _, l := range lines {
		var r benchLedgerResult
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		t.Logf("%s", l)
		phases = append(phases, r.Phase)
		if r.Op != "ledger_read" || r.Entries <= 0 || r.LedgerEntries != 1500 || r.P99Us < r.P50Us {
			t.Errorf("line %s: unexpected figures", l)
		}
		switch r.Phase {
		case "flushed", "idle":
			if r.Entries != 200 {
				t.Errorf("line %s: want 200 reads", l)
			}
		case "compaction":
			if r.CompactionSec <= 0 || r.EntryLogsAfter >= r.EntryLogsBefore {
				t.Errorf("line %s: want a compaction that removed entry logs", l)
			}
		}
	}
	if want := []string{"flushed", "idle", "compaction"}; !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
}
