package bench

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer for one writer and a polling reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var progressLine = regexp.MustCompile(`(?m)^bench: +\d+s (warmup|measuring): (\d+) replies, \d+/s over the last [0-9.]+m?s, (\d+) errors$`)

// TestRunProgressAndInterrupt runs an hour-long load against the null
// server, reads its progress lines, and interrupts it: Run returns the
// context's error with the partial result, marked interrupted.
func TestRunProgressAndInterrupt(t *testing.T) {
	srv, err := NewNullServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var progress lockedBuffer
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(ctx, Config{Servers: []string{srv.Addr().String()}, Op: OpGet, KeySpace: 10,
			Duration: time.Hour, Progress: &progress})
		done <- outcome{res, err}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		m := progressLine.FindAllStringSubmatch(progress.String(), -1)
		if len(m) >= 2 {
			if n, _ := strconv.Atoi(m[len(m)-1][2]); n > 0 {
				break
			}
		}
		select {
		case o := <-done:
			t.Fatalf("the run ended on its own: %+v, %v", o.res, o.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress so far:\n%s", progress.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	o := <-done
	if !errors.Is(o.err, context.Canceled) || !o.res.Interrupted || o.res.Ops == 0 || o.res.DurationSec <= 0 ||
		o.res.DurationSec >= time.Hour.Seconds() || o.res.OpsPerSec <= 0 {
		t.Fatalf("interrupted run: %+v, %v", o.res, o.err)
	}
}

func TestCountProgress(t *testing.T) {
	var out lockedBuffer
	var n atomic.Int64
	n.Store(5)
	stop := countProgress(&out, "creating the key space", 10, &n, time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "bench: creating the key space: 5 of 10\n") {
		if time.Now().After(deadline) {
			t.Fatalf("progress so far: %q", out.String())
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	if after := out.String(); !strings.HasSuffix(after, "5 of 10\n") {
		t.Fatalf("progress %q", after)
	}
}
