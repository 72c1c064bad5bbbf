package bookie

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"keeper/ledgerstore/bookierpc"
)

// ackLog records which adds a bookie acknowledged, per ledger.
type ackLog struct {
	mu    sync.Mutex
	acked map[int64][]int64
	n     atomic.Int64
}

func (a *ackLog) add(ledgerID, entryID int64) {
	a.mu.Lock()
	a.acked[ledgerID] = append(a.acked[ledgerID], entryID)
	a.mu.Unlock()
	a.n.Add(1)
}

// snapshot copies what was acknowledged so far.
func (a *ackLog) snapshot() map[int64][]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[int64][]int64, len(a.acked))
	for l, es := range a.acked {
		out[l] = append([]int64(nil), es...)
	}
	return out
}

// pipelineAdds keeps window adds outstanding on ledgerID over c until stop
// is closed, recording each acknowledged one. Failures (the bookie closing
// under it) end the loop.
func pipelineAdds(c *bookierpc.Client, ledgerID int64, window int, acks *ackLog, stop <-chan struct{}) {
	type call struct {
		entry int64
		ch    <-chan bookierpc.Result
	}
	var inflight []call
	next := int64(0)
	for {
		select {
		case <-stop:
			return
		default:
		}
		for len(inflight) < window {
			inflight = append(inflight, call{next, c.Go(bookierpc.AddRequest(ledgerID, next, testKey,
				body(ledgerID, next, 100), false))})
			next++
		}
		res := <-inflight[0].ch
		if bookierpc.StatusErr(res.Resp, res.Err) != nil {
			return
		}
		acks.add(ledgerID, inflight[0].entry)
		inflight = inflight[1:]
	}
}

// TestCrashUnderLoadKeepsAcknowledgedAdds crashes a bookie while adds are
// in flight on several connections and journals, at a moment chosen by
// how many were acknowledged: every add acknowledged before the crash
// must come back after the restart, whatever the group-commit rule (an
// add is answered only after the fsync of its batch, and the records that
// arrive during that fsync are not answered with it).
func TestCrashUnderLoadKeepsAcknowledgedAdds(t *testing.T) {
	rules := []struct {
		name  string
		tweak func(*Config)
	}{
		{"natural group commit", func(c *Config) {}},
		{"journalFlushWhenQueueEmpty=false", func(c *Config) {
			c.JournalWaitWhenQueueEmpty = true
			c.JournalMaxGroupWait = time.Millisecond
		}},
		{"journalBufferedEntriesThreshold=3", func(c *Config) { c.JournalBufferedEntriesThreshold = 3 }},
	}
	for _, rule := range rules {
		for _, after := range []int64{50, 400} {
			t.Run(fmt.Sprintf("%s/after %d acks", rule.name, after), func(t *testing.T) {
				e := newEnv(t, false)
				e.tweak = func(c *Config) {
					c.JournalDirs = []string{"/journal", "/journal2"}
					// Small steps of preallocation: the crash copies whole
					// files, and the test is about the order of sync and
					// answer, not about preallocation.
					c.JournalPreAllocSizeBytes = 64 << 10
					rule.tweak(c)
				}
				crashUnderLoad(t, e, after)
			})
		}
	}
}

func crashUnderLoad(t *testing.T, e *env, after int64) {
	b := e.start()
	acks := &ackLog{acked: map[int64][]int64{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for l := int64(1); l <= 4; l++ {
		c := dial(t, b)
		wg.Go(func() { pipelineAdds(c, l, 16, acks, stop) })
	}
	eventually(t, "acknowledged adds", func() bool { return acks.n.Load() >= after })
	// Everything in survive was acknowledged before the crash is taken.
	survive := acks.snapshot()
	crashed := e.crash()
	close(stop)
	_ = b.Close()
	wg.Wait()

	c := dial(t, crashed.start())
	n := 0
	for l, entries := range survive {
		for _, entry := range entries {
			checkEntry(t, c, l, entry)
			n++
		}
	}
	if int64(n) < after {
		t.Fatalf("checked %d adds, want at least %d", n, after)
	}
}
