package errorfs

import (
	"errors"
	"syscall"
	"testing"

	"keeper/internal/vfs"
)

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line    string
		rule    Rule
		space   int64
		isSpace bool
		isRule  bool
		bad     bool
	}{
		{line: ""},
		{line: "   # a comment"},
		{line: "space=4096", space: 4096, isSpace: true},
		{line: "space=-1", space: -1, isSpace: true},
		{line: "ops=sync|syncdata path=log. err=EIO", rule: Rule{Ops: OpSync | OpSyncData, PathContains: "log.",
			Err: syscall.EIO}, isRule: true},
		{line: "ops=anysync after=3 times=2", rule: Rule{Ops: OpAnySync, After: 3, Times: 2}, isRule: true},
		{line: "ops=write err=ENOSPC", rule: Rule{Ops: OpWrite, Err: syscall.ENOSPC}, isRule: true},
		{line: "ops=all", rule: Rule{Ops: OpAll}, isRule: true},
		{line: "ops=fsync", bad: true},
		{line: "path=log.", bad: true},
		{line: "ops=sync err=EWHAT", bad: true},
		{line: "ops=sync after=-1", bad: true},
		{line: "ops=sync bogus", bad: true},
		{line: "ops=sync colour=red", bad: true},
		{line: "space=lots", bad: true},
	} {
		r, space, isSpace, isRule, err := ParseLine(tc.line)
		if (err != nil) != tc.bad {
			t.Errorf("%q: err %v, want bad=%v", tc.line, err, tc.bad)
			continue
		}
		if r != tc.rule || space != tc.space || isSpace != tc.isSpace || isRule != tc.isRule {
			t.Errorf("%q: got %+v %d %v %v, want %+v %d %v %v", tc.line, r, space, isSpace, isRule,
				tc.rule, tc.space, tc.isSpace, tc.isRule)
		}
	}
}

func TestLoad(t *testing.T) {
	f := Wrap(vfs.NewMem())
	if err := f.Load("ops=syncdata path=log.\nspace=10\n"); err != nil {
		t.Fatal(err)
	}
	file, err := f.Create("/log.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := file.SyncData(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("syncdata: %v, want EIO", err)
	}
	if _, err := file.Write(make([]byte, 20)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past the space limit: %v, want ENOSPC", err)
	}
	if err := f.Load("ops=bogus"); err == nil {
		t.Fatal("loading a bad file succeeded")
	}
	if err := file.SyncData(); !errors.Is(err, syscall.EIO) {
		t.Fatal("a failed Load changed the rules")
	}
	if err := f.Load(""); err != nil {
		t.Fatal(err)
	}
	if err := file.SyncData(); err != nil {
		t.Fatalf("syncdata after an empty file: %v", err)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"", "space=1", "ops=sync|write path=x after=1 times=2 err=EIO", "ops=all", "#x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, _, _, isRule, err := ParseLine(line)
		if err == nil && isRule && r.Ops == 0 {
			t.Fatalf("%q: a rule without ops", line)
		}
	})
}
