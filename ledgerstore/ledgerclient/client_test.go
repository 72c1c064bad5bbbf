package ledgerclient

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestRoundTrip creates a ledger, appends pipelined entries, closes it and
// reads everything back byte for byte, for striped and unstriped quorums.
func TestRoundTrip(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	c := newClient(t, testConfig(cl, 1))
	tests := []struct {
		name    string
		opts    CreateOptions
		entries int
	}{
		{"3-3-2", CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2}, 300},
		{"3-2-2", CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2}, 300},
		{"4-2-1-hmac", CreateOptions{Ensemble: 4, WriteQuorum: 2, AckQuorum: 1, Digest: bkproto.DigestHMAC}, 100},
		{"empty", CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Password = testPassword
			tt.opts.CustomMetadata = map[string][]byte{"app": []byte(tt.name)}
			roundTrip(t, c, tt.opts, tt.entries)
		})
	}
}

// roundTrip writes entries pipelined to a new ledger, closes it, and
// reads them back.
func roundTrip(t *testing.T, c *Client, opts CreateOptions, entries int) {
	ctx := testCtx(t)
	name := string(opts.CustomMetadata["app"])
	w, err := c.Create(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	start := time.Now()
	a := newAcks(entries)
	for e := range int64(entries) {
		w.AppendAsync(payload(id, e), a.callback)
	}
	if entries > 0 {
		a.wait(t)
		elapsed := time.Since(start)
		t.Logf("%s: %d pipelined adds in %v (%.0f adds/s)", name, entries, elapsed.Round(time.Millisecond),
			float64(entries)/elapsed.Seconds())
	}
	if len(a.failed) > 0 {
		t.Fatalf("adds failed: %v", a.failed[0])
	}
	last := int64(entries) - 1
	if w.LAC() != last {
		t.Fatalf("LAC %d, want %d", w.LAC(), last)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := w.Append(ctx, []byte("late")); !errors.Is(err, ledger.ErrLedgerClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatalf("second close: %v", err)
	}
	md, err := c.Stat(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if md.State != ledger.StateClosed || md.LastEntryID != last || md.Length != totalLength(id, last) ||
		string(md.Custom["app"]) != name || len(md.Segments) != 1 {
		t.Fatalf("stored metadata %+v", md)
	}
	h, err := c.Open(ctx, id, testPassword) // closed: no recovery needed
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, ctx, h, last)
	if lac, err := h.ReadLAC(ctx); err != nil || lac != last {
		t.Fatalf("ReadLAC = %d, %v; want %d", lac, err, last)
	}
	if _, err := h.Read(ctx, 0, last+1); !errors.Is(err, ledger.ErrReadBeyondLAC) {
		t.Fatalf("read past the end: %v", err)
	}
	if _, err := c.OpenNoRecovery(ctx, id, []byte("wrong")); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("open with the wrong password: %v", err)
	}
}

// TestReadOpenLedger reads an open ledger without recovery while its
// writer goes on: reads stop at the LAC, which ReadLAC learns.
func TestReadOpenLedger(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	readOpenLedger(t, newClient(t, testConfig(cl, 2)), newClient(t, testConfig(cl, 3)))
}

// readOpenLedger is TestReadOpenLedger with writer client wc and reader
// client rc.
func readOpenLedger(t *testing.T, wc, rc *Client) {
	ctx := testCtx(t)
	w, err := wc.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	// An open ledger with nothing acknowledged has LAC -1 for a reader
	// too: entry 0 must not be readable before it is confirmed.
	empty, err := rc.OpenNoRecovery(ctx, w.ID(), testPassword)
	if err != nil {
		t.Fatal(err)
	}
	if lac, err := empty.ReadLAC(ctx); err != nil || lac != -1 {
		t.Fatalf("ReadLAC of an empty open ledger = %d, %v; want -1", lac, err)
	}
	if _, err := empty.Read(ctx, 0, 0); !errors.Is(err, ledger.ErrReadBeyondLAC) {
		t.Fatalf("read of entry 0 of an empty ledger: %v", err)
	}
	for e := range int64(20) {
		if got, err := w.Append(ctx, payload(w.ID(), e)); err != nil || got != e {
			t.Fatalf("append %d: %d, %v", e, got, err)
		}
	}
	h, err := rc.OpenNoRecovery(ctx, w.ID(), testPassword)
	if err != nil {
		t.Fatal(err)
	}
	// Bookies learn of an entry's acknowledgement from the next entry, so
	// readers see the LAC one behind the writer's.
	lac, err := h.ReadLAC(ctx)
	if err != nil || lac != 18 {
		t.Fatalf("ReadLAC = %d, %v; want 18", lac, err)
	}
	readAll(t, ctx, h, 18)
	if _, err := h.Read(ctx, 0, 19); !errors.Is(err, ledger.ErrReadBeyondLAC) {
		t.Fatalf("read of the unconfirmed entry 19: %v", err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	readAll(t, ctx, h, 19) // Read learns the LAC again, and then the close
	if !h.Closed() {
		t.Fatal("handle did not learn the close")
	}
}

// TestEnsembleChange stops a bookie of the ensemble while adds are in
// flight: the writer replaces it through the metadata without waiting for
// add timeouts, every acknowledged entry reads back, and the metadata shows
// the new segment.
func TestEnsembleChange(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	ctx := testCtx(t)
	cfg := testConfig(cl, 4)
	cfg.AddTimeout = time.Minute // a change must come from the dead connection, not a timeout
	cfg.Metrics = new(Metrics)
	c := newClient(t, cfg)
	w, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	first := w.Metadata().Segments[0].Bookies
	const total, stopAt = 400, 150
	a := newAcks(total)
	for e := range int64(stopAt) {
		w.AppendAsync(payload(id, e), a.callback)
	}
	waitFor(t, "the first adds", func() bool { return a.count() >= 100 })
	victim := cl.Index(string(first[1]))
	stopped := time.Now()
	cl.Stop(victim)
	for e := int64(stopAt); e < total; e++ {
		w.AppendAsync(payload(id, e), a.callback)
	}
	a.wait(t)
	t.Logf("ensemble change: %d adds after stopping %s acknowledged %v later", total-stopAt, first[1],
		time.Since(stopped).Round(time.Millisecond))
	if len(a.failed) > 0 {
		t.Fatalf("adds failed: %v", a.failed[0])
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	md, err := c.Stat(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if n := cfg.Metrics.EnsembleChanges.Load(); n < 1 || n > int64(len(md.Segments)-1) {
		t.Errorf("NUM_ENSEMBLE_CHANGE = %d with %d segments", n, len(md.Segments))
	}
	if n := cfg.Metrics.AddEntry.Outcome(true).Count(); n != total {
		t.Errorf("ADD_ENTRY successes = %d, want %d", n, total)
	}
	if len(md.Segments) < 2 || slices.Contains(md.LastSegment().Bookies, first[1]) ||
		md.LastSegment().Bookies[0] != first[0] || md.LastSegment().Bookies[2] != first[2] {
		t.Fatalf("segments after the change: %s (stopped %s)", segments(md), first[1])
	}
	if md.LastEntryID != total-1 {
		t.Fatalf("closed at %d, want %d", md.LastEntryID, total-1)
	}
	h, err := newClient(t, testConfig(cl, 5)).OpenNoRecovery(ctx, id, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, ctx, h, total-1) // entries of the first segment come from the replicas left
}

// TestRecoveryFencesWriter opens a ledger with recovery from a second
// client while the first is still writing: the first's adds fail as
// fenced from then on, the recovered end covers every acknowledged entry,
// and everything up to it reads back.
func TestRecoveryFencesWriter(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	recoveryFencesWriter(t, newClient(t, testConfig(cl, 6)), newClient(t, testConfig(cl, 7)))
}

// recoveryFencesWriter is TestRecoveryFencesWriter with writer client wc
// and recovering client rc.
func recoveryFencesWriter(t *testing.T, wc, rc *Client) {
	ctx := testCtx(t)
	w, err := wc.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	// The writer keeps appending, pipelined, until an add fails.
	a := newAcks(-1)
	writing := make(chan error, 1)
	go func() {
		for e := int64(0); ; e++ {
			if e%32 != 31 {
				w.AppendAsync(payload(id, e), a.callback)
				continue
			}
			if _, err := w.Append(ctx, payload(id, e)); err != nil {
				writing <- err
				return
			}
			a.callback(e, nil)
		}
	}()
	waitFor(t, "the first adds", func() bool { return a.count() >= 200 })
	start := time.Now()
	h, err := rc.Open(ctx, id, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recovery took %v; closed at entry %d with %d acknowledged so far", time.Since(start).Round(time.Millisecond),
		h.LAC(), a.count())
	var werr error
	select {
	case werr = <-writing:
	case <-time.After(testhost.Scale(20 * time.Second)):
		t.Fatal("the old writer's adds still succeed after recovery")
	}
	if !errors.Is(werr, ledger.ErrLedgerFenced) {
		t.Fatalf("the old writer's add after recovery: %v, want ErrLedgerFenced", werr)
	}
	if _, err := w.Append(ctx, []byte("more")); !errors.Is(err, ledger.ErrLedgerFenced) {
		t.Fatalf("the old writer's next add: %v, want ErrLedgerFenced", err)
	}
	if err := w.Close(ctx); err == nil {
		t.Log("the old writer's close succeeded: recovery closed at its LAC")
	} else if !errors.Is(err, ledger.ErrLedgerFenced) && !errors.Is(err, ledger.ErrLedgerClosed) {
		t.Fatalf("the old writer's close: %v", err)
	}
	last := h.LAC()
	if acked := a.last(); acked > last {
		t.Fatalf("entry %d was acknowledged but recovery closed the ledger at %d", acked, last)
	}
	md, err := rc.Stat(ctx, id)
	if err != nil || md.State != ledger.StateClosed || md.LastEntryID != last || md.Length != totalLength(id, last) {
		t.Fatalf("stored metadata %+v, %v", md, err)
	}
	readAll(t, ctx, h, last)
	again, err := wc.Open(ctx, id, testPassword) // a second recovery finds it closed
	if err != nil || again.LAC() != last {
		t.Fatalf("second open: %v, LAC %d", err, again.LAC())
	}
}

// TestTail follows a ledger while it is written and closed: every entry
// arrives exactly once, in order, and the tail ends at the close.
func TestTail(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	tail(t, newClient(t, testConfig(cl, 8)), newClient(t, testConfig(cl, 9)))
}

// tail is TestTail with writer client wc and tailing client rc.
func tail(t *testing.T, wc, rc *Client) {
	ctx := testCtx(t)
	w, err := wc.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	h, err := rc.OpenNoRecovery(ctx, id, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	const total = 250
	var closedAt atomic.Int64
	// The writer reports on a channel, not through t: the tail can end (the
	// close's metadata write is visible) before the writer's Close returns,
	// and a failed test returns while the writer still appends.
	writing := make(chan error, 1)
	go func() {
		for e := range int64(total) {
			if _, err := w.Append(ctx, payload(id, e)); err != nil {
				writing <- fmt.Errorf("append %d: %w", e, err)
				return
			}
			if e%50 == 49 {
				time.Sleep(100 * time.Millisecond) // idle spells: the tailer must long-poll across them
			}
		}
		if err := w.Close(ctx); err != nil {
			writing <- fmt.Errorf("close: %w", err)
			return
		}
		closedAt.Store(time.Now().UnixNano())
		writing <- nil
	}()
	var got []Entry
	start := time.Now()
	for e, err := range h.Tail(ctx, 0) {
		if err != nil {
			t.Fatalf("tail after %d entries: %v", len(got), err)
		}
		got = append(got, e)
	}
	if err := <-writing; err != nil {
		t.Fatal(err)
	}
	if len(got) != total {
		t.Fatalf("tail delivered %d entries, want %d", len(got), total)
	}
	checkEntries(t, id, 0, got)
	if !h.Closed() || h.LAC() != total-1 {
		t.Fatalf("after the tail: closed %v, LAC %d", h.Closed(), h.LAC())
	}
	t.Logf("tail: %d entries in %v, the last %v after the writer's close returned", total,
		time.Since(start).Round(time.Millisecond), time.Since(time.Unix(0, closedAt.Load())).Round(time.Millisecond))

	// A tail that starts late and stops early.
	n := 0
	for e, err := range h.Tail(ctx, 100) {
		if err != nil || e.EntryID != int64(100+n) {
			t.Fatalf("second tail: entry %d, %v", e.EntryID, err)
		}
		if n++; n == 10 {
			break
		}
	}
}

// TestReadOnlyBookiesSkipped checks that placement never chooses a
// read-only bookie.
func TestReadOnlyBookiesSkipped(t *testing.T) {
	cl := ledgertest.Start(t, 5)
	ctx := testCtx(t)
	c := newClient(t, testConfig(cl, 10))
	cl.SetReadOnly(1, true)
	cl.SetReadOnly(3, true)
	readOnly := []ledger.BookieID{ledger.BookieID(cl.Bookies[1].ID()), ledger.BookieID(cl.Bookies[3].ID())}
	for range 8 {
		w, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range w.Metadata().Segments[0].Bookies {
			if slices.Contains(readOnly, b) {
				t.Fatalf("ledger %d placed on read-only bookie %s", w.ID(), b)
			}
		}
		if _, err := w.Append(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create(ctx, CreateOptions{Ensemble: 4, WriteQuorum: 2, AckQuorum: 2}); !errors.Is(err, ledger.ErrNotEnoughBookies) {
		t.Fatalf("create on 4 of 3 writable bookies: %v", err)
	}
	cl.SetReadOnly(3, false)
	if _, err := c.Create(ctx, CreateOptions{Ensemble: 4, WriteQuorum: 2, AckQuorum: 2}); err != nil {
		t.Fatalf("create once a bookie is writable again: %v", err)
	}
}

// TestDeleteAndList lists ledgers and deletes some.
func TestDeleteAndList(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx := testCtx(t)
	c := newClient(t, testConfig(cl, 11))
	var ids []int64
	for range 4 {
		w, err := c.Create(ctx, CreateOptions{Password: testPassword})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Append(ctx, payload(w.ID(), 0)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID())
	}
	got, err := c.List(ctx)
	if err != nil || !slices.Equal(got, ids) {
		t.Fatalf("List = %v, %v; want %v", got, err, ids)
	}
	for _, id := range ids[1:3] {
		if err := c.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, ids[1]); err != nil {
		t.Fatalf("deleting a deleted ledger: %v", err)
	}
	got, err = c.List(ctx)
	if want := []int64{ids[0], ids[3]}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("List after deletes = %v, %v; want %v", got, err, want)
	}
	if _, err := c.Open(ctx, ids[1], testPassword); !errors.Is(err, ErrNoSuchLedger) {
		t.Fatalf("open of a deleted ledger: %v", err)
	}
	h, err := c.Open(ctx, ids[3], testPassword)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, ctx, h, 0)
}

// TestClientClose fails the pending adds of a writer whose client closes,
// as outcome unknown.
func TestClientClose(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx := testCtx(t)
	c, err := New(testConfig(cl, 12))
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Create(ctx, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := newAcks(100)
	for e := range int64(100) {
		w.AppendAsync(payload(w.ID(), e), a.callback)
	}
	c.Close()
	a.wait(t)
	for _, err := range a.failed {
		if !errors.Is(err, ErrClientClosed) {
			t.Fatalf("pending add after Close: %v", err)
		}
	}
	if _, err := w.Append(ctx, []byte("x")); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("append after the client closed: %v", err)
	}
	if _, err := c.Create(ctx, CreateOptions{}); err == nil {
		t.Fatal("create on a closed client succeeded")
	}
}

// TestRecoveryAfterWriterCrash recovers a ledger whose writer's client
// vanished mid-stream while a bookie of its ensemble is down: fencing
// reaches ensemble coverage without it, the re-adds replace it in a local
// ensemble change folded into the closing write, and every acknowledged
// entry reads back.
func TestRecoveryAfterWriterCrash(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	ctx := testCtx(t)
	wc, err := New(testConfig(cl, 15))
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	ensemble := w.Metadata().Segments[0].Bookies
	// A first burst, all acknowledged, then a second one cut short: the
	// bookies' LAC is in the first burst, and recovery reads forward from
	// there.
	a := newAcks(-1)
	for e := range int64(150) {
		w.AppendAsync(payload(id, e), a.callback)
	}
	waitFor(t, "the first burst", func() bool { return a.count() == 150 })
	for e := int64(150); e < 300; e++ {
		w.AppendAsync(payload(id, e), a.callback)
	}
	waitFor(t, "part of the second burst", func() bool { return a.count() >= 200 })
	wc.Close() // the writer's process dies: the ledger stays OPEN, adds were in flight
	acked := a.last()
	cl.Stop(cl.Index(string(ensemble[2])))

	rc := newClient(t, testConfig(cl, 16))
	start := time.Now()
	h, err := rc.Open(ctx, id, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	md := h.Metadata()
	t.Logf("recovery with a bookie down took %v: %d acknowledged, closed at %d, segments %s",
		time.Since(start).Round(time.Millisecond), acked+1, md.LastEntryID, segments(md))
	if md.State != ledger.StateClosed || md.LastEntryID < acked {
		t.Fatalf("recovered metadata %+v; %d was acknowledged", md, acked)
	}
	stored, err := rc.Stat(ctx, id)
	if err != nil || stored.LastEntryID != md.LastEntryID || len(stored.Segments) != len(md.Segments) {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	readAll(t, ctx, h, md.LastEntryID)
}
