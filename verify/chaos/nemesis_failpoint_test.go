package chaos

import (
	"slices"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/failpoint"
	"keeper/internal/vfs"
)

// TestFailpointCells keeps the matrix and the failpoints in step: every
// named point is in some cell, every cell names a point once per mode,
// and the witnesses cover every mode.
func TestFailpointCells(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range FailpointCells {
		if !slices.Contains(failpoint.Names, c.Point) {
			t.Errorf("cell %s names no failpoint", c)
		}
		if seen[c.String()] {
			t.Errorf("cell %s listed twice", c)
		}
		seen[c.String()] = true
		if _, err := failpoint.Parse(failpoint.Rule{Name: c.Point, Action: failpoint.Kill, Count: 1}.String()); err != nil {
			t.Errorf("cell %s: %v", c, err)
		}
	}
	for _, n := range failpoint.Names {
		if !slices.ContainsFunc(FailpointCells, func(c FailpointCell) bool { return c.Point == n }) {
			t.Errorf("failpoint %s is in no cell", n)
		}
	}
	for _, m := range []SyncMode{SyncDIFF, SyncTRUNC, SyncSNAP} {
		if !slices.ContainsFunc(witnesses, func(w struct {
			point string
			mode  SyncMode
		}) bool {
			return w.mode == m
		}) {
			t.Errorf("no witness for %s", m)
		}
	}
}

func TestFailpointMatrix(t *testing.T) {
	var fm FailpointMatrix
	if fm.String() != "" {
		t.Fatalf("empty matrix: %q", fm.String())
	}
	fm.add("snap-before-rename/SNAP", "ok")
	fm.add("made-up/DIFF", "FAIL")
	fm.add("current-epoch-written/DIFF", "not-reached")
	fm.add("current-epoch-written/DIFF", "ok")
	fm.add("current-epoch-written/DIFF", "ok")
	want := "current-epoch-written/DIFF=ok(2),not-reached(1) snap-before-rename/SNAP=ok(1) made-up/DIFF=FAIL(1)"
	if got := fm.String(); got != want {
		t.Fatalf("matrix %q, want %q", got, want)
	}
}

// TestHolds reads a log of 0x100000001-0x10000000a with a snapshot at
// 0x100000005, then the same log cut after 0x100000004 and continued in
// epoch 2.
func TestHolds(t *testing.T) {
	dir := testDataDir(t, 10)
	for _, tc := range []struct {
		z    zxid.ID
		want string
	}{
		{z(3), "logged"}, {z(10), "logged"}, {z(11), "behind"},
	} {
		if got := holds(dir, tc.z); got != tc.want {
			t.Errorf("holds(%s) = %s, want %s", tc.z, got, tc.want)
		}
	}
	if got := lastLoggedFrom(dir, z(4)); got != z(10) {
		t.Errorf("lastLoggedFrom = %s", got)
	}
	if err := txnlog.Truncate(vfs.Default, dir, z(4), txnlog.Config{}); err != nil {
		t.Fatal(err)
	}
	l, err := txnlog.Open(vfs.Default, dir, txnlog.Config{PreAllocSizeBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	next := tx(1, 20, zkproto.OpSetData, &txn.SetData{Path: "/k", Data: []byte("v2"), Version: 5})
	next.Header.Zxid = zxid.Make(2, 1)
	if err := l.Append(next); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		z    zxid.ID
		want string
	}{
		{z(4), "logged"}, {z(5), "snapshot"}, {z(6), "lost"}, {zxid.Make(2, 1), "logged"}, {zxid.Make(2, 2), "behind"},
	} {
		if got := holds(dir, tc.z); got != tc.want {
			t.Errorf("after the cut, holds(%s) = %s, want %s", tc.z, got, tc.want)
		}
	}
}
