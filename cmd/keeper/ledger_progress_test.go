package main

import (
	"strconv"
	"strings"
	"testing"

	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestLedgerWriteProgress checks `ledger write --progress`: the ledger id
// first, then acknowledged entry ids, strictly increasing and ending at
// the last entry, then the usual summary.
func TestLedgerWriteProgress(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	out := mustRunLedger(t, cl, "", "write", "--count", "300", "--size", "32", "--progress")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("output %q", out)
	}
	id, ok := strings.CutPrefix(lines[0], "created ")
	if !ok {
		t.Fatalf("first line %q, want created <id>", lines[0])
	}
	if got := lines[len(lines)-1]; got != id {
		t.Fatalf("last line %q, want the id of the ledger created, %s", got, id)
	}
	prev := int64(-1)
	for _, l := range lines[1 : len(lines)-1] {
		s, ok := strings.CutPrefix(l, "acked ")
		n, err := strconv.ParseInt(s, 10, 64)
		if !ok || err != nil || n <= prev {
			t.Fatalf("progress line %q after acked %d", l, prev)
		}
		prev = n
	}
	if prev != 299 {
		t.Fatalf("last progress line acked %d, want 299", prev)
	}
}
