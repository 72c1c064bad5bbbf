package ledgerclient

import (
	"net"
	"testing"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestLACMetrics reads an open ledger's LAC twice and tails it: each
// ReadLAC counts in READ_LAC, a LAC that moves the handle's forward is a
// LAC update hit and one that does not a miss, and the tail's long polls
// count in READ_LAST_CONFIRMED_AND_ENTRY.
func TestLACMetrics(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx := testCtx(t)
	w, err := newClient(t, testConfig(cl, 21)).Create(ctx,
		CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	for e := range int64(4) {
		if _, err := w.Append(ctx, payload(w.ID(), e)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(cl, 22)
	cfg.Metrics = new(Metrics)
	m := cfg.Metrics
	h, err := newClient(t, cfg).OpenNoRecovery(ctx, w.ID(), testPassword)
	if err != nil {
		t.Fatal(err)
	}
	type counts struct{ readLAC, hits, misses int64 }
	now := func() counts {
		return counts{m.ReadLAC.Outcome(true).Count(), m.LACUpdateHits.Load(), m.LACUpdateMisses.Load()}
	}
	for _, tt := range []struct {
		name    string
		wantLAC int64
		want    counts
	}{
		// The bookies know entry 2 is confirmed (entry 3 carries LAC 2).
		{"first ReadLAC", 2, counts{readLAC: 1, hits: 1}},
		{"ReadLAC again", 2, counts{readLAC: 2, hits: 1, misses: 1}},
	} {
		lac, err := h.ReadLAC(ctx)
		if err != nil || lac != tt.wantLAC {
			t.Fatalf("%s: LAC %d, %v; want %d", tt.name, lac, err, tt.wantLAC)
		}
		if got := now(); got != tt.want {
			t.Errorf("%s: READ_LAC, hits, misses = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if m.ReadLACAndEntry.Outcome(true).Count() != 0 {
		t.Fatal("long polls counted before any tail")
	}
	// Tail from entry 3 on: it is confirmed only once entry 4 is added,
	// which the tail learns from a long poll.
	appended := make(chan error, 1)
	go func() {
		_, err := w.Append(ctx, payload(w.ID(), 4))
		appended <- err
	}()
	for e, err := range h.Tail(ctx, 3) {
		if err != nil {
			t.Fatal(err)
		}
		if e.EntryID != 3 {
			t.Fatalf("tail yielded entry %d first", e.EntryID)
		}
		break
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if m.ReadLACAndEntry.Outcome(true).Count() == 0 {
		t.Fatal("no long poll counted")
	}
	if got := m.LACUpdateHits.Load(); got != 2 {
		t.Errorf("LAC update hits after the tail: %d, want 2", got)
	}
}

// TestSpeculativeReadMetric reads a closed ledger while one bookie of its
// ensemble takes requests and never answers: every entry whose first
// replica is that bookie is read again from the other after
// SpeculativeReadTimeout, and counted in SPECULATIVE_READ_COUNT.
func TestSpeculativeReadMetric(t *testing.T) {
	cl := ledgertest.Start(t, 2)
	ctx := testCtx(t)
	w, err := newClient(t, testConfig(cl, 31)).Create(ctx,
		CreateOptions{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	const entries = 6
	for e := range int64(entries) {
		if _, err := w.Append(ctx, payload(w.ID(), e)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Bookie 0 stops, and a listener that never answers takes its
	// address (its id, which the client falls back to once the bookie's
	// registration is gone).
	mute := cl.Bookies[0]
	addr := mute.Addr().String()
	cl.Stop(0)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan []net.Conn, 1)
	go func() {
		var conns []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				accepted <- conns
				return
			}
			conns = append(conns, c) // held open, never read from
		}
	}()
	defer func() {
		ln.Close()
		for _, c := range <-accepted {
			c.Close()
		}
	}()
	cfg := testConfig(cl, 32)
	cfg.Metrics = new(Metrics)
	h, err := newClient(t, cfg).OpenNoRecovery(ctx, w.ID(), testPassword)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.Read(ctx, 0, entries-1)
	if err != nil || len(got) != entries {
		t.Fatalf("read: %d entries, %v", len(got), err)
	}
	var want int64
	md := h.Metadata()
	for e := range int64(entries) {
		if md.WriteSetBookies(e)[0] == ledger.BookieID(mute.ID()) {
			want++
		}
	}
	if want == 0 {
		t.Fatal("no entry reads the mute bookie first")
	}
	if n := cfg.Metrics.SpeculativeReads.Load(); n != want {
		t.Errorf("SPECULATIVE_READ_COUNT = %d, want %d (the entries whose first replica never answers)", n, want)
	}
}
