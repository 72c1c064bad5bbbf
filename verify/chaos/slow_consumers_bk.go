package chaos

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"keeper/ledgerstore/ledgerclient"
	"keeper/verify/slowconsumer"
)

// The bookie slow-consumers scenario's settings and bounds.
const (
	slowBKPassword = "slow"
	// slowBKEntryBytes is the large entry the attackers read: "a 1 MB
	// entry"; its stored form adds a header and a digest.
	slowBKEntryBytes = 1_000_000
	slowBKStoredPad  = 64
	// slowBKStuckMs is the bookies' waitTimeoutOnResponseBackpressureMs:
	// short, so that a round sees its stuck clients closed.
	slowBKStuckMs = 4000
	// slowBKAddP99Bound bounds the 99th percentile of the healthy writer's
	// adds during the attacks (call to callback; a failed add counts as
	// slower than any). The writer's AddTimeout is 1 s.
	slowBKAddP99Bound = time.Second
	// slowBKRSSCapKB caps every bookie's peak resident set. The documented
	// bounds (ledgerstore/bookie/limits.go) let a bookie hold 256 MiB for
	// its connections together, plus per connection a request frame, its
	// reserve and one response: for slowconsumer.BookiePlan's 203
	// connections about 200 MB. With the entry store's caches (64 MiB for
	// writes, 64 MiB for reads) that is about 600 MiB live; Go's collector
	// (GOGC=100) lets the heap grow to twice what was live at the last
	// collection before the next, so the cap is twice that.
	slowBKRSSCapKB = 1200 << 10
	// slowBKAddEvery paces the healthy writer.
	slowBKAddEvery = 5 * time.Millisecond
	// slowBKDrain bounds the wait for the tail readers once every ledger
	// is closed.
	slowBKDrain = 30 * time.Second
)

// SlowBookieConsumers attacks one bookie at a time with clients that
// make it hold READ_ENTRY responses of a 1 MB entry on v3 connections
// (slowconsumer.BookiePlan): one pipelines 40 reads and never reads, one
// reads a byte a second, one stops half-way through a response, and 200
// connections each pipeline three and never read; the attackers dial the
// bookie directly, not through its front. Meanwhile a healthy writer adds
// small entries (E=3, Qw=3, Qa=2 over four bookies) and a reader tails
// each of its ledgers. Checks: the healthy adds' p99 under
// slowBKAddP99Bound, every bookie's peak RSS under slowBKRSSCapKB, no
// bookie crashes, no acknowledged entry lost and every ledger read back as
// written (checkLedger), the tail reader sees every entry once, in order.
// Figures: attacks and the connections the bookie closed, per kind; add
// latency p50/p99; peak RSS per bookie.
func SlowBookieConsumers() *LedgerScenario {
	return &LedgerScenario{ID: 12, Name: "slow consumers on bookies", Servers: 1, Bookies: 4,
		MaxSessionTimeoutMs: 4000,
		// A round runs to its end and takes longer than this (its hold alone
		// is 10 s): one round unless CHAOS_DURATION asks for more.
		Duration:   5 * time.Second,
		BookieConf: []string{fmt.Sprintf("waitTimeoutOnResponseBackpressureMs=%d", slowBKStuckMs)},
		Body:       slowBKBody}
}

// slowBKLedger is one ledger of the healthy writer.
type slowBKLedger struct {
	id    int64
	mu    sync.Mutex
	sent  [][]byte
	acked int64
}

func (l *slowBKLedger) written() *WrittenLedger {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &WrittenLedger{ID: l.id, Password: []byte(slowBKPassword), Sent: append([][]byte(nil), l.sent...), Acked: l.acked}
}

// slowBK is what the writer, the tail readers and the attacks share.
type slowBK struct {
	r         *LedgerRun
	adds      slowconsumer.Latencies
	measuring atomic.Bool // adds called while set count in adds
	readWG    sync.WaitGroup

	mu      sync.Mutex
	ledgers []*slowBKLedger
}

func slowBKBody(ctx context.Context, r *LedgerRun) {
	st := &slowBK{r: r}
	clients := map[string]*ledgerclient.Client{}
	for _, name := range []string{"big", "writer", "tail", "other"} {
		cfg := ledgerclient.Config{Logger: r.ClientLog(name)}
		if name == "big" {
			// The large entry goes to every bookie with no spare: a bookie
			// slow to fsync a megabyte on a busy machine must not be
			// replaced, as there is none to replace it with.
			cfg.AddTimeout = 30 * time.Second
		}
		c, err := r.LedgerClient(harnessNode, cfg)
		if err != nil {
			r.Report.Violate("harness", "%s client: %v", name, err)
			return
		}
		defer c.Close()
		clients[name] = c
	}
	// Setup, not the fault phase: on a loaded machine one megabyte synced
	// by four bookies sharing a disk has taken more than the phase's 5 s.
	bigCtx, bigDone := context.WithTimeout(context.WithoutCancel(ctx), slowBKDrain)
	big, err := writeBigEntry(bigCtx, clients["big"], len(r.Bookies.List))
	bigDone()
	if err != nil {
		r.Report.Violate("harness", "the large entry: %v", err)
		return
	}
	wctx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	readCtx, stopReaders := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer stopReaders()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		st.write(wctx, readCtx, clients["writer"], clients["tail"])
	}()
	sleepCtx(ctx, warmup)
	res := st.attack(ctx, big, st.attackOrder(ctx, clients["other"]))
	stopWriter()
	<-writerDone
	st.finish(context.WithoutCancel(ctx), clients["other"], res)
}

// writeBigEntry writes a ledger on every bookie holding one large entry
// and closes it; it returns the ledger's id.
func writeBigEntry(ctx context.Context, c *ledgerclient.Client, bookies int) (int64, error) {
	w, err := c.Create(ctx, ledgerclient.CreateOptions{Ensemble: bookies, WriteQuorum: bookies, AckQuorum: bookies,
		Password: []byte(slowBKPassword)})
	if err != nil {
		return 0, err
	}
	actx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := w.Append(actx, bytes.Repeat([]byte("B"), slowBKEntryBytes)); err != nil {
		return 0, err
	}
	return w.ID(), w.Close(actx)
}

// attackOrder is a bookie the healthy writer writes to, then the others.
func (st *slowBK) attackOrder(ctx context.Context, c *ledgerclient.Client) []*Bookie {
	order := slices.Clone(st.r.Bookies.List)
	st.mu.Lock()
	var cur *slowBKLedger
	if n := len(st.ledgers); n > 0 {
		cur = st.ledgers[n-1]
	}
	st.mu.Unlock()
	if cur == nil {
		return order
	}
	md, err := c.Stat(ctx, cur.id)
	if err != nil {
		return order
	}
	for _, id := range md.WriteSetBookies(0) {
		for i, b := range order {
			if b.ID == string(id) {
				return append(append([]*Bookie{b}, order[:i]...), order[i+1:]...)
			}
		}
	}
	return order
}

// attack runs rounds against the bookies in order, a whole round each,
// until ctx ends (at least one), with the healthy adds measured meanwhile;
// it checks for crashes after each round.
func (st *slowBK) attack(ctx context.Context, ledgerID int64, order []*Bookie) slowconsumer.Result {
	r := st.r
	plan := slowconsumer.BookiePlan(ledgerID, 0, slowBKEntryBytes+slowBKStoredPad, slowBKStuckMs*time.Millisecond)
	var total slowconsumer.Result
	st.measuring.Store(true)
	defer st.measuring.Store(false)
	for i := 0; i == 0 || ctx.Err() == nil; i++ {
		b := order[i%len(order)]
		r.Fault("slow consumers against %s", b.Name)
		// A round runs to its end, so that it sees its stuck clients closed.
		res := slowconsumer.Round(context.WithoutCancel(ctx), b.Real, plan)
		r.Logf("round against %s: opened %s in %v, closed by the bookie %s", b.Name, res.Opened,
			res.OpenTime.Round(time.Millisecond), res.Closed)
		total.Add(res)
		for _, bk := range r.Bookies.List {
			if p := bk.Proc(); p != nil && !p.Running() {
				r.Report.Violate("crash", "%s exited (%v) under slow consumers:\n%s", bk.Name, p.ExitErr(), LogTail(p.LogPath, 20))
				if err := r.Heal(); err != nil {
					r.Report.Violate("liveness", "bookies after the crash: %v", err)
				}
			}
		}
	}
	return total
}

// write appends to a ledger until ctx ends or an add fails, then closes
// it and starts another; a reader tails each.
func (st *slowBK) write(ctx, readCtx context.Context, writer, tail *ledgerclient.Client) {
	r := st.r
	for ctx.Err() == nil {
		w, err := writer.Create(ctx, ledgerclient.CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2,
			Password: []byte(slowBKPassword)})
		if err != nil {
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		l := &slowBKLedger{id: w.ID(), acked: -1}
		st.mu.Lock()
		st.ledgers = append(st.ledgers, l)
		st.mu.Unlock()
		st.readWG.Add(1)
		go func() {
			defer st.readWG.Done()
			st.tail(readCtx, tail, l)
		}()
		st.appendUntil(ctx, w, l)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		if err := w.Close(cctx); err != nil {
			r.Logf("ledger %d: close: %v", l.id, err)
		}
		cancel()
	}
}

// appendUntil adds an entry every slowBKAddEvery, timing each, until ctx
// ends or an add fails.
func (st *slowBK) appendUntil(ctx context.Context, w *ledgerclient.Writer, l *slowBKLedger) {
	r := st.r
	tick := time.NewTicker(slowBKAddEvery)
	defer tick.Stop()
	failCh := make(chan struct{})
	var failed sync.Once
	for i := int64(0); ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-failCh:
			return
		case <-tick.C:
		}
		p := []byte(fmt.Sprintf("L%d-e%08d-%s", l.id, i, strings.Repeat("h", 60)))
		l.mu.Lock()
		l.sent = append(l.sent, p)
		l.mu.Unlock()
		want, start, measured := i, time.Now(), st.measuring.Load()
		w.AppendAsync(p, func(id int64, err error) {
			r.Op(0, err == nil)
			if measured {
				if err != nil {
					st.adds.Fail()
				} else {
					st.adds.Add(time.Since(start))
				}
			}
			if err != nil {
				failed.Do(func() {
					r.Logf("ledger %d: add %d failed: %v", l.id, want, err)
					close(failCh)
				})
				return
			}
			if id != want {
				r.Report.Violate("bk-order", "ledger %d: append #%d was acknowledged as entry %d", l.id, want, id)
			}
			l.mu.Lock()
			l.acked = max(l.acked, id)
			l.mu.Unlock()
		})
	}
}

// tail follows l until it is closed: every entry once, in order, with the
// payload sent.
func (st *slowBK) tail(ctx context.Context, c *ledgerclient.Client, l *slowBKLedger) {
	r := st.r
	h, err := c.OpenNoRecovery(ctx, l.id, []byte(slowBKPassword))
	if err != nil {
		r.Report.Violate("bk-tail", "ledger %d: open to tail: %v", l.id, err)
		return
	}
	next := int64(0)
	for e, err := range h.Tail(ctx, 0) {
		if err != nil {
			r.Report.Violate("bk-tail", "ledger %d: tail ended at entry %d: %v", l.id, next, err)
			return
		}
		if e.EntryID != next {
			r.Report.Violate("bk-tail", "ledger %d: the tail reader got entry %d, expecting %d", l.id, e.EntryID, next)
		}
		l.mu.Lock()
		ok := e.EntryID >= 0 && e.EntryID < int64(len(l.sent)) && bytes.Equal(l.sent[e.EntryID], e.Payload)
		l.mu.Unlock()
		if !ok {
			r.Report.Violate("bk-order", "ledger %d: the tail reader got %q as entry %d", l.id, clip(e.Payload), e.EntryID)
		}
		next = max(next, e.EntryID+1)
	}
}

// finish waits for the tail readers, checks every ledger and the
// bookies, and sets the figures.
func (st *slowBK) finish(ctx context.Context, c *ledgerclient.Client, res slowconsumer.Result) {
	r := st.r
	done := make(chan struct{})
	go func() { st.readWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(slowBKDrain):
		r.Report.Violate("bk-tail", "tail readers still reading %v after every ledger was closed", slowBKDrain)
	}
	st.mu.Lock()
	ledgers := append([]*slowBKLedger(nil), st.ledgers...)
	st.mu.Unlock()
	lost0 := r.Report.lostCount()
	entries := 0
	for _, l := range ledgers {
		entries += int(checkLedger(ctx, r, c, l.written()).LastEntryID + 1)
	}
	r.Report.Figure("ledgers", "%d", len(ledgers))
	r.Report.Figure("entries", "%d", entries)
	r.Report.Figure("lost-acked", "%d", r.Report.lostCount()-lost0)
	r.Report.Figure("attacks", "%s", res.Opened)
	r.Report.Figure("closed-stuck", "%s", res.Closed)
	if res.Failed.Total() > 0 {
		r.Report.Figure("attack-dial-failed", "%s", res.Failed)
	}
	r.Report.Figure("adds", "%s/%s", slowconsumer.FormatDuration(st.adds.Quantile(0.5)),
		slowconsumer.FormatDuration(st.adds.Quantile(0.99)))
	if p99 := st.adds.Quantile(0.99); p99 > slowBKAddP99Bound {
		r.Report.Violate("latency", "healthy adds' p99 during the attacks is %s (%d of %d failed), over %v",
			slowconsumer.FormatDuration(p99), st.adds.Failed(), st.adds.Count(), slowBKAddP99Bound)
	}
	var parts []string
	for _, b := range r.Bookies.List {
		p := b.Proc()
		if p == nil || !p.Running() {
			continue
		}
		kb, err := slowconsumer.PeakRSSKB(p.Pid())
		if err != nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s:%dMB", b.Name, kb>>10))
		if kb > slowBKRSSCapKB {
			r.Report.Violate("memory", "%s's peak RSS is %d MiB, over the cap of %d MiB", b.Name, kb>>10, slowBKRSSCapKB>>10)
		}
	}
	r.Report.Figure("peak-rss", "%s", strings.Join(parts, ","))
}
