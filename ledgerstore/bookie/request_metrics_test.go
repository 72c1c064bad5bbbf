package bookie

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"keeper/internal/testhost"
)

// checkMoved reports each key of want (figure's keys) that did not move
// by want's amount between two scrapes.
func checkMoved(t *testing.T, before, after map[string]*dto.MetricFamily, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		if got := figure(t, after, k) - figure(t, before, k); got != w {
			t.Errorf("%s moved by %v, want %v", k, got, w)
		}
	}
}

// awaitFigure scrapes until key reads want.
func awaitFigure(t *testing.T, b *Bookie, key string, want float64) {
	t.Helper()
	deadline := time.Now().Add(testhost.Scale(30 * time.Second))
	poll := time.NewTicker(2 * time.Millisecond)
	defer poll.Stop()
	for {
		got := figure(t, scrape(t, b), key)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %v", key, got, want)
		}
		<-poll.C
	}
}

// TestRequestMetrics drives each request figure of BookKeeper's
// RequestStats and BookieStats that keeper measures and checks that it
// moved by what the step did (docs/observability.md, "BookKeeper"): a
// long poll parks and holds the connection's one read slot, a read behind
// it blocks, an add on another connection wakes both; then a fencing
// read, a piggybacked long poll of an entry this bookie lacks, a force
// and a bookie-info request.
func TestRequestMetrics(t *testing.T) {
	e := newEnv(t, false)
	e.tweak = func(c *Config) {
		c.MetricsAddr = "127.0.0.1:0"
		c.MaxPendingReadsPerConn = 1
	}
	b := e.start()
	c, other := dial(t, b), dial(t, b)
	addEntries(t, other, 1, 0, 3) // the bookie knows LAC 1
	static := scrape(t, b)
	for k, want := range map[string]float64{"bookie_JOURNAL_DIRS": 1, "bookie_ledger_num_dirs": 2,
		"bookie_JOURNAL_QUEUE_MAX_SIZE": journalQueueLen} {
		if got := figure(t, static, k); got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	if flushes := figure(t, static, "bookie_journal_JOURNAL_NUM_FLUSH_EMPTY_QUEUE") +
		figure(t, static, "bookie_journal_JOURNAL_NUM_FLUSH_MAX_WAIT") +
		figure(t, static, "bookie_journal_JOURNAL_NUM_FLUSH_MAX_OUTSTANDING_BYTES"); flushes < 1 ||
		flushes > figure(t, static, "bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES:true") {
		t.Errorf("journal flushes counted by cause: %v, want 1 to the batches committed", flushes)
	}

	before := scrape(t, b)
	polled := make(chan error, 1)
	go func() {
		_, err := c.LongPoll(ctx(t), 1, 5, testhost.Scale(time.Minute), false)
		polled <- err
	}()
	awaitFigure(t, b, "bookkeeper_server_READ_ENTRY_LONG_POLL_PRE_WAIT:true", 1)
	awaitFigure(t, b, "bookkeeper_server_READ_ENTRY_IN_PROGRESS", 1)
	read := make(chan error, 1)
	go func() {
		_, err := c.Read(ctx(t), 1, 0)
		read <- err
	}()
	awaitFigure(t, b, "bookkeeper_server_READ_ENTRY_BLOCKED", 1)
	addEntries(t, other, 1, 3, 8) // LAC 6 passes the poll's 5
	for _, ch := range []chan error{polled, read} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	awaitFigure(t, b, "bookkeeper_server_READ_ENTRY_BLOCKED", 0)
	awaitFigure(t, b, "bookkeeper_server_READ_ENTRY_IN_PROGRESS", 0)
	awaitFigure(t, b, "bookkeeper_server_ADD_ENTRY_IN_PROGRESS", 0)
	checkMoved(t, before, scrape(t, b), map[string]float64{
		"bookkeeper_server_READ_ENTRY_LONG_POLL_REQUEST:true":  1,
		"bookkeeper_server_READ_ENTRY_LONG_POLL_PRE_WAIT:true": 1,
		"bookkeeper_server_READ_ENTRY_LONG_POLL_WAIT:true":     1,
		"bookkeeper_server_READ_ENTRY_LONG_POLL_READ:true":     1,
		"bookkeeper_server_READ_ENTRY_BLOCKED_WAIT:true":       1,
		"bookkeeper_server_READ_ENTRY_BLOCKED_WAIT:false":      0,
		"bookkeeper_server_ADD_ENTRY_BLOCKED_WAIT:true":        0,
		"bookkeeper_server_READ_ENTRY_REQUEST:true":            2,
		"bookkeeper_server_READ_ENTRY_FENCE_REQUEST:true":      0,
		"bookkeeper_server_ADD_ENTRY_REQUEST:true":             5,
		"bookkeeper_server_ADD_ENTRY_REJECTED":                 0,
	})

	before = scrape(t, b)
	if _, err := c.FenceRead(ctx(t), 1, 0, testKey); err != nil {
		t.Fatal(err)
	}
	// Ledger 2 holds entry 5 only, whose LAC is 4: a piggybacked poll
	// past LAC 2 finds the LAC moved but not entry 3.
	addEntries(t, other, 2, 5, 6)
	if _, err := c.LongPoll(ctx(t), 2, 2, testhost.Scale(time.Minute), true); err != nil {
		t.Fatal(err)
	}
	if err := c.ForceLedger(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.BookieInfo(ctx(t)); err != nil {
		t.Fatal(err)
	}
	awaitFigure(t, b, "bookkeeper_server_GET_BOOKIE_INFO_REQUEST:true", figure(t, before,
		"bookkeeper_server_GET_BOOKIE_INFO_REQUEST:true")+1)
	after := scrape(t, b)
	checkMoved(t, before, after, map[string]float64{
		"bookkeeper_server_READ_ENTRY_FENCE_REQUEST:true":      1,
		"bookkeeper_server_READ_ENTRY_LONG_POLL_REQUEST:true":  1,
		"bookkeeper_server_READ_ENTRY_LONG_POLL_PRE_WAIT:true": 0, // answered at once
		"bookkeeper_server_READ_LAST_ENTRY_NOENTRY_ERROR":      1,
		"bookie_BOOKIE_FORCE_LEDGER":                           1,
		"bookie_journal_JOURNAL_FORCE_LEDGER:true":             1,
		"bookkeeper_server_FORCE_LEDGER_REQUEST:true":          1,
	})
	if got := figure(t, after, "bookkeeper_server_CHANNEL_WRITE:true") - figure(t, before,
		"bookkeeper_server_CHANNEL_WRITE:true"); got < 1 {
		t.Errorf("CHANNEL_WRITE moved by %v, want at least one write", got)
	}
	if got := figure(t, after, "bookie_journal_JOURNAL_QUEUE_SIZE"); got != 0 {
		t.Errorf("JOURNAL_QUEUE_SIZE = %v with nothing queued", got)
	}
}

// TestGCPassMetrics: a pass of the gc goroutine is timed as
// THREAD_RUNTIME, and the entry log gauges read the store after it.
func TestGCPassMetrics(t *testing.T) {
	e := newEnv(t, false)
	e.tweak = func(c *Config) { c.MetricsAddr = "127.0.0.1:0" }
	b := e.start()
	addEntries(t, dial(t, b), 1, 0, 10)
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	before := scrape(t, b)
	if err := b.gcPass(func() error { _, err := b.Compact(false); return err }); err != nil {
		t.Fatal(err)
	}
	if err := b.gcPass(func() error { _, err := b.GC(); return err }); err != errNoMetadata {
		t.Fatalf("GC without metadata: %v", err)
	}
	after := scrape(t, b)
	checkMoved(t, before, after, map[string]float64{"bookie_gc_THREAD_RUNTIME:true": 1,
		"bookie_gc_THREAD_RUNTIME:false": 1})
	var total, live int64
	for _, u := range b.store.LogUsage() {
		total, live = total+u.TotalBytes, live+u.LiveBytes
	}
	if total == 0 || live != total {
		t.Fatalf("store: %d bytes in entry logs, %d live; want the ten entries, all live", total, live)
	}
	if got := figure(t, after, "bookie_gc_ENTRY_LOG_SPACE_BYTES"); got != float64(total) {
		t.Errorf("ENTRY_LOG_SPACE_BYTES = %v, want %d", got, total)
	}
	if got := figure(t, after, "bookie_gc_ACTIVE_ENTRY_LOG_SPACE_BYTES"); got != float64(live) {
		t.Errorf("ACTIVE_ENTRY_LOG_SPACE_BYTES = %v, want %d", got, live)
	}
}
