package ledgerclient

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// BenchmarkTailLatency measures tailing latency in one process: a writer
// adds 1 KiB entries to an E3/Qw2/Qa2 ledger at a steady 1,000 adds/s
// (at most 64 in flight) for b.N × 1 ms, while two readers Tail it; the
// figure is from an add's acknowledgement to each reader receiving it, as
// `keeper bench ledger --op tail` measures it. Run it with
//
//	go test -run '^$' -bench BenchmarkTailLatency -benchtime 3000x ./ledgerstore/ledgerclient
func BenchmarkTailLatency(b *testing.B) {
	if b.N < 100 {
		return // too few adds to measure (the probing run with b.N = 1); run with -benchtime 3000x
	}
	cl := ledgertest.Start(b, 3)
	cfg := testConfig(cl, 1)
	cfg.Tick = 100 * time.Millisecond // the default tick: no test-only speed-up
	cfg.SpeculativeReadTimeout = 2 * time.Second
	wc, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer wc.Close()
	rc, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w, err := wc.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		b.Fatal(err)
	}
	id := w.ID()
	const readers = 2
	n := b.N
	acked := make([]time.Time, n)
	received := make([][]time.Time, readers)
	var wg sync.WaitGroup
	var mu sync.Mutex // guards acked and received
	for r := range readers {
		received[r] = make([]time.Time, n)
		h, err := rc.OpenNoRecovery(ctx, id, testPassword)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			for e, err := range h.Tail(ctx, 0) {
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				if e.EntryID < int64(n) {
					received[r][e.EntryID] = time.Now()
				}
				mu.Unlock()
			}
		})
	}
	data := make([]byte, 1024)
	slots := make(chan struct{}, 64)
	b.ResetTimer()
	start := time.Now()
	for i := range n {
		// Pace the adds: entry i is due at start + i ms.
		if d := time.Until(start.Add(time.Duration(i) * time.Millisecond)); d > 0 {
			time.Sleep(d)
		}
		slots <- struct{}{}
		w.AppendAsync(data, func(e int64, err error) {
			<-slots
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			acked[e] = time.Now()
			mu.Unlock()
		})
	}
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	wg.Wait()
	b.StopTimer()
	var lat []time.Duration
	for e := range n - 1 { // the last entry is learned from the close
		for r := range readers {
			if !acked[e].IsZero() && !received[r][e].IsZero() {
				lat = append(lat, max(0, received[r][e].Sub(acked[e])))
			}
		}
	}
	if len(lat) == 0 {
		b.Fatal("nothing both acknowledged and received")
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "adds/s")
}
