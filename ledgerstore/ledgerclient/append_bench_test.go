package ledgerclient

import (
	"context"
	"sync"
	"testing"
	"time"

	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// BenchmarkAppend measures a client's append path with its metrics on:
// 100-byte entries to an E3/Qw2/Qa2 ledger, at most 256 in flight. Its
// allocs/op is the client's allocations per add, the bookies' in the same
// process included (docs/observability.md says what the metrics add). Run
// it with
//
//	go test -run '^$' -bench BenchmarkAppend -benchtime 20000x ./ledgerstore/ledgerclient
func BenchmarkAppend(b *testing.B) {
	cl := ledgertest.Start(b, 3)
	cfg := testConfig(cl, 1)
	cfg.Metrics = new(Metrics)
	c, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 100)
	slots := make(chan struct{}, 256)
	var wg sync.WaitGroup
	var failed sync.Once
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		slots <- struct{}{}
		wg.Add(1)
		w.AppendAsync(data, func(_ int64, err error) {
			if err != nil {
				failed.Do(func() { b.Error(err) })
			}
			<-slots
			wg.Done()
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
}
