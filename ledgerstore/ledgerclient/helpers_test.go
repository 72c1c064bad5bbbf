package ledgerclient

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// testPassword is every test ledger's password.
var testPassword = []byte("secret")

// testConfig is a client configuration for cl with short ticks, so that
// speculative reads and retries happen within a test's patience. No test
// here waits for an add or read to time out (a stopped bookie ends its
// connections, a hung one is read around speculatively), so the timeouts
// are long enough that a loaded machine never meets them: an add that
// times out replaces a live bookie, and with no spare left the ledger
// stops taking adds.
func testConfig(cl *ledgertest.Cluster, seed uint64) Config {
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("LEDGERCLIENT_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return Config{
		ZKServers:              []string{cl.ZKAddr()},
		Logger:                 logger,
		Tick:                   10 * time.Millisecond,
		AddTimeout:             testhost.Scale(30 * time.Second),
		ReadTimeout:            testhost.Scale(30 * time.Second),
		SpeculativeReadTimeout: 200 * time.Millisecond,
		RetryInterval:          50 * time.Millisecond,
		LongPollTimeout:        2 * time.Second,
		Seed:                   seed,
	}
}

// newClient connects a client and closes it when the test ends.
func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// testCtx is a test's overall deadline.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(90*time.Second))
	t.Cleanup(cancel)
	return ctx
}

// payload is entry entryID of ledger id's payload: deterministic, so that
// reads can be checked byte for byte, and of varying size (1 to 300 bytes).
func payload(id, entryID int64) []byte {
	s := fmt.Sprintf("ledger %d entry %d|", id, entryID)
	n := 1 + int((entryID*7919)%300)
	p := make([]byte, n)
	for i := range p {
		p[i] = s[i%len(s)]
	}
	return p
}

// acks records the outcomes of AppendAsync calls and checks that
// successful completions arrive in entry order.
type acks struct {
	mu      sync.Mutex
	acked   []int64 // in callback order
	failed  []error
	outOfOr []string
	done    chan struct{}
	want    int
}

func newAcks(want int) *acks { return &acks{done: make(chan struct{}), want: want} }

func (a *acks) callback(entryID int64, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.failed = append(a.failed, err)
	} else {
		if n := len(a.acked); n > 0 && a.acked[n-1] != entryID-1 {
			a.outOfOr = append(a.outOfOr, fmt.Sprintf("%d after %d", entryID, a.acked[n-1]))
		}
		a.acked = append(a.acked, entryID)
	}
	if len(a.acked)+len(a.failed) == a.want {
		close(a.done)
	}
}

func (a *acks) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acked)
}

// last returns the highest acknowledged entry, -1 if none.
func (a *acks) last() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.acked) == 0 {
		return -1
	}
	return a.acked[len(a.acked)-1]
}

// wait waits for every outcome and checks the order.
func (a *acks) wait(t *testing.T) {
	t.Helper()
	select {
	case <-a.done:
	case <-time.After(testhost.Scale(60 * time.Second)):
		t.Fatalf("only %d of %d adds completed", a.count(), a.want)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.outOfOr) > 0 {
		t.Fatalf("completions out of order: %v", a.outOfOr)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testhost.Scale(20 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkEntries checks that entries are first..first+len-1 of ledger id
// with the right payloads and cumulative lengths.
func checkEntries(t *testing.T, id, first int64, entries []Entry) {
	t.Helper()
	var length int64
	for e := int64(0); e < first; e++ {
		length += int64(len(payload(id, e)))
	}
	for i, e := range entries {
		want := first + int64(i)
		length += int64(len(payload(id, want)))
		if e.EntryID != want || !bytes.Equal(e.Payload, payload(id, want)) || e.Length != length {
			t.Fatalf("entry %d: got id %d length %d payload %q, want length %d payload %q",
				want, e.EntryID, e.Length, e.Payload, length, payload(id, want))
		}
	}
}

// totalLength is the cumulative length of entries 0..last.
func totalLength(id, last int64) int64 {
	var n int64
	for e := int64(0); e <= last; e++ {
		n += int64(len(payload(id, e)))
	}
	return n
}

// readAll reads entries 0..last through h and checks them.
func readAll(t *testing.T, ctx context.Context, h *ReadHandle, last int64) {
	t.Helper()
	if last < 0 {
		return
	}
	entries, err := h.Read(ctx, 0, last)
	if err != nil {
		t.Fatalf("read 0..%d: %v", last, err)
	}
	if int64(len(entries)) != last+1 {
		t.Fatalf("read %d entries, want %d", len(entries), last+1)
	}
	checkEntries(t, h.ID(), 0, entries)
}

// segments describes metadata's segments, for messages.
func segments(md ledger.Metadata) string {
	var b bytes.Buffer
	for _, s := range md.Segments {
		fmt.Fprintf(&b, "%d:%v ", s.FirstEntryID, s.Bookies)
	}
	return b.String()
}
