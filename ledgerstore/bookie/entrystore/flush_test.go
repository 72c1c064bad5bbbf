package entrystore

import (
	"errors"
	"syscall"
	"testing"

	"keeper/internal/vfs/errorfs"
)

// TestFlushOrderOnSyncFailure checks the checkpoint order: when the entry
// log fsync fails, the batch's locations never reach the index, the error
// is sticky, and after a crash only the earlier batch is there.
func TestFlushOrderOnSyncFailure(t *testing.T) {
	for name, rule := range map[string]errorfs.Rule{
		"fsync":       {Ops: errorfs.OpSync, PathContains: ".log"},
		"write":       {Ops: errorfs.OpWrite, PathContains: ".log"},
		"full disk":   {Ops: errorfs.OpWrite, PathContains: ".log", Err: syscall.ENOSPC},
		"roll fsync":  {Ops: errorfs.OpSync, PathContains: ".log", After: 0},
		"lastId sync": {Ops: errorfs.OpSync, PathContains: "lastId"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv()
			efs := errorfs.Wrap(e.fs)
			cfg := e.config()
			cfg.FS = efs
			s := e.open(t, cfg)
			first := model{}
			for i := range int64(10) {
				first.put(1, i, mustAdd(t, s, 1, i, i-1, 1000))
			}
			mustFlush(t, s)

			efs.Add(rule)
			second := model{}
			n := int64(10)
			if name == "roll fsync" || name == "lastId sync" {
				n = 200 // enough to roll the 64 KiB log
			}
			for i := int64(10); i < 10+n; i++ {
				second.put(1, i, mustAdd(t, s, 1, i, i-1, 1000))
			}
			err := s.Flush()
			if !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("Flush = %v, want the injected error", err)
			}
			for id := range second[1] {
				if _, ok, err := lookupLocation(s.db, 1, id); ok || err != nil {
					t.Fatalf("entry %d indexed after a failed flush (err %v)", id, err)
				}
			}
			efs.Reset() // the disk recovers, but the store must not trust it
			if err := s.Flush(); !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("second Flush = %v, want the sticky error", err)
			}
			if err := s.Add(2, 0, makeEntry(2, 0, -1, 100)); !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("Add after failure = %v, want the sticky error", err)
			}
			if err := s.Fence(1); !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("Fence after failure = %v, want the sticky error", err)
			}
			first.check(t, s) // reads go on

			c := e.crash(nil)
			s2 := c.open(t, c.config())
			first.check(t, s2)
			for id := range second[1] {
				mustAbsent(t, s2, 1, id, ErrNoEntry)
			}
		})
	}
}

// TestFlushEmpty checks that a Flush with nothing to do writes nothing.
func TestFlushEmpty(t *testing.T) {
	e := newEnv()
	efs := errorfs.Wrap(e.fs)
	cfg := e.config()
	cfg.FS = efs
	s := e.open(t, cfg)
	before := efs.Count(errorfs.OpAll)
	mustFlush(t, s)
	mustFlush(t, s)
	if after := efs.Count(errorfs.OpAll); after != before {
		t.Fatalf("empty flushes did %d filesystem operations", after-before)
	}
}

// TestFlushSorted checks that a flush writes entries sorted by (ledger,
// entry), whatever order they were added in.
func TestFlushSorted(t *testing.T) {
	e := newEnv()
	cfg := e.config()
	cfg.Dirs = cfg.Dirs[:1]
	s := e.open(t, cfg)
	for _, k := range [][2]int64{{3, 1}, {1, 2}, {3, 0}, {1, 0}, {2, 5}, {1, 1}} {
		mustAdd(t, s, k[0], k[1], -1, 50)
	}
	mustFlush(t, s)
	var prev uint64
	for _, k := range [][2]int64{{1, 0}, {1, 1}, {1, 2}, {2, 5}, {3, 0}, {3, 1}} {
		loc := mustLocation(t, s, k[0], k[1])
		if loc <= prev {
			t.Fatalf("ledger %d entry %d at %#x, not after %#x", k[0], k[1], loc, prev)
		}
		prev = loc
	}
}
