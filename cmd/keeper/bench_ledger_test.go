package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"keeper/bench"
	"keeper/internal/testhost"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

func TestParseBenchQuorums(t *testing.T) {
	tests := []struct {
		in      []string
		want    string // the quorums joined by spaces, or "error"
		errWord string
	}{
		{in: []string{"3/3/2", "3/2/2"}, want: "3/3/2 3/2/2"},
		{in: []string{"5/3/2"}, want: "5/3/2"},
		{in: []string{"3/3"}, want: "error", errWord: "E/Qw/Qa"},
		{in: []string{"3/x/2"}, want: "error", errWord: "E/Qw/Qa"},
		{in: []string{"3/4/2"}, want: "error", errWord: "3/4/2"},
		{in: []string{"3/2/3"}, want: "error", errWord: "3/2/3"},
	}
	for _, tt := range tests {
		q, err := parseBenchQuorums(tt.in)
		if tt.want == "error" {
			if err == nil || !strings.Contains(err.Error(), tt.errWord) {
				t.Errorf("parseBenchQuorums(%q) = %v, %v; want an error naming %q", tt.in, q, err, tt.errWord)
			}
			continue
		}
		var got []string
		for _, x := range q {
			got = append(got, x.String())
		}
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("parseBenchQuorums(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// TestBenchLedger runs `keeper bench ledger` briefly against an in-process
// cluster: an fsync line, then one line per quorum, every run's ledger
// deleted afterwards.
func TestBenchLedger(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(60*time.Second))
	defer cancel()
	var out bytes.Buffer
	root := newRootCmd()
	duration := benchWindow(300 * time.Millisecond)
	root.SetArgs([]string{"bench", "ledger", "--zk", cl.ZKAddr(), "--log-level", "warn", "--quorums", "3/3/2,3/2/2",
		"--sizes", "100", "--inflight", "32", "--duration", duration.String(), "--warmup", benchWindow(100 * time.Millisecond).String(),
		"--fsync-dir", t.TempDir(), "--cpu-pid", strconv.Itoa(os.Getpid())}) // the cluster runs in this process
	root.SetOut(&out)
	root.SetErr(io.Discard)
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("bench ledger: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines (fsync, two runs), got %q", out.String())
	}
	var fs bench.FsyncResult
	if err := json.Unmarshal([]byte(lines[0]), &fs); err != nil || fs.Append.Ops == 0 {
		t.Fatalf("fsync line %q: %v", lines[0], err)
	}
	for i, want := range []benchQuorum{{3, 3, 2}, {3, 2, 2}} {
		var r benchLedgerResult
		if err := json.Unmarshal([]byte(lines[i+1]), &r); err != nil {
			t.Fatalf("line %q: %v", lines[i+1], err)
		}
		t.Logf("%s", lines[i+1])
		got := benchQuorum{r.Ensemble, r.WriteQuorum, r.AckQuorum}
		if r.Op != "ledger_add" || got != want || r.SizeBytes != 100 || r.Inflight != 32 || r.Errors != 0 {
			t.Errorf("run %d: %+v, want quorum %v, size 100, no errors", i, r, want)
		}
		if r.Entries == 0 || r.EntriesPerSec <= 0 || r.MBPerSec <= 0 || r.DurationSec <= 0 || r.DurationSec > duration.Seconds()+0.0001 {
			t.Errorf("run %d: implausible figures %+v", i, r)
		}
		if r.P50Us <= 0 || r.P50Us > r.P99Us || r.P99Us > r.P999Us {
			t.Errorf("run %d: percentiles out of order: %+v", i, r)
		}
		if r.ClientCPUUsPerAdd == nil || *r.ClientCPUUsPerAdd < 0 || r.ServerCPUUsPerAdd == nil || *r.ServerCPUUsPerAdd < 0 {
			t.Errorf("run %d: no CPU per add: %s", i, lines[i+1])
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
}

// TestBenchLedgerProtocols runs `keeper bench ledger` over both wire
// protocols and with several ledgers at once: one line per (ledgers,
// protocol), in that order, each with adds and no errors.
func TestBenchLedgerProtocols(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(60*time.Second))
	defer cancel()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs([]string{"bench", "ledger", "--zk", cl.ZKAddr(), "--log-level", "warn", "--quorums", "3/2/2",
		"--sizes", "100", "--ledgers", "1,3", "--protocols", "v3,v2", "--inflight", "16",
		"--duration", benchWindow(300 * time.Millisecond).String(), "--warmup", benchWindow(100 * time.Millisecond).String()})
	root.SetOut(&out)
	root.SetErr(io.Discard)
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("bench ledger: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []struct {
		ledgers  int
		protocol string
	}{{1, "v3"}, {1, "v2"}, {3, "v3"}, {3, "v2"}}
	if len(lines) != len(want) {
		t.Fatalf("want %d lines, got %q", len(want), out.String())
	}
	for i, w := range want {
		var r benchLedgerResult
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatalf("line %q: %v", lines[i], err)
		}
		t.Logf("%s", lines[i])
		if r.Ledgers != w.ledgers || r.Protocol != w.protocol || r.Entries == 0 || r.Errors != 0 {
			t.Errorf("run %d: %+v, want %d ledgers over %s, adds, no errors", i, r, w.ledgers, w.protocol)
		}
	}
	root = newRootCmd()
	root.SetArgs([]string{"bench", "ledger", "--zk", cl.ZKAddr(), "--protocols", "v4", "--duration", "10ms"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	if err := root.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "v4") {
		t.Errorf("--protocols v4: %v, want it refused", err)
	}
}

// TestBenchLedgerInterrupted starts an hour-long run, waits for a progress
// line that counts acknowledged adds, and interrupts it: the run prints
// what it measured, marked interrupted, and leaves no ledger behind.
func TestBenchLedgerInterrupted(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out bytes.Buffer
	var progress syncBuffer
	cfg := benchLedgerConfig{ZK: []string{cl.ZKAddr()}, Root: "/ledgers", Quorums: []benchQuorum{{3, 2, 2}}, Sizes: []int{100},
		Ledgers: []int{1}, Protocols: []string{"v3"}, Inflight: 8, Duration: time.Hour, Progress: &progress}
	done := make(chan error, 1)
	go func() { done <- runBenchLedger(ctx, cfg, &out) }()
	acked := regexp.MustCompile(`bench ledger 3/2/2 size 100: +\d+s measuring: ([1-9]\d*) adds acknowledged`)
	waitForProgress(t, &progress, acked.MatchString, done, &out)
	cancel()
	err := <-done
	var r benchLedgerResult
	if jerr := json.Unmarshal(out.Bytes(), &r); err == nil || !strings.Contains(err.Error(), "interrupted") || jerr != nil ||
		!r.Interrupted || r.Entries == 0 || r.DurationSec <= 0 || r.DurationSec >= time.Hour.Seconds() {
		t.Fatalf("interrupted run: err %v, output %q (%v)", err, out.String(), jerr)
	}
	c, cerr := ledgerclient.New(ledgerclient.Config{ZKServers: []string{cl.ZKAddr()}})
	if cerr != nil {
		t.Fatal(cerr)
	}
	defer c.Close()
	if ids, err := c.List(t.Context()); err != nil || len(ids) != 0 {
		t.Fatalf("ledgers left behind: %v, %v", ids, err)
	}
}

// benchWindow is a bench run's measured interval (or warm-up) in a test:
// d on an idle machine, longer by testhost.Timescale on a loaded one, so
// that the tests' "something was acknowledged in the interval" does not
// depend on the machine's speed.
func benchWindow(d time.Duration) time.Duration {
	return testhost.Scale(d).Round(time.Millisecond)
}
