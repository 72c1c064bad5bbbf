package server

import (
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/internal/vfs"
)

func TestCountingFS(t *testing.T) {
	mem := vfs.NewMem()
	f, err := mem.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 10_000)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var read atomic.Int64
	cf, err := countingFS{FS: mem, read: &read}.Open("/f")
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	if _, err := cf.ReadAt(make([]byte, 100), 5); err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, cf); err != nil || n != 10_000 {
		t.Fatalf("copied %d, %v", n, err)
	}
	if got := read.Load(); got != 10_100 {
		t.Fatalf("counted %d bytes, read 10100", got)
	}
}

// TestEveryLogsUntilStopped checks the progress logger: a line per
// interval with the attributes of the moment, none after stop.
func TestEveryLogsUntilStopped(t *testing.T) {
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	var n atomic.Int64
	stop := every(logger, time.Millisecond, "working", func(time.Duration) []any {
		return []any{"done", n.Add(1)}
	})
	deadline := time.Now().Add(testhost.Scale(30 * time.Second))
	for strings.Count(logs.String(), "msg=working") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("logs so far:\n%s", logs.String())
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	lines := logs.String()
	if !strings.Contains(lines, "done=1") || !strings.Contains(lines, "done=3") {
		t.Fatalf("logs:\n%s", lines)
	}
	if after := logs.String(); after != lines {
		t.Fatalf("logged after stop:\n%s", strings.TrimPrefix(after, lines))
	}
}

// TestLoadLogsStepsWithDurations restarts a server on a snapshot and a
// log: start-up logs the snapshot it loads with its size, then each step
// once done with the time it took.
func TestLoadLogsStepsWithDurations(t *testing.T) {
	mem := vfs.NewMem()
	mut := func(c *Config) { c.Storage.SnapCount = 20 }
	s := mustStartDurable(t, durableConfig(mem, mut))
	admin := zkOpen(t, s)
	writeSequentially(t, admin, "p", 100)
	waitSnapshotIdle(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	s = mustStartDurable(t, durableConfig(mem, mut, logTo(&logs)))
	s.Close()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`msg="loading snapshot" file=snapshot\.\S+ bytes=\d+`),
		regexp.MustCompile(`msg="snapshot read" file=snapshot\.\S+ read_bytes=\d+ duration=\S+`),
		regexp.MustCompile(`msg="replayed transaction log" txns=\d+ last_zxid=\S+ duration=\S+`),
	} {
		if !want.MatchString(logs.String()) {
			t.Errorf("no line matching %s in:\n%s", want, logs.String())
		}
	}
}
