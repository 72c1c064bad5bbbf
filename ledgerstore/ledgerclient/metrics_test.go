package ledgerclient

import (
	"errors"
	"testing"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestMetrics counts each operation once, as a success or a failure.
func TestMetrics(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx := testCtx(t)
	cfg := testConfig(cl, 5)
	cfg.Metrics = new(Metrics)
	c := newClient(t, cfg)
	w, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	for e := range int64(5) {
		if _, err := w.Append(ctx, payload(w.ID(), e)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, payload(w.ID(), 5)); !errors.Is(err, ledger.ErrLedgerClosed) {
		t.Fatalf("append after close: %v", err)
	}
	h, err := c.Open(ctx, w.ID(), testPassword)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Read(ctx, 0, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(ctx, w.ID(), []byte("wrong")); err == nil {
		t.Fatal("open with a wrong password succeeded")
	}
	if err := c.Delete(ctx, w.ID()); err != nil {
		t.Fatal(err)
	}
	m := cfg.Metrics
	for _, tt := range []struct {
		name       string
		ok, failed int64
		got        func(bool) int64
	}{
		{"ADD_ENTRY", 5, 1, func(ok bool) int64 { return m.AddEntry.Outcome(ok).Count() }},
		{"READ_ENTRY", 1, 0, func(ok bool) int64 { return m.ReadEntry.Outcome(ok).Count() }},
		{"LEDGER_CREATE", 1, 0, func(ok bool) int64 { return m.LedgerCreate.Outcome(ok).Count() }},
		{"bookie_watcher_NEW_ENSEMBLE_TIME", 1, 0, func(ok bool) int64 { return m.NewEnsembleTime.Outcome(ok).Count() }},
		{"LEDGER_OPEN", 1, 1, func(ok bool) int64 { return m.LedgerOpen.Outcome(ok).Count() }},
		{"LEDGER_DELETE", 1, 0, func(ok bool) int64 { return m.LedgerDelete.Outcome(ok).Count() }},
		// The ledger was closed: opening it needs no recovery.
		{"LEDGER_RECOVER", 0, 0, func(ok bool) int64 { return m.LedgerRecover.Outcome(ok).Count() }},
	} {
		if ok, failed := tt.got(true), tt.got(false); ok != tt.ok || failed != tt.failed {
			t.Errorf("%s: %d successes and %d failures, want %d and %d", tt.name, ok, failed, tt.ok, tt.failed)
		}
	}
	if len(m.OpStats()) != 9 || len(m.Values()) != 4 || len(m.Counters()) != 8 || len(m.Gauges()) != 2 ||
		len(m.CountersByBookie()) != 7 || len(m.LatenciesByBookie()) != 9 {
		t.Errorf("exported names: %d op stats, %d values, %d counters, %d gauges, %d and %d by bookie",
			len(m.OpStats()), len(m.Values()), len(m.Counters()), len(m.Gauges()), len(m.CountersByBookie()),
			len(m.LatenciesByBookie()))
	}
}

// TestPendingAddsGauge: NUM_PENDING_ADD counts the appends called and not
// completed. Callbacks run one at a time in entry order, so while the
// first one is held, once every append has been called, the others stay
// pending, acknowledged or not.
func TestPendingAddsGauge(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx := testCtx(t)
	cfg := testConfig(cl, 5)
	cfg.Metrics = new(Metrics)
	c := newClient(t, cfg)
	w, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	release, done := make(chan struct{}), make(chan error, n)
	pendingInFirst := make(chan int64, 1)
	for e := range int64(n) {
		w.AppendAsync(payload(w.ID(), e), func(_ int64, err error) {
			if e == 0 {
				<-release // every append has been called
				pendingInFirst <- cfg.Metrics.PendingAdds.Load()
			}
			done <- err
		})
	}
	close(release)
	if got := <-pendingInFirst; got != n-1 {
		t.Errorf("pending adds while the first completes: %d, want %d", got, n-1)
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := cfg.Metrics.PendingAdds.Load(); got != 0 {
		t.Errorf("pending adds after all completed: %d", got)
	}
	if got := cfg.Metrics.Gauges()[ClientScope+"_NUM_PENDING_ADD"]; got != &cfg.Metrics.PendingAdds {
		t.Error("NUM_PENDING_ADD does not export PendingAdds")
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
