package entrystore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestPebbleFatalStopsTheProcess: pebble's fatal errors stop the process
// with status 1 after logging why, rather than panicking through pebble's
// deferred unlocks.
func TestPebbleFatalStopsTheProcess(t *testing.T) {
	type exited struct{ code int }
	codes := []int{}
	old := exit
	exit = func(code int) {
		codes = append(codes, code)
		panic(exited{code})
	}
	t.Cleanup(func() { exit = old })

	var logged bytes.Buffer
	l := pebbleLogger{l: slog.New(slog.NewTextHandler(&logged, nil))}
	func() {
		defer func() {
			if r := recover(); r != (exited{1}) {
				t.Fatalf("Fatalf: recovered %v, want the exit(1) call", r)
			}
		}()
		l.Fatalf("write %s: %s", "000012.log", "no such file or directory")
		t.Fatal("Fatalf returned")
	}()
	if len(codes) != 1 || codes[0] != 1 {
		t.Fatalf("exit codes = %v, want [1]", codes)
	}
	if got := logged.String(); !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "write 000012.log: no such file or directory") {
		t.Fatalf("log = %q, want an ERROR line with pebble's message", got)
	}
}
