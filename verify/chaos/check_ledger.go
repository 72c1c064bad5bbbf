package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
)

// WrittenLedger is what a writer knows of a ledger it wrote: the payload
// of every entry it sent (entry ids are dense and follow the order of
// the appends) and the highest entry acknowledged to it.
type WrittenLedger struct {
	ID       int64
	Password []byte
	// Sent holds the payloads in append order: entry i is Sent[i].
	Sent [][]byte
	// Acked is the highest acknowledged entry id (-1: none); every entry
	// up to it was acknowledged.
	Acked int64
}

// LedgerCheck is the outcome of checking one closed ledger.
type LedgerCheck struct {
	LastEntryID int64
	Truncated   bool // an acknowledged entry lies beyond the close point
	Segments    int
}

// checkLedger judges a ledger after its writer is gone (docs/fault-model.md, "Checks",
// docs/bookkeeper-protocol.md §1.6): it must be closed (the liveness half), at or past
// every acknowledged entry (no divergence: I6), every entry up to the
// close must read back through the client with the payload sent as that
// entry (read order = write order, I1), and every entry must be stored at
// no fewer than Qa bookies of its write set, read from each bookie
// directly (I2). Violations go to the report under check names starting
// with "bk-".
func checkLedger(ctx context.Context, r *LedgerRun, c *ledgerclient.Client, w *WrittenLedger) LedgerCheck {
	out := LedgerCheck{LastEntryID: -2}
	h, err := c.OpenNoRecovery(ctx, w.ID, w.Password)
	if err != nil {
		r.Report.Violate("bk-liveness", "ledger %d: open for the check: %v", w.ID, err)
		return out
	}
	md := h.Metadata()
	out.Segments = len(md.Segments)
	if md.State != ledger.StateClosed {
		r.Report.Violate("bk-liveness", "ledger %d is %v after its writer ended and recovery ran", w.ID, md.State)
		return out
	}
	out.LastEntryID = md.LastEntryID
	if md.LastEntryID < w.Acked {
		out.Truncated = true
		r.Report.Lost("ledger %d closed at entry %d but entries up to %d were acknowledged (divergence: %d acked entries cut off)",
			w.ID, md.LastEntryID, w.Acked, w.Acked-md.LastEntryID)
	}
	if md.LastEntryID >= int64(len(w.Sent)) {
		r.Report.Violate("bk-order", "ledger %d closed at entry %d, beyond the %d entries ever sent", w.ID,
			md.LastEntryID, len(w.Sent))
	}
	checkEntries(ctx, r, h, w, md.LastEntryID)
	checkReplicas(ctx, r, md, w, md.LastEntryID)
	return out
}

// checkEntries reads entries 0..last through the client.
func checkEntries(ctx context.Context, r *LedgerRun, h *ledgerclient.ReadHandle, w *WrittenLedger, last int64) {
	const batch = 200
	for first := int64(0); first <= last; first += batch {
		to := min(last, first+batch-1)
		entries, err := h.Read(ctx, first, to)
		if err != nil {
			n := to - first + 1
			if first <= w.Acked {
				r.Report.Lost("ledger %d: entries %d..%d unreadable: %v", w.ID, first, to, err)
			} else {
				r.Report.Violate("bk-readable", "ledger %d: entries %d..%d (inside the closed ledger, %d of them) unreadable: %v",
					w.ID, first, to, n, err)
			}
			continue
		}
		for i, e := range entries {
			want := first + int64(i)
			switch {
			case e.EntryID != want:
				r.Report.Violate("bk-order", "ledger %d: read %d..%d returned entry %d at position %d", w.ID, first, to,
					e.EntryID, i)
			case want < int64(len(w.Sent)) && !bytes.Equal(e.Payload, w.Sent[want]):
				r.Report.Violate("bk-order", "ledger %d entry %d holds %q, but the writer sent %q as that entry",
					w.ID, want, clip(e.Payload), clip(w.Sent[want]))
			}
		}
	}
}

// checkReplicas reads every entry 0..last from each bookie of its write
// set directly and counts the copies with the right payload: at least Qa.
func checkReplicas(ctx context.Context, r *LedgerRun, md ledger.Metadata, w *WrittenLedger, last int64) {
	conns := map[ledger.BookieID]*bookierpc.Client{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for _, s := range md.Segments {
		for _, b := range s.Bookies {
			if _, ok := conns[b]; ok {
				continue
			}
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := bookierpc.Dial(dctx, string(b))
			cancel()
			if err == nil {
				conns[b] = c
			}
		}
	}
	macKey := bkproto.MacKey(w.Password)
	var mu sync.Mutex
	short := 0
	var examples []string
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for e := int64(0); e <= last; e++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var want []byte
			if e < int64(len(w.Sent)) {
				want = w.Sent[e]
			}
			ws := md.WriteSetBookies(e)
			good, why := 0, []string{}
			for _, b := range ws {
				err := readCopy(ctx, conns[b], w.ID, e, md.DigestType, macKey[:], want)
				if err == nil {
					good++
				} else {
					why = append(why, fmt.Sprintf("%s: %v", b, err))
				}
			}
			if good < md.AckQuorum {
				mu.Lock()
				short++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("entry %d: %d good copies %v", e, good, why))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if short > 0 {
		r.Report.Violate("bk-quorum", "ledger %d: %d of its %d entries are stored at fewer than Qa=%d bookies of their write sets: %v",
			w.ID, short, last+1, md.AckQuorum, examples)
	}
}

// readCopy reads one entry from one bookie and checks its payload.
func readCopy(ctx context.Context, c *bookierpc.Client, ledgerID, entryID int64, dt bkproto.DigestType, macKey,
	want []byte) error {
	if c == nil {
		return errors.New("no connection")
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := c.Read(rctx, ledgerID, entryID)
	if err != nil {
		return err
	}
	e, err := bkproto.DecodeEntry(resp.GetBody(), dt, macKey, ledgerID, entryID)
	if err != nil {
		return err
	}
	if want != nil && !bytes.Equal(e.Payload, want) {
		return fmt.Errorf("payload %q, want %q", clip(e.Payload), clip(want))
	}
	return nil
}

// clip shortens a payload for a message.
func clip(b []byte) string {
	if len(b) > 24 {
		return string(b[:24]) + "…"
	}
	return string(b)
}
