package autorecovery

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/ledgerclient/ledgertest"
	"keeper/ledgerstore/metadata"
)

var password = []byte("autorecovery")

// payload is entry e of ledger id's content: distinct per entry, of
// varying size.
func payload(id, e int64) []byte {
	s := fmt.Sprintf("ledger %d entry %d|", id, e)
	p := make([]byte, 64+int((e*7919)%900))
	for i := range p {
		p[i] = s[i%len(s)]
	}
	return p
}

func testLogger() *slog.Logger {
	if os.Getenv("AUTORECOVERY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// newLedgerClient connects a ledger client to cl with short ticks and
// timeouts no loaded machine meets (a stopped bookie ends its
// connections; nothing here waits for a timeout).
func newLedgerClient(t *testing.T, cl *ledgertest.Cluster, seed uint64) *ledgerclient.Client {
	t.Helper()
	c, err := ledgerclient.New(ledgerclient.Config{
		ZKServers: []string{cl.ZKAddr()}, ZKSessionTimeout: testhost.Scale(10 * time.Second),
		Tick: 10 * time.Millisecond, AddTimeout: testhost.Scale(30 * time.Second),
		ReadTimeout: testhost.Scale(30 * time.Second), SpeculativeReadTimeout: 200 * time.Millisecond,
		RetryInterval: 50 * time.Millisecond, LongPollTimeout: time.Second, Seed: seed, Logger: testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// writeLedger creates an E3/Qw2/Qa2 ledger and writes n entries; it
// closes it if asked.
func writeLedger(t *testing.T, ctx context.Context, c *ledgerclient.Client, n int, closeIt bool) *ledgerclient.Writer {
	t.Helper()
	w, err := c.Create(ctx, ledgerclient.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	for e := range int64(n) {
		if _, err := w.Append(ctx, payload(w.ID(), e)); err != nil {
			t.Fatal(err)
		}
	}
	if closeIt {
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// checkReplicas reads every entry of ledger id directly from every bookie
// of its write set (as the metadata now stands) and checks each copy: all
// Qw copies are there, on bookies other than lost, with the content that
// was written.
func checkReplicas(t *testing.T, ctx context.Context, cl *ledgertest.Cluster, store *metadata.Store, id int64,
	lost ledger.BookieID) (entries int) {
	t.Helper()
	md, _, err := store.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if md.State != ledger.StateClosed {
		t.Fatalf("ledger %d is %v; the check needs it closed", id, md.State)
	}
	clients := map[ledger.BookieID]*bookierpc.Client{}
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	macKey := bkproto.MacKey(md.Password)
	for e := int64(0); e <= md.LastEntryID; e++ {
		for _, b := range md.WriteSetBookies(e) {
			if b == lost {
				t.Fatalf("ledger %d entry %d: the lost bookie %s is still in its write set", id, e, b)
			}
			c := clients[b]
			if c == nil {
				i := cl.Index(string(b))
				if i < 0 {
					t.Fatalf("ledger %d names unknown bookie %s", id, b)
				}
				if c, err = bookierpc.Dial(ctx, cl.Bookies[i].Addr().String()); err != nil {
					t.Fatal(err)
				}
				clients[b] = c
			}
			resp, err := c.Read(ctx, id, e)
			if err != nil {
				t.Fatalf("ledger %d entry %d: no copy on %s: %v", id, e, b, err)
			}
			got, err := bkproto.DecodeEntry(resp.GetBody(), md.Digest(), macKey[:], id, e)
			if err != nil || !bytes.Equal(got.Payload, payload(id, e)) {
				t.Fatalf("ledger %d entry %d on %s: %v, payload %.40q", id, e, b, err, got.Payload)
			}
		}
		entries++
	}
	return entries
}

// startDaemon starts an autorecovery daemon on a session of its own.
func startDaemon(t *testing.T, cl *ledgertest.Cluster, id string, cfg Config) *Daemon {
	t.Helper()
	st, _ := openStore(t, cl.ZKAddr())
	cfg.Store, cfg.ID, cfg.Logger = st, id, testLogger()
	if cfg.Client == nil {
		cfg.Client = newLedgerClient(t, cl, 77)
	}
	d, err := Start(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestLostBookieReplicated is the whole story on four in-process bookies:
// closed ledgers, an idle open ledger and one being written and tailed,
// all E3/Qw2. One bookie stops for good; after lostBookieRecoveryDelay
// the auditor marks its ledgers, the workers copy what it held and swap
// it out, the idle ledger is fenced after its grace period, and in the end
// every entry has Qw verified copies on live bookies, the tailing reader
// saw every acknowledged entry once and in order, and no marker is left.
func TestLostBookieReplicated(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	ctx, cancel := context.WithTimeout(t.Context(), testhost.Scale(120*time.Second))
	defer cancel()
	wc := newLedgerClient(t, cl, 1)
	var closed []int64
	for range 6 {
		closed = append(closed, writeLedger(t, ctx, wc, 120, true).ID())
	}
	// The idle ledger's writer goes away with its client, leaving the
	// ledger open with nobody to replace a bookie in its last segment.
	ic := newLedgerClient(t, cl, 3)
	idle := writeLedger(t, ctx, ic, 30, false)
	ic.Close()

	// The active ledger: written until told to stop, tailed meanwhile.
	active := writeLedger(t, ctx, wc, 10, false)
	stopWriting := make(chan struct{})
	var written int64 = 10
	var writerErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stopWriting:
				writerErr = active.Close(ctx)
				return
			default:
			}
			if _, err := active.Append(ctx, payload(active.ID(), written)); err != nil {
				writerErr = err
				return
			}
			written++
		}
	})
	var tailed []ledgerclient.Entry
	var tailErr error
	rc := newLedgerClient(t, cl, 2)
	h, err := rc.OpenNoRecovery(ctx, active.ID(), password)
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		for e, err := range h.Tail(ctx, 0) {
			if err != nil {
				tailErr = err
				return
			}
			e.Payload = slices.Clone(e.Payload)
			tailed = append(tailed, e)
		}
	})

	// Two daemons: one audits, both replicate.
	cfg := Config{LostBookieRecoveryDelay: time.Second, OpenLedgerRereplicationGracePeriod: 2 * time.Second,
		PollInterval: 50 * time.Millisecond, RereplicateBackoff: 200 * time.Millisecond, EntryBatchSize: 16}
	d1 := startDaemon(t, cl, "autorecovery-1", cfg)
	d2 := startDaemon(t, cl, "autorecovery-2", cfg)
	waitFor(t, ctx, "an auditor", func() bool { return d1.Auditing() != d2.Auditing() })

	// The victim: the bookie of the idle ledger's first position, so that
	// the idle ledger's open segment misses it.
	victim := idle.Metadata().Segments[0].Bookies[0]
	store, _ := openStore(t, cl.ZKAddr())
	cl.Stop(cl.Index(string(victim)))
	lostAt := time.Now()

	// Keep writing across the loss (the writer's own ensemble change)
	// and for a while after.
	waitFor(t, ctx, "writes after the loss", func() bool {
		md := active.Metadata()
		return len(md.Segments) > 1 || !slices.Contains(md.LastSegment().Bookies, victim)
	})
	waitFor(t, ctx, "the idle ledger fenced and the marks gone", func() bool {
		md, _, err := store.Read(ctx, idle.ID())
		if err != nil || md.State != ledger.StateClosed {
			return false
		}
		list, err := d1.Manager().List(ctx)
		return err == nil && len(list) == 0 && !namesBookie(t, ctx, store, append(closed, idle.ID()), victim)
	})
	close(stopWriting)
	wg.Wait()
	if writerErr != nil {
		t.Fatalf("writer: %v", writerErr)
	}
	if tailErr != nil {
		t.Fatalf("tail: %v", tailErr)
	}
	waitFor(t, ctx, "the active ledger free of the lost bookie", func() bool {
		list, err := d1.Manager().List(ctx)
		return err == nil && len(list) == 0 && !namesBookie(t, ctx, store, []int64{active.ID()}, victim)
	})
	took := time.Since(lostAt)

	// Every entry of every ledger has Qw good copies on live bookies.
	total := 0
	for _, id := range append(closed, idle.ID(), active.ID()) {
		total += checkReplicas(t, ctx, cl, store, id, victim)
	}
	// The idle ledger kept every acknowledged entry.
	if md, _, _ := store.Read(ctx, idle.ID()); md.LastEntryID != 29 {
		t.Fatalf("idle ledger closed at %d, want 29", md.LastEntryID)
	}
	// The tail saw every entry once, in order, with its content.
	if int64(len(tailed)) != written {
		t.Fatalf("tail delivered %d entries, the writer wrote %d", len(tailed), written)
	}
	for i, e := range tailed {
		if e.EntryID != int64(i) || !bytes.Equal(e.Payload, payload(active.ID(), int64(i))) {
			t.Fatalf("tail entry %d: id %d payload %.40q", i, e.EntryID, e.Payload)
		}
	}
	s1, s2 := d1.Stats(), d2.Stats()
	t.Logf("lost %s: %d ledgers marked, %d entries checked; workers copied %d+%d fragments, %d+%d entries, %d+%d bytes, "+
		"%d+%d swap conflicts, %d+%d ledgers fenced; everything replicated %v after the loss",
		victim, d1.Marked()+d2.Marked(), total, s1.FragmentsCopied, s2.FragmentsCopied, s1.EntriesCopied, s2.EntriesCopied,
		s1.BytesCopied, s2.BytesCopied, s1.SwapConflicts, s2.SwapConflicts, s1.LedgersFenced, s2.LedgersFenced,
		took.Round(time.Millisecond))
	if s1.LedgersFenced+s2.LedgersFenced == 0 {
		t.Fatal("no worker fenced the idle ledger")
	}
}

// namesBookie reports whether any of the ledgers has b in a segment.
func namesBookie(t *testing.T, ctx context.Context, store *metadata.Store, ids []int64, b ledger.BookieID) bool {
	for _, id := range ids {
		md, _, err := store.Read(ctx, id)
		if err != nil {
			return true
		}
		for _, seg := range md.Segments {
			if slices.Contains(seg.Bookies, b) {
				return true
			}
		}
	}
	return false
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
