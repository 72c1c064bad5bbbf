package ledgerproc

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
)

// TestBookieKillUnderLoad writes killEntries entries with E=3, Qw=3,
// Qa=2, pipelined through AppendAsync, to four `keeper bookie` processes,
// and kills one bookie of the ensemble with SIGKILL once 30% are
// acknowledged. The writer must replace it with the fourth bookie (a
// second segment, starting after the kill point, stored before anything
// more completes) and go on: every add is acknowledged, every entry reads
// back byte for byte from a fresh client after the close, and a tailing
// reader opened before the first write sees every entry exactly once, in
// order, and ends at the close.
func TestBookieKillUnderLoad(t *testing.T) {
	cl := startCluster(t, 4)
	ctx := testContext(t, 3*time.Minute)
	w, err := cl.client(t).Create(ctx, ledgerclient.CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2,
		Password: password})
	if err != nil {
		t.Fatal(err)
	}
	first := w.Metadata().Segments[0].Bookies
	tail := startTail(t, ctx, cl.client(t), w.ID())

	var adds addLog
	kill := make(chan struct{})
	killAfter := int64(killEntries * 3 / 10)
	start := time.Now()
	go adds.write(w, killEntries, func(acked int64) {
		if acked == killAfter {
			close(kill)
		}
	})
	select {
	case <-kill:
	case <-ctx.Done():
		t.Fatalf("only %d adds acknowledged before the deadline", adds.acked.Load())
	}
	killedAt := w.LAC()
	victim := cl.bookie(t, string(first[0]))
	victim.kill()
	t.Logf("killed bookie %s at LAC %d after %v", victim.id, killedAt, time.Since(start).Round(time.Millisecond))
	adds.wait(t, ctx)
	if err := w.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	t.Logf("%d adds in %v", killEntries, time.Since(start).Round(time.Millisecond))
	md := w.Metadata()
	checkEnsembleChange(t, md, first, victim.id, killedAt)

	tr := tail.wait(t, ctx)
	h, err := cl.client(t).Open(ctx, w.ID(), password)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	if h.Metadata().LastEntryID != killEntries-1 {
		t.Errorf("closed at entry %d, want %d", h.Metadata().LastEntryID, killEntries-1)
	}
	lost := readBack(t, ctx, h, adds.acked.Load()-1)
	t.Logf("ledgerproc: entries=%d acked=%d lost=%d ensembles=%d tail=%d killed_at=%d",
		killEntries, adds.acked.Load(), lost, len(md.Segments), tr.entries, killedAt)
	if adds.failed.Load() > 0 || adds.acked.Load() != killEntries {
		t.Errorf("%d adds acknowledged, %d failed (first: %v); want all %d acknowledged",
			adds.acked.Load(), adds.failed.Load(), adds.firstError(), killEntries)
	}
	if tr.err != nil || tr.bad != "" || tr.entries != killEntries {
		t.Errorf("tail saw %d entries (want %d), error %v, %s", tr.entries, killEntries, tr.err, tr.bad)
	}
}

// checkEnsembleChange checks the closed ledger's segments: the first is
// the original ensemble, the second starts after the kill point and has
// the killed bookie replaced by the one that was not in the ensemble, the
// other positions unchanged.
func checkEnsembleChange(t *testing.T, md ledger.Metadata, first []ledger.BookieID, victim string, killedAt int64) {
	t.Helper()
	if md.State != ledger.StateClosed {
		t.Fatalf("ledger state %v after Close", md.State)
	}
	t.Logf("segments: %v", md.Segments)
	if len(md.Segments) < 2 {
		t.Fatalf("segments %v: no ensemble change after the kill", md.Segments)
	}
	if !slices.Equal(md.Segments[0].Bookies, first) {
		t.Errorf("first segment %v, created with %v", md.Segments[0].Bookies, first)
	}
	second := md.Segments[1]
	if second.FirstEntryID <= killedAt {
		t.Errorf("second segment starts at %d, not after the kill point %d", second.FirstEntryID, killedAt)
	}
	for i, b := range second.Bookies {
		switch {
		case string(first[i]) == victim && (string(b) == victim || slices.Contains(first, b)):
			t.Errorf("second segment %v: position %d still holds %s or another member", second.Bookies, i, b)
		case string(first[i]) != victim && b != first[i]:
			t.Errorf("second segment %v: position %d changed from %s, which was not killed", second.Bookies, i, first[i])
		}
	}
}

// addLog counts a Go writer's outcomes.
type addLog struct {
	wg     sync.WaitGroup
	acked  atomic.Int64
	failed atomic.Int64
	mu     sync.Mutex // guards first
	first  error      // the first failure
}

// write appends entries 0..n-1 with their payloads, pipelined, and calls
// onAck with the number acknowledged after each acknowledgement.
// Callbacks run in entry order, so entry i must come back as id i.
func (a *addLog) write(w *ledgerclient.Writer, n int64, onAck func(acked int64)) {
	a.wg.Add(int(n))
	for i := range n {
		w.AppendAsync(payload(i), func(id int64, err error) {
			defer a.wg.Done()
			if err == nil && id != i {
				err = fmt.Errorf("entry %d acknowledged as id %d", i, id)
			}
			if err != nil {
				a.failed.Add(1)
				a.mu.Lock()
				a.first = cmp.Or(a.first, err)
				a.mu.Unlock()
				return
			}
			onAck(a.acked.Add(1))
		})
	}
}

func (a *addLog) firstError() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.first
}

// wait waits until every add has its outcome.
func (a *addLog) wait(t *testing.T, ctx context.Context) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("adds still pending at the deadline: %d acknowledged, %d failed", a.acked.Load(), a.failed.Load())
	}
}

// tailer is a tailing reader running on its own goroutine.
type tailer struct{ done chan tailResult }

// tailResult is what a tailing reader saw.
type tailResult struct {
	entries int64  // entries delivered
	bad     string // the first entry out of order or with a wrong payload
	err     error  // the error the tail ended with
}

// startTail opens the ledger without recovery and follows it from entry
// 0 until it is closed.
func startTail(t *testing.T, ctx context.Context, c *ledgerclient.Client, id int64) *tailer {
	t.Helper()
	h, err := c.OpenNoRecovery(ctx, id, password)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tailer{done: make(chan tailResult, 1)}
	go func() {
		var r tailResult
		for e, err := range h.Tail(ctx, 0) {
			if err != nil {
				r.err = err
				break
			}
			if r.bad == "" && (e.EntryID != r.entries || !bytes.Equal(e.Payload, payload(r.entries))) {
				r.bad = fmt.Sprintf("delivery %d was entry %d with payload %q", r.entries, e.EntryID, e.Payload)
			}
			r.entries++
		}
		tl.done <- r
	}()
	return tl
}

// wait waits for the tail to end (the ledger is closed).
func (tl *tailer) wait(t *testing.T, ctx context.Context) tailResult {
	t.Helper()
	select {
	case r := <-tl.done:
		return r
	case <-ctx.Done():
		t.Fatal("the tailing reader did not end after the close")
		return tailResult{}
	}
}
