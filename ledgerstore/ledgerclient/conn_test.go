package ledgerclient

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// blackHole accepts connections and never answers: a hung bookie.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, nc) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range conns {
			nc.Close()
		}
	})
	return ln.Addr().String()
}

// TestSpeculativeRead replaces a bookie of a closed ledger's ensemble with
// one that never answers: every entry whose first replica it is still
// reads back, from the second replica after SpeculativeReadTimeout, long
// before the read timeout.
func TestSpeculativeRead(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx := testCtx(t)
	cfg := testConfig(cl, 13)
	cfg.ReadTimeout = testhost.Scale(20 * time.Second)
	cfg.SpeculativeReadTimeout = 100 * time.Millisecond
	c := newClient(t, cfg)
	w, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	const total = 60
	for e := range int64(total) {
		if _, err := w.Append(ctx, payload(id, e)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Position 0 now names the hung bookie: it is the first replica of
	// every entry e with e mod 3 = 0.
	smd, v, err := c.store.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	smd.Segments[0].Bookies[0] = ledger.BookieID(blackHole(t))
	if _, err := c.store.Write(ctx, id, smd, v); err != nil {
		t.Fatal(err)
	}
	h, err := c.OpenNoRecovery(ctx, id, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	readAll(t, ctx, h, total-1)
	elapsed := time.Since(start)
	t.Logf("read %d entries, a third of them first asked of a hung bookie, in %v (speculative timeout %v)",
		total, elapsed.Round(time.Millisecond), cfg.SpeculativeReadTimeout)
	// Twenty entries asked of the hung bookie first: a read that waited for
	// the read timeout even once took longer than it.
	if elapsed >= cfg.ReadTimeout {
		t.Fatalf("read took %v: it waited for the read timeout %v instead of reading speculatively", elapsed, cfg.ReadTimeout)
	}
}

// TestReconnect restarts a bookie: the client's connection to it ends,
// the next request dials it again, and reads from it succeed.
func TestReconnect(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx := testCtx(t)
	c := newClient(t, testConfig(cl, 14))
	w, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 3, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	for e := range int64(10) {
		if _, err := w.Append(ctx, payload(id, e)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b := ledger.BookieID(cl.Bookies[0].ID())
	old, err := c.pool.conn(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	cl.Restart(0)
	waitFor(t, "the old connection to end", func() bool { return old.Err() != nil })
	h, err := c.Open(ctx, id, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, ctx, h, 9) // with Qw = E, every bookie is some entry's first replica
	now, err := c.pool.conn(ctx, b)
	if err != nil || now == old || now.Err() != nil {
		t.Fatalf("connection after the restart: %p (old %p), %v", now, old, err)
	}
	// A writer on the restarted bookie works too.
	w2, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Append(ctx, []byte("after restart")); err != nil {
		t.Fatal(err)
	}
	if md := w2.Metadata(); len(md.Segments) != 1 {
		t.Fatalf("a fresh ledger on restarted bookies changed its ensemble: %s", segments(md))
	}
	if err := w2.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTailAroundHungBookie tails an open ledger whose stored ensemble
// names, at position 0, a bookie that never answers (the writer, with its
// own copy of the metadata, writes to the live bookies). The long polls
// to the two live bookies move the LAC, so the reader follows the writer
// without waiting for the hung bookie's poll to time out, and reads the
// entries whose first replica is the hung bookie from their second one.
func TestTailAroundHungBookie(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx := testCtx(t)
	wc := newClient(t, testConfig(cl, 15))
	w, err := wc.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	smd, v, err := wc.store.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	smd.Segments[0].Bookies[0] = ledger.BookieID(blackHole(t))
	if _, err := wc.store.Write(ctx, id, smd, v); err != nil {
		t.Fatal(err)
	}
	rcfg := testConfig(cl, 16)
	rcfg.ReadTimeout = testhost.Scale(20 * time.Second)
	rcfg.LongPollTimeout = testhost.Scale(20 * time.Second)
	rcfg.SpeculativeReadTimeout = 100 * time.Millisecond
	h, err := newClient(t, rcfg).OpenNoRecovery(ctx, id, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	const total = 60
	// The writer reports on a channel: the tail stops before the last add
	// returns, and a failed test returns while the writer still appends.
	writing := make(chan error, 1)
	go func() {
		for e := range int64(total) {
			if _, err := w.Append(ctx, payload(id, e)); err != nil {
				writing <- fmt.Errorf("append %d: %w", e, err)
				return
			}
		}
		writing <- nil
	}()
	start := time.Now()
	var got []Entry
	for e, err := range h.Tail(ctx, 0) {
		if err != nil {
			t.Fatalf("tail after %d entries: %v", len(got), err)
		}
		got = append(got, e)
		if e.EntryID == total-2 { // the last entry's LAC reaches the bookies only with a later add
			break
		}
	}
	elapsed := time.Since(start)
	if err := <-writing; err != nil {
		t.Fatal(err)
	}
	checkEntries(t, id, 0, got)
	t.Logf("tailed %d entries around a hung bookie in %v", len(got), elapsed.Round(time.Millisecond))
	// The hung bookie's long poll is answered (NoResponse) only after the
	// read timeout plus the long-poll timeout: a tailer that waited for it
	// even once took longer than the read timeout.
	if elapsed >= rcfg.ReadTimeout {
		t.Fatalf("tail took %v: it waited for the hung bookie's poll", elapsed)
	}
}
