package chaos

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
)

// arReaderDrain bounds how long scenario 13's tailing readers may take to
// finish the writer's last ledger once it is closed.
const arReaderDrain = time.Minute

// tailCheck judges what one tailing reader sees of one ledger, in the
// order it sees it: the LACs it learns and the entries it reads. It is
// what a Pulsar managed-ledger reader relies on: the LAC never goes
// back, an entry read is the one written at its id, and nothing is seen
// past what the writer has sent (a reader may learn a LAC a little ahead
// of the writer's acknowledgement callbacks, since the client moves its
// LAC just before it runs them, but never past an entry not yet sent).
type tailCheck struct {
	ledgerID int64
	maxLAC   int64 // the highest LAC seen so far (-1: none)
	next     int64 // the entry id the reader reads next
	lacs     int   // LACs seen
	reads    int   // entries read
}

func newTailCheck(id int64) *tailCheck { return &tailCheck{ledgerID: id, maxLAC: -1} }

// lac judges a LAC the reader learned while sent entries had been sent;
// it returns what is wrong with it, if anything.
func (t *tailCheck) lac(lac int64, sent int) []string {
	t.lacs++
	var bad []string
	if lac < t.maxLAC {
		bad = append(bad, fmt.Sprintf("ledger %d: LAC %d seen after LAC %d", t.ledgerID, lac, t.maxLAC))
	}
	if lac < t.next-1 {
		bad = append(bad, fmt.Sprintf("ledger %d: LAC %d seen after entry %d was read", t.ledgerID, lac, t.next-1))
	}
	if lac >= int64(sent) {
		bad = append(bad, fmt.Sprintf("ledger %d: LAC %d seen when the writer had sent entries up to %d only",
			t.ledgerID, lac, sent-1))
	}
	t.maxLAC = max(t.maxLAC, lac)
	return bad
}

// entry judges an entry the reader got; sent is what the writer has sent
// to the ledger so far, by entry id.
func (t *tailCheck) entry(id int64, payload []byte, sent [][]byte) []string {
	t.reads++
	var bad []string
	switch {
	case id < t.next:
		bad = append(bad, fmt.Sprintf("ledger %d: entry %d read after entry %d", t.ledgerID, id, t.next-1))
	case id > t.next:
		bad = append(bad, fmt.Sprintf("ledger %d: entry %d read when entry %d was next", t.ledgerID, id, t.next))
	}
	switch {
	case id < 0 || id >= int64(len(sent)):
		bad = append(bad, fmt.Sprintf("ledger %d: entry %d read when the writer had sent entries up to %d only",
			t.ledgerID, id, len(sent)-1))
	case !bytes.Equal(sent[id], payload):
		bad = append(bad, fmt.Sprintf("ledger %d: entry %d read as %q, the writer sent %q", t.ledgerID, id,
			clip(payload), clip(sent[id])))
	}
	t.next = max(t.next, id+1)
	return bad
}

// current returns the ledger being written (nil before the first).
func (w *arWriter) current() *WrittenLedger {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.ledgers) == 0 {
		return nil
	}
	return w.ledgers[len(w.ledgers)-1]
}

// sent returns what the writer has sent to wl so far; the entries
// themselves are never changed once sent.
func (w *arWriter) sent(wl *WrittenLedger) [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return wl.Sent[:len(wl.Sent):len(wl.Sent)]
}

// arReaders are scenario 13's tailing readers: "poll" reads the LAC of
// the writer's current ledger and the entries up to it, as a Pulsar
// managed-ledger reader does; "tail" follows it with long-poll reads
// (Tail). Each opens the ledger without recovery, reads it to its close,
// then moves on to the ledger being written then, throughout the kill and
// the wipe. Every LAC and every entry goes through a tailCheck.
type arReaders struct {
	r  *LedgerRun
	w  *arWriter
	wg sync.WaitGroup

	mu                                  sync.Mutex
	lacs, reads, ledgers, bad, failures int
}

// start runs both readers until ctx ends or, once stop is closed, the
// writer's last ledger is read to its close.
func (rs *arReaders) start(ctx context.Context, c *ledgerclient.Client, stop <-chan struct{}) {
	for _, mode := range []string{"poll", "tail"} {
		rs.wg.Add(1)
		go func() { defer rs.wg.Done(); rs.run(ctx, c, mode, stop) }()
	}
}

func (rs *arReaders) run(ctx context.Context, c *ledgerclient.Client, mode string, stop <-chan struct{}) {
	var done int64 = -1 // the last ledger read to its close
	for ctx.Err() == nil {
		wl := rs.w.current()
		if wl == nil || wl.ID == done {
			select {
			case <-stop:
				return // the writer's last ledger is read
			default:
			}
			sleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		t := newTailCheck(wl.ID)
		var err error
		if mode == "tail" {
			err = rs.tail(ctx, c, wl, t)
		} else {
			err = rs.poll(ctx, c, wl, t)
		}
		rs.mu.Lock()
		rs.lacs += t.lacs
		rs.reads += t.reads
		rs.ledgers++
		rs.mu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				rs.mu.Lock()
				rs.failures++
				rs.mu.Unlock()
				rs.r.Report.Violate("bk-tail", "%s reader, ledger %d, at entry %d: %v", mode, wl.ID, t.next, err)
			}
			return
		}
		done = wl.ID
	}
}

// report files a tailCheck's findings as violations.
func (rs *arReaders) report(mode string, bad []string) {
	if len(bad) == 0 {
		return
	}
	rs.mu.Lock()
	rs.bad += len(bad)
	rs.mu.Unlock()
	for _, b := range bad {
		rs.r.Report.Violate("bk-regress", "%s reader: %s", mode, b)
	}
}

// poll follows wl by reading its LAC and the entries up to it until it is
// closed and read to its end.
func (rs *arReaders) poll(ctx context.Context, c *ledgerclient.Client, wl *WrittenLedger, t *tailCheck) error {
	h, err := c.OpenNoRecovery(ctx, wl.ID, []byte(arPassword))
	if err != nil {
		return fmt.Errorf("open without recovery: %w", err)
	}
	for ctx.Err() == nil {
		lac, err := h.ReadLAC(ctx)
		if err != nil {
			// A bookie being killed or wiped may fail one LAC read; the
			// next poll asks again, and a reader that never gets further
			// is caught by the drain bound.
			sleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		rs.report("poll", t.lac(lac, len(rs.w.sent(wl))))
		if lac >= t.next {
			entries, err := h.Read(ctx, t.next, lac)
			for _, e := range entries {
				rs.report("poll", t.entry(e.EntryID, e.Payload, rs.w.sent(wl)))
			}
			if err != nil {
				return fmt.Errorf("read up to the LAC %d: %w", lac, err)
			}
		}
		if h.Closed() && t.next > h.Metadata().LastEntryID {
			return nil
		}
		if lac < t.next {
			sleepCtx(ctx, 50*time.Millisecond)
		}
	}
	return ctx.Err()
}

// tail follows wl with long-poll reads until it is closed and read to its
// end; the LAC it judges is the handle's after each entry.
func (rs *arReaders) tail(ctx context.Context, c *ledgerclient.Client, wl *WrittenLedger, t *tailCheck) error {
	h, err := c.OpenNoRecovery(ctx, wl.ID, []byte(arPassword))
	if err != nil {
		return fmt.Errorf("open without recovery: %w", err)
	}
	for e, err := range h.Tail(ctx, 0) {
		if err != nil {
			return err
		}
		sent := rs.w.sent(wl)
		rs.report("tail", t.entry(e.EntryID, e.Payload, sent))
		rs.report("tail", t.lac(h.LAC(), len(sent)))
	}
	if md := h.Metadata(); ctx.Err() == nil && (md.State != ledger.StateClosed || t.next <= md.LastEntryID) {
		return fmt.Errorf("tail ended at entry %d of a ledger %v at %d", t.next, md.State, md.LastEntryID)
	}
	return ctx.Err()
}

// finish waits for the readers (at most arReaderDrain after ctx's writer
// stopped) and reports their figures.
func (rs *arReaders) finish(cancel context.CancelFunc) {
	done := make(chan struct{})
	go func() { rs.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(arReaderDrain):
		rs.r.Report.Violate("bk-tail", "readers still reading %v after the writer's last ledger was closed", arReaderDrain)
		cancel()
		<-done
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.r.Report.Figure("tailing readers: ledgers/LACs/entries read", "%d/%d/%d", rs.ledgers, rs.lacs, rs.reads)
	rs.r.Report.Figure("tailing readers: regressions and wrong entries", "%d", rs.bad)
}
