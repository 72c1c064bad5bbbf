package ledgerclient

import (
	"context"
	"fmt"
	"iter"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// Tail follows the ledger from entry from on: it yields every entry
// exactly once, in order, as the LAC moves past it (long polls to the
// bookies of the last ensemble, docs/bookkeeper-protocol.md §3.3), and ends after the last entry
// once the ledger is closed. A watch on the metadata sees the close and
// ensemble changes. Breaking out of the loop stops tailing. An error is
// yielded once, as the last element: ctx's error, or why the ledger can no
// longer be read (ErrNoSuchLedger if it was deleted).
//
// Bookies learn that an entry is acknowledged only from a later entry, so
// the last entry of a ledger whose writer has gone quiet is yielded only
// once the ledger is closed, unless the writer sends explicit LACs
// (Config.ExplicitLACInterval): then it comes within about two intervals.
//
// The iteration drives its state machine on the caller's goroutine: while
// the loop body runs, nothing is read.
func (h *ReadHandle) Tail(ctx context.Context, from int64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		md, smd, lac := h.snapshot()
		cfg := h.c.cfg
		t, err := ledger.NewTailer(ledger.TailerConfig{LedgerID: h.id, Metadata: md, StartEntryID: from, LAC: lac,
			LongPollMillis: cfg.LongPollTimeout.Milliseconds(), SpeculativeTicks: cfg.ticks(cfg.SpeculativeReadTimeout),
			RetryTicks: cfg.ticks(cfg.RetryInterval)})
		if err != nil {
			yield(Entry{}, err)
			return
		}
		d, err := h.c.newDriver(ctx, h.id, t, smd, metadata.Version(md.Version))
		if err != nil {
			yield(Entry{}, err)
			return
		}
		d.watch = h.c.store.Watch(ctx, h.id)
		stopped := false
		d.deliver = func(rd *ledger.Ready) bool {
			for _, e := range rd.Entries {
				h.learnLAC(e.EntryID)
				if !yield(e, nil) {
					stopped = true
					return true
				}
			}
			if rd.Done != nil {
				if rd.Done.Err != nil {
					stopped = true
					yield(Entry{}, fmt.Errorf("ledgerclient: tail ledger %d: %w", h.id, rd.Done.Err))
				} else {
					h.learn(rd.Done.Metadata, d.stored)
				}
				return true
			}
			return false
		}
		if err := d.run(); err != nil && !stopped {
			yield(Entry{}, fmt.Errorf("ledgerclient: tail ledger %d: %w", h.id, err))
		}
	}
}
