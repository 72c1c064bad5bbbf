package main

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"keeper/internal/testhost"
)

// TestReportBenchProgress runs the reporter in virtual time over a second
// of warmup and two measured seconds: a line a second, each with the
// phase, the total acknowledged, the last second's rate and the errors,
// and nothing once stopped.
func TestReportBenchProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out syncBuffer
		var acked, errs atomic.Int64
		start := time.Now()
		stop := reportBenchProgress(&out, "bench test", "size 1", start, start.Add(1500*time.Millisecond),
			func() (int64, int64) { return acked.Load(), errs.Load() })
		for _, step := range []struct{ acked, errs int64 }{{100, 0}, {300, 1}, {600, 1}} {
			acked.Store(step.acked)
			errs.Store(step.errs)
			time.Sleep(time.Second)
			synctest.Wait()
		}
		stop()
		time.Sleep(2 * time.Second)
		want := strings.Join([]string{
			"bench test size 1:    1s warmup: 100 adds acknowledged, 100/s over the last 1s, 0 errors",
			"bench test size 1:    2s measuring: 300 adds acknowledged, 200/s over the last 1s, 1 errors",
			"bench test size 1:    3s measuring: 600 adds acknowledged, 300/s over the last 1s, 1 errors",
			"",
		}, "\n")
		if got := out.String(); got != want {
			t.Fatalf("progress:\n%s\nwant:\n%s", got, want)
		}
	})
}

// waitForProgress polls progress until match holds of what it holds, for
// a test whose run reports on done when it ends and prints its results on
// out: a run that ends first, or no match within a minute (scaled), fails
// the test.
func waitForProgress(t *testing.T, progress *syncBuffer, match func(string) bool, done <-chan error, out fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(testhost.Scale(60 * time.Second))
	for !match(progress.String()) {
		select {
		case err := <-done:
			t.Fatalf("the run ended on its own: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress so far:\n%s", progress.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
