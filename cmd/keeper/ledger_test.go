package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// runLedger runs `keeper ledger args...` against the cluster with stdin
// and returns its standard output.
func runLedger(t *testing.T, cl *ledgertest.Cluster, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs(append([]string{"ledger", args[0], "--zk", cl.ZKAddr(), "--log-level", "warn"}, args[1:]...))
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(io.Discard)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

func mustRunLedger(t *testing.T, cl *ledgertest.Cluster, stdin string, args ...string) string {
	t.Helper()
	out, err := runLedger(t, cl, stdin, args...)
	if err != nil {
		t.Fatalf("keeper ledger %v: %v\n%s", args, err, out)
	}
	return out
}

var writeLine = regexp.MustCompile(`^ledger (\d+): (\d+) entries, (\d+) bytes in .* LAC (-?\d+)\n$`)

// written parses `ledger write`'s summary: the ledger id and entry count.
func written(t *testing.T, out string) (id string, entries string) {
	t.Helper()
	m := writeLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("write output %q", out)
	}
	return m[1], m[2]
}

// TestLedgerCommands drives every `keeper ledger` subcommand against an
// in-process cluster.
func TestLedgerCommands(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	lines := "alpha\nbeta\n\ngamma delta\n"
	out := mustRunLedger(t, cl, lines, "write", "-E", "3", "-Qw", "2", "-Qa=2", "--password", "pw", "--digest", "hmac")
	id, n := written(t, out)
	if n != "4" {
		t.Fatalf("wrote %s entries, want 4: %q", n, out)
	}
	if got := mustRunLedger(t, cl, "", "read", id, "--password", "pw"); got != lines {
		t.Fatalf("read = %q, want %q", got, lines)
	}
	if got := mustRunLedger(t, cl, "", "read", id, "--password", "pw", "--from", "1", "--to", "2", "--ids"); got != "1\tbeta\n2\t\n" {
		t.Fatalf("read 1..2 = %q", got)
	}
	if got := mustRunLedger(t, cl, "", "tail", id, "-f", "--password", "pw"); got != lines {
		t.Fatalf("tail -f of a closed ledger = %q", got)
	}
	if _, err := runLedger(t, cl, "", "read", id, "--password", "nope"); err == nil || !strings.Contains(err.Error(), "password") {
		t.Fatalf("read with the wrong password: %v", err)
	}
	stat := mustRunLedger(t, cl, "", "stat", id)
	for _, want := range []string{"state       CLOSED", "quorums     E=3 Qw=2 Qa=2", "digest      HMAC", "last entry  3",
		"length      20", "segment     0: "} {
		if !strings.Contains(stat, want) {
			t.Errorf("stat lacks %q:\n%s", want, stat)
		}
	}

	gen := mustRunLedger(t, cl, "", "write", "--count", "500", "--size", "64", "--Qw", "3")
	genID, n := written(t, gen)
	if n != "500" {
		t.Fatalf("generated write: %q", gen)
	}
	t.Logf("keeper ledger write --count 500 --size 64: %s", strings.TrimSpace(gen))
	read := mustRunLedger(t, cl, "", "tail", genID)
	if c := strings.Count(read, "\n"); c != 500 || !strings.HasPrefix(read, "entry 0 ") {
		t.Fatalf("tail of the generated ledger: %d lines", c)
	}

	open := strings.TrimSpace(mustRunLedger(t, cl, "", "create", "-Qw", "3", "--password", "x"))
	rec := mustRunLedger(t, cl, "", "recover", open, "--password", "x")
	if !strings.HasPrefix(rec, fmt.Sprintf("ledger %s: closed at entry -1, length 0, 1 segment(s)", open)) {
		t.Fatalf("recover = %q", rec)
	}
	unclosed, _ := written(t, mustRunLedger(t, cl, "one\ntwo\nthree\n", "write", "--no-close"))
	rec = mustRunLedger(t, cl, "", "recover", unclosed)
	if !strings.HasPrefix(rec, fmt.Sprintf("ledger %s: closed at entry 2, length 11,", unclosed)) {
		t.Fatalf("recover of an unclosed ledger = %q", rec)
	}

	ls := mustRunLedger(t, cl, "", "ls")
	if want := strings.Join([]string{id, genID, open, unclosed}, "\n") + "\n"; ls != want {
		t.Fatalf("ls = %q, want %q", ls, want)
	}
	mustRunLedger(t, cl, "", "delete", genID, open)
	if ls = mustRunLedger(t, cl, "", "ls"); ls != id+"\n"+unclosed+"\n" {
		t.Fatalf("ls after delete = %q", ls)
	}
	if _, err := runLedger(t, cl, "", "stat", genID); err == nil {
		t.Fatal("stat of a deleted ledger succeeded")
	}
	if _, err := runLedger(t, cl, "", "write", "-E", "2", "-Qw", "3"); err == nil {
		t.Fatal("write with Qw > E succeeded")
	}
}
