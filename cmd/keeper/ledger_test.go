package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
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

// written parses `ledger write --json`'s record: the ledger id and entry
// count.
func written(t *testing.T, out string) (id string, entries string) {
	t.Helper()
	var r writeRecord
	if err := json.Unmarshal([]byte(out), &r); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("write output %q: %v", out, err)
	}
	return strconv.FormatInt(r.Ledger, 10), strconv.FormatInt(r.Entries, 10)
}

// TestLedgerCommands drives every `keeper ledger` subcommand against an
// in-process cluster.
func TestLedgerCommands(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	lines := "alpha\nbeta\n\ngamma delta\n"
	out := mustRunLedger(t, cl, lines, "write", "-E", "3", "-Qw", "2", "-Qa=2", "--password", "pw", "--digest", "hmac", "--json")
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

	gen := mustRunLedger(t, cl, "", "write", "--count", "500", "--size", "64", "--Qw", "3", "--json")
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
	unclosed, _ := written(t, mustRunLedger(t, cl, "one\ntwo\nthree\n", "write", "--no-close", "--json"))
	var rr recoverRecord
	rec = mustRunLedger(t, cl, "", "recover", unclosed, "--json")
	if err := json.Unmarshal([]byte(rec), &rr); err != nil || strconv.FormatInt(rr.Ledger, 10) != unclosed ||
		rr.LastEntry != 2 || rr.Length != 11 || rr.Segments != 1 {
		t.Fatalf("recover --json of an unclosed ledger = %q (%v)", rec, err)
	}

	ls := mustRunLedger(t, cl, "", "ls")
	if want := strings.Join([]string{id, genID, open, unclosed}, "\n") + "\n"; ls != want {
		t.Fatalf("ls = %q, want %q", ls, want)
	}
	mustRunLedger(t, cl, "", "delete", genID, open)
	if ls = mustRunLedger(t, cl, "", "ls"); ls != id+"\n"+unclosed+"\n" {
		t.Fatalf("ls after delete = %q", ls)
	}
	if _, err := runLedger(t, cl, "", "stat", genID); err == nil || err.Error() != "ledger "+genID+" does not exist" {
		t.Fatalf("stat of a deleted ledger: %v", err)
	}
	if _, err := runLedger(t, cl, "", "delete", genID); err == nil || err.Error() != "ledger "+genID+" does not exist" {
		t.Fatalf("delete of a deleted ledger: %v", err)
	}
	// Without --json, stdout is the id alone, for scripts.
	plain := mustRunLedger(t, cl, "x\n", "write")
	if _, err := strconv.ParseInt(strings.TrimSuffix(plain, "\n"), 10, 64); err != nil || strings.Count(plain, "\n") != 1 {
		t.Fatalf("write printed %q, want an id on a line", plain)
	}
	mustRunLedger(t, cl, "", "stat", strings.TrimSpace(plain))
	var st statRecord
	if err := json.Unmarshal([]byte(mustRunLedger(t, cl, "", "stat", id, "--json")), &st); err != nil ||
		st.State != "CLOSED" || st.WriteQuorum != 2 || st.LastEntry == nil || *st.LastEntry != 3 || len(st.Segments) != 1 {
		t.Fatalf("stat --json: %+v, %v", st, err)
	}
	if _, err := runLedger(t, cl, "", "write", "-E", "2", "-Qw", "3"); err == nil {
		t.Fatal("write with Qw > E succeeded")
	}
}

// TestLedgerFlagValidation checks that placements no ledger can have are
// refused before anything is contacted, rather than replaced by defaults.
func TestLedgerFlagValidation(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"write", "-E", "0", "-Qw", "0", "-Qa", "0"}, "-E 0: the ensemble needs at least one bookie"},
		{[]string{"write", "-E", "3", "-Qw", "0"}, "-Qw 0: the write quorum must be between 1 and the ensemble size (-E 3)"},
		{[]string{"create", "-E", "3", "-Qw", "4"}, "-Qw 4: the write quorum must be between 1 and the ensemble size (-E 3)"},
		{[]string{"write", "-Qw", "2", "-Qa", "3"}, "-Qa 3: the ack quorum must be between 1 and the write quorum (-Qw 2)"},
		{[]string{"create", "-Qa", "0"}, "-Qa 0: the ack quorum must be between 1 and the write quorum (-Qw 2)"},
		{[]string{"write", "--count", "-1"}, "--count -1: want 0 (read stdin) or more"},
		{[]string{"write", "--count", "5", "--size", "0"}, "--size 0: an entry has at least one byte"},
		{[]string{"write", "--digest", "md5"}, `unknown digest "md5": want crc32c, crc32, hmac or dummy`},
		{[]string{"ls"}, "cannot reach the metadata service (--zk): 127.0.0.1:1: connection refused"},
	}
	for _, tt := range tests {
		root := newRootCmd()
		root.SetArgs(append([]string{"ledger", "--zk", "127.0.0.1:1"}, tt.args...))
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		if err == nil || err.Error() != tt.wantErr {
			t.Errorf("ledger %v: err %v, want %q", tt.args, err, tt.wantErr)
		}
		if out.Len() != 0 {
			t.Errorf("ledger %v printed %q", tt.args, out.String())
		}
	}
}

func TestUserError(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ledgerclient: metadata: read ledger 999: metadata: no such ledger", "read ledger 999: no such ledger"},
		{"zoocfg: initLimit is not set", "initLimit is not set"},
		{"sandbox: bookie 1: listen tcp 127.0.0.1:3181: bind: address already in use",
			"bookie 1: listen tcp 127.0.0.1:3181: bind: address already in use"},
		{"ledger 5 does not exist", "ledger 5 does not exist"},
		{"zoocfg", "zoocfg"},
	}
	for _, tt := range tests {
		if got := userError(errors.New(tt.in)); got != tt.want {
			t.Errorf("userError(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
