package bookie

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"keeper/ledgerstore/metadata"
)

// logLines collects a bookie's structured log lines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// with returns the records logged with message msg.
func (l *logLines) with(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// TestLongStepsLogProgress: a compaction and a journal replay at start log
// how far they are at every ProgressInterval (here as often as they look at
// the clock), and each step, garbage collection included, ends with one
// line carrying its duration.
func TestLongStepsLogProgress(t *testing.T) {
	logs := &logLines{}
	e := newEnv(t, true)
	e.tweak = func(c *Config) {
		c.LedgerDirs = []string{"/ledgers0"}
		c.EntryLogMaxBytes = 16 << 10
		c.CompactionStepBytes = 4 << 10
		c.ProgressInterval = time.Nanosecond
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	}
	b := e.start()
	c, zc := dial(t, b), e.zkConn()
	createLedgerZnode(t, zc, 10)
	createLedgerZnode(t, zc, 11)
	for i := int64(0); i < 30; i++ {
		addEntries(t, c, 10, i*10, (i+1)*10)
		addEntries(t, c, 11, i*10, (i+1)*10)
		if err := b.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	if err := zc.Delete(t.Context(), metadata.LayoutHierarchical.Path("/ledgers", 11), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GC(); err != nil {
		t.Fatal(err)
	}
	st, err := b.Compact(true)
	if err != nil || st.LogsCompacted == 0 {
		t.Fatalf("major compaction: %+v %v", st, err)
	}
	// BookKeeper's figures of the same steps: one GC and one compaction
	// timed, and the journal's bytes counted (every entry and master key).
	if n := b.m.gcLedgerRuntime.Outcome(true).Count(); n != 1 {
		t.Fatalf("bookie_gc_GC_LEDGER_RUNTIME counted %d garbage collections, want 1", n)
	}
	if n := b.m.compactRuntime.Outcome(true).Count(); n != 1 {
		t.Fatalf("bookie_gc_COMPACT_RUNTIME counted %d compactions, want 1", n)
	}
	var written dto.Metric
	if err := b.m.journalWriteBytes.Write(&written); err != nil {
		t.Fatal(err)
	}
	if got := written.GetCounter().GetValue(); got < float64(b.m.journalBatchBytes.Outcome(true).Sum()) || got == 0 {
		t.Fatalf("bookie_journal_JOURNAL_WRITE_BYTES %v, but the group commits held %d bytes", got,
			b.m.journalBatchBytes.Outcome(true).Sum())
	}
	progress := logs.with(t, "compacting entry logs")
	if len(progress) == 0 {
		t.Fatal("a compaction of several logs logged no progress")
	}
	last := progress[len(progress)-1]
	if last["logsToCompact"].(float64) < float64(st.LogsCompacted) || last["entriesMoved"].(float64) > float64(st.EntriesMoved) {
		t.Fatalf("last progress line %v does not fit the compaction's result %+v", last, st)
	}
	for _, msg := range []string{"garbage collected", "compacted entry logs"} {
		lines := logs.with(t, msg)
		if len(lines) != 1 {
			t.Fatalf("%d %q lines, want 1", len(lines), msg)
		}
		if _, ok := lines[0]["duration"]; !ok {
			t.Fatalf("%q has no duration: %v", msg, lines[0])
		}
	}

	// Adds since the last checkpoint are replayed from the journal at the
	// next start.
	addEntries(t, c, 10, 300, 1300)
	crashed := e.crash()
	_ = b.Close()
	crashed.start()
	replayed := logs.with(t, "replayed journal")
	if len(replayed) == 0 {
		t.Fatal("no replayed journal line")
	}
	done := replayed[len(replayed)-1]
	if _, ok := done["duration"]; !ok || done["entries"].(float64) < 1000 {
		t.Fatalf("last replay line %v: want a duration and the 1000 entries added since the checkpoint", done)
	}
	if len(logs.with(t, "replaying journal")) == 0 {
		t.Fatal("a replay of 1000 entries logged no progress")
	}
}
