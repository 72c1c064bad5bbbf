package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// startCommand runs `keeper ARGS...` in the background until stop, and
// returns once its stdout has lines lines (failing the test if it ends
// first or ctx does). stop interrupts it and returns its error.
func startCommand(t *testing.T, ctx context.Context, lines int, args ...string) (out *syncBuffer, stop func() error) {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	out = &syncBuffer{}
	cmd := newRootCmd()
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(cctx) }()
	stop = func() error {
		cancel()
		return <-done
	}
	for strings.Count(out.String(), "\n") < lines {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("keeper %s ended: %v", strings.Join(args, " "), err)
		case <-ctx.Done():
			stop()
			t.Fatalf("keeper %s: %d lines of output wanted: %q", strings.Join(args, " "), lines, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return out, stop
}
