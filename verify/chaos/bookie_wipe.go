package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
)

// Scenario 10's settings.
const (
	wipePassword   = "s10"
	wipeLedgerLife = 4 * time.Second // a writer closes its ledger and starts another after this
	wipeDrain      = 40 * time.Second
)

// wipeFaults are scenario 10's faults, in turn.
var wipeFaults = []string{"fence-and-lac-survive-restart", "kill-restart", "recovery-races-ensemble-change", "wipe"}

// BookieWipeScenario is the "bookie crash and wipe" scenario (docs/fault-model.md, #10): bookies crash, restart and come back
// wiped, under a writer (E=3, Qw=2, Qa=2; a new ledger every few seconds)
// and readers that follow each ledger as its LAC moves — one tails it
// (long polls), one polls its LAC and reads up to it. The faults, in
// turn: a bookie holding a fenced ledger and an explicit LAC is killed
// with SIGKILL and restarted, after which a plain add must get EFENCED
// and the explicit LAC must read back (BOOKKEEPER-500/815, #1527); a
// bookie of the writer's ensemble is killed during adds (the writer
// changes its ensemble) and restarted with its data; another client
// opens the writer's ledger with recovery just as a bookie of its
// ensemble dies, so the writer's ensemble change and the recovery's close
// race on the metadata (compare-and-set on its version, BOOKKEEPER-584);
// a bookie restarts with its directories wiped and must refuse to start
// because of its cookie, saying so, before its data is put back. Every
// kill drops the bytes the bookie had written but not synced, as a power
// loss would (DropUnsynced), so restarts meet torn journal and entry-log
// tails. Checks:
// every acknowledged entry survives and reads back with its payload
// (checkLedger), readers never go back past an entry they read and see
// every entry once, in order. Figures: lost acknowledged entries (0),
// readers that regressed (0), reads below the LAC that no replica answered
// in time and were read again, wiped-bookie refusals, restart times, torn
// tails repaired.
func BookieWipeScenario() *LedgerScenario {
	return &LedgerScenario{ID: 10, Name: "bookie crash, restart and wipe", Servers: 1, Bookies: 5,
		MaxSessionTimeoutMs: 4000, Duration: 20 * time.Second, DropUnsynced: true, Body: wipeBody}
}

// wipeLedger is one ledger of the writer, shared with its readers.
type wipeLedger struct {
	id int64

	mu      sync.Mutex
	sent    [][]byte
	acked   int64
	failure error // the first failed add's error
	// lacRead is the highest LAC a reader learned while the ledger was
	// open; finish checks it against every add the writer saw
	// acknowledged (I2: LAC ⇒ acknowledged).
	lacRead int64
}

func (l *wipeLedger) payload(e int64) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e < 0 || e >= int64(len(l.sent)) {
		return nil, false
	}
	return l.sent[e], true
}

func (l *wipeLedger) written() *WrittenLedger {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &WrittenLedger{ID: l.id, Password: []byte(wipePassword), Sent: append([][]byte(nil), l.sent...), Acked: l.acked}
}

// wipeState is what the writer, the readers and the faults share.
type wipeState struct {
	r      *LedgerRun
	writer *ledgerclient.Client
	mu     sync.Mutex
	cur    *wipeLedger // the ledger being written
	all    []*wipeLedger
	readWG sync.WaitGroup

	regressed, gaps, refusals, races, raceFenced int
	unavailable                                  int // reads below the LAC that no replica answered in time, then read again
	restarts                                     Durations
}

func (st *wipeState) current() *wipeLedger {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cur
}

func wipeBody(ctx context.Context, r *LedgerRun) {
	st := &wipeState{r: r}
	clients := map[string]*ledgerclient.Client{}
	for _, name := range []string{"writer", "tail", "poll", "other"} {
		c, err := r.LedgerClient(harnessNode, ledgerclient.Config{Logger: r.ClientLog(name)})
		if err != nil {
			r.Report.Violate("harness", "%s client: %v", name, err)
			return
		}
		defer c.Close()
		clients[name] = c
	}
	st.writer = clients["writer"]
	wctx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	readCtx, stopReaders := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer stopReaders()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		st.write(wctx, readCtx, clients["tail"], clients["poll"])
	}()
	if !sleepCtx(ctx, warmup) {
		ctx = context.WithoutCancel(ctx) // run the faults once even so
	}
	for k := 0; k < len(wipeFaults) || ctx.Err() == nil; k++ {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		if err := st.fault(fctx, wipeFaults[k%len(wipeFaults)], clients["other"]); err != nil {
			r.Report.Violate("harness", "fault %s: %v", wipeFaults[k%len(wipeFaults)], err)
		}
		cancel()
		if err := r.Heal(); err != nil {
			r.Report.Violate("liveness", "bookies after the fault: %v", err)
		}
		sleepCtx(ctx, time.Second)
	}
	stopWriter()
	<-writerDone
	st.finish(context.WithoutCancel(ctx), clients["other"])
}

// write appends to a ledger, closes it after wipeLedgerLife or once it
// fails, and starts another, until ctx ends; readers follow each ledger.
func (st *wipeState) write(ctx, readCtx context.Context, tail, poll *ledgerclient.Client) {
	r := st.r
	for ctx.Err() == nil {
		w, err := st.writer.Create(ctx, ledgerclient.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2,
			Password: []byte(wipePassword)})
		if err != nil {
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		l := &wipeLedger{id: w.ID(), acked: -1, lacRead: -1}
		st.mu.Lock()
		st.cur = l
		st.all = append(st.all, l)
		st.mu.Unlock()
		st.readWG.Add(2)
		go func() { defer st.readWG.Done(); st.tailReader(readCtx, tail, l) }()
		go func() { defer st.readWG.Done(); st.pollReader(readCtx, poll, l) }()
		st.appendUntil(ctx, w, l)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		err = w.Close(cctx)
		cancel()
		if err != nil {
			r.Logf("ledger %d: close: %v", l.id, err)
		}
	}
}

// appendUntil appends to l, paced, until its life is over, ctx ends or
// an add fails.
func (st *wipeState) appendUntil(ctx context.Context, w *ledgerclient.Writer, l *wipeLedger) {
	r := st.r
	end := time.Now().Add(wipeLedgerLife)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var failed sync.Once
	failCh := make(chan struct{})
	for i := int64(0); time.Now().Before(end); {
		select {
		case <-ctx.Done():
			return
		case <-failCh:
			return
		case <-tick.C:
		}
		for range 2 {
			p := []byte(fmt.Sprintf("L%d-e%08d-%s", l.id, i, strings.Repeat("y", 60)))
			l.mu.Lock()
			l.sent = append(l.sent, p)
			l.mu.Unlock()
			want := i
			w.AppendAsync(p, func(id int64, err error) {
				r.Op(0, err == nil)
				if err != nil {
					failed.Do(func() {
						l.mu.Lock()
						l.failure = err
						l.mu.Unlock()
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
			i++
		}
	}
}

// tailReader follows l with Tail: every entry once, in order, with the
// payload sent, up to the close.
func (st *wipeState) tailReader(ctx context.Context, c *ledgerclient.Client, l *wipeLedger) {
	r := st.r
	h, err := c.OpenNoRecovery(ctx, l.id, []byte(wipePassword))
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
		st.seen(l, "tail", next, e)
		next = max(next, e.EntryID+1)
	}
	st.complete(ctx, c, l, "tail", next-1)
}

// pollReader follows l by reading its LAC and the entries up to it.
func (st *wipeState) pollReader(ctx context.Context, c *ledgerclient.Client, l *wipeLedger) {
	r := st.r
	h, err := c.OpenNoRecovery(ctx, l.id, []byte(wipePassword))
	if err != nil {
		r.Report.Violate("bk-tail", "ledger %d: open to poll: %v", l.id, err)
		return
	}
	read := int64(-1)
	for ctx.Err() == nil {
		lac, err := h.ReadLAC(ctx)
		if err == nil {
			lac = st.checkLAC(l, lac, read, h.Closed())
		}
		if err == nil && lac > read {
			entries, err := h.Read(ctx, read+1, lac)
			switch {
			case err == nil:
			case errors.Is(err, ledger.ErrEntryUnavailable) && ctx.Err() == nil:
				// No replica gave a valid copy in time: on a loaded
				// machine both can stall past the read timeout. The entry
				// may well be there; the loop reads it again, and a
				// reader that never gets it is judged by complete (and
				// an explicit denial is ErrEntryMissing, judged below).
				st.mu.Lock()
				st.unavailable++
				st.mu.Unlock()
				r.Logf("ledger %d: read %d..%d below the LAC unavailable: %v; asked again directly: %s; reading again",
					l.id, read+1, lac, err, st.probeCopies(ctx, h, l, read+1))
			default:
				md := h.Metadata()
				r.Report.Violate("bk-tail", "ledger %d: read %d..%d below the LAC (at %.3fs, segments %v): %v; asked again directly: %s",
					l.id, read+1, lac, time.Since(r.start).Seconds(), md.Segments, err, st.probeCopies(ctx, h, l, read+1))
			}
			for _, e := range entries {
				st.seen(l, "poll", read+1, e)
				read = max(read, e.EntryID)
			}
		}
		if h.Closed() && read >= h.Metadata().LastEntryID {
			break
		}
		if err != nil || lac <= read {
			sleepCtx(ctx, 50*time.Millisecond)
		}
	}
	st.complete(ctx, c, l, "poll", read)
}

// checkLAC judges a LAC a reader learned (ReadLAC) after reading up to
// entry read: it must not be below read (a regression). While the ledger
// is open it must also not pass what the writer acknowledges (I2: LAC ⇒
// acknowledged; a closed ledger's end may lie past the acknowledged
// entries, where recovery closed it). That is judged in finish, against
// every acknowledgement the writer got: the client moves its LAC (and
// sends it with the next add) as soon as Qa bookies acknowledged an entry,
// and runs the entry's callback, where the writer counts it, just after,
// so a reader may learn a LAC a few entries ahead of the callbacks run so
// far. It returns the LAC to read up to.
func (st *wipeState) checkLAC(l *wipeLedger, lac, read int64, closed bool) int64 {
	if lac < read {
		st.mu.Lock()
		st.regressed++
		st.mu.Unlock()
		st.r.Report.Violate("bk-regress", "ledger %d: LAC read %d after entry %d had been read", l.id, lac, read)
	}
	if !closed {
		l.mu.Lock()
		l.lacRead = max(l.lacRead, lac)
		l.mu.Unlock()
	}
	return lac
}

// probeCopies reads entry e of l from each bookie of its write set and
// describes what each answered.
func (st *wipeState) probeCopies(ctx context.Context, h *ledgerclient.ReadHandle, l *wipeLedger, e int64) string {
	md := h.Metadata()
	mac := bkproto.MacKey([]byte(wipePassword))
	want, _ := l.payload(e)
	var out []string
	for _, b := range md.WriteSetBookies(e) {
		bk := st.r.Bookies.Bookie(string(b))
		if bk == nil {
			continue
		}
		err := withBookie(ctx, bk, func(c *bookierpc.Client) error {
			return readCopy(ctx, c, l.id, e, md.DigestType, mac[:], want)
		})
		out = append(out, fmt.Sprintf("%s: %v", bk.Name, err))
	}
	return strings.Join(out, "; ")
}

// seen checks an entry a reader got when it expected entry next.
func (st *wipeState) seen(l *wipeLedger, reader string, next int64, e ledgerclient.Entry) {
	r := st.r
	switch {
	case e.EntryID < next:
		st.mu.Lock()
		st.regressed++
		st.mu.Unlock()
		r.Report.Violate("bk-regress", "ledger %d: %s reader got entry %d after entry %d", l.id, reader, e.EntryID, next-1)
	case e.EntryID > next:
		st.mu.Lock()
		st.gaps++
		st.mu.Unlock()
		r.Report.Violate("bk-tail", "ledger %d: %s reader got entry %d, expecting %d", l.id, reader, e.EntryID, next)
	}
	if p, ok := l.payload(e.EntryID); !ok || string(p) != string(e.Payload) {
		r.Report.Violate("bk-order", "ledger %d: %s reader got %q as entry %d, the writer sent %q", l.id, reader,
			clip(e.Payload), e.EntryID, clip(p))
	}
}

// complete checks that a reader that stopped had read the whole closed
// ledger.
func (st *wipeState) complete(ctx context.Context, c *ledgerclient.Client, l *wipeLedger, reader string, last int64) {
	if ctx.Err() != nil {
		st.r.Report.Violate("bk-tail", "ledger %d: %s reader still at entry %d when the run ended", l.id, reader, last)
		return
	}
	md, err := c.Stat(ctx, l.id)
	if err == nil && md.State == ledger.StateClosed && md.LastEntryID != last {
		st.r.Report.Violate("bk-tail", "ledger %d closed at %d, but the %s reader stopped at %d", l.id, md.LastEntryID,
			reader, last)
	}
}

// finish closes (recovers) any ledger left open, waits for the readers
// and checks every ledger.
func (st *wipeState) finish(ctx context.Context, c *ledgerclient.Client) {
	r := st.r
	st.mu.Lock()
	all := append([]*wipeLedger(nil), st.all...)
	st.mu.Unlock()
	for _, l := range all {
		if md, err := c.Stat(ctx, l.id); err == nil && md.State != ledger.StateClosed {
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			if _, err := c.Open(rctx, l.id, []byte(wipePassword)); err != nil {
				r.Report.Violate("bk-liveness", "ledger %d: recovery at the end: %v", l.id, err)
			}
			cancel()
		}
	}
	done := make(chan struct{})
	go func() { st.readWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wipeDrain):
		r.Report.Violate("bk-tail", "readers still reading %v after every ledger was closed", wipeDrain)
	}
	for _, l := range all {
		l.mu.Lock()
		lac, acked := l.lacRead, l.acked
		l.mu.Unlock()
		if lac > acked {
			r.Report.Violate("bk-lac-ahead", "ledger %d: ReadLAC said %d while the ledger was open, but the writer saw adds acknowledged only up to %d",
				l.id, lac, acked)
		}
	}
	lost0 := r.Report.lostCount()
	entries, changes := 0, 0
	for _, l := range all {
		res := checkLedger(ctx, r, c, l.written())
		entries += int(res.LastEntryID + 1)
		changes += max(0, res.Segments-1)
	}
	r.Report.Figure("ensemble-changes", "%d", changes)
	r.Report.Figure("ledgers", "%d", len(all))
	r.Report.Figure("entries", "%d", entries)
	r.Report.Figure("lost-acked", "%d", r.Report.lostCount()-lost0)
	st.mu.Lock()
	defer st.mu.Unlock()
	r.Report.Figure("regressed", "%d", st.regressed)
	r.Report.Figure("reads-unavailable-then-retried", "%d", st.unavailable)
	r.Report.Figure("wiped-refused", "%d", st.refusals)
	r.Report.Figure("races", "%d(writer-fenced=%d)", st.races, st.raceFenced)
	bookieDrops(r.Bookies).Report(r.Report)
	st.restarts.mu.Lock()
	t := slices.Clone(st.restarts.times)
	st.restarts.mu.Unlock()
	if len(t) > 0 {
		slices.Sort(t)
		r.Report.Figure("restart", "%s/%s", roundMs(t[len(t)/2]), roundMs(t[len(t)-1]))
	}
}

// lostCount returns the acknowledged writes found lost so far.
func (r *Report) lostCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}
