package chaos

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// wipeChoice picks scenario 13's second victim: the running bookie, in a
// rack other than the lost one's, whose write sets hold the most bytes.
// Its rack then still has its other bookie to take its place, and the
// lost bookie's rack its survivor, so every ensemble of three racks keeps
// a replacement that keeps the rule (autorecovery_racks.go).
func wipeChoice(ctx context.Context, r *LedgerRun, c *ledgerclient.Client, ls []*WrittenLedger, lost ledger.BookieID,
	racks map[ledger.BookieID]string) (*Bookie, int64) {
	var best *Bookie
	var held int64 = -1
	for _, i := range r.perm(len(r.Bookies.List)) {
		b := r.Bookies.List[i]
		id := ledger.BookieID(b.ID)
		if id == lost || racks[id] == racks[lost] || !b.Running() {
			continue
		}
		if n := heldBytes(ctx, c, ls, id); n > held {
			best, held = b, n
		}
	}
	return best, held
}

// wipedShares says, by ledger, which segments named the wiped bookie at
// the wipe and how many entries had been sent to the ledger then: the
// entries the bookie may have held.
type wipedShares map[int64]wipedShare

type wipedShare struct {
	firsts []int64 // first entry ids of the segments naming the bookie
	sent   int64   // entries sent to the ledger before the wipe
}

// segmentsNaming returns, by ledger, the segments that name b now.
func segmentsNaming(ctx context.Context, c *ledgerclient.Client, ls []*WrittenLedger, b ledger.BookieID) wipedShares {
	out := wipedShares{}
	for _, wl := range ls {
		md, err := c.Stat(ctx, wl.ID)
		if err != nil {
			continue
		}
		for _, seg := range md.Segments {
			if slices.Contains(seg.Bookies, b) {
				sh := out[wl.ID]
				sh.firsts, sh.sent = append(sh.firsts, seg.FirstEntryID), int64(len(wl.Sent))
				out[wl.ID] = sh
			}
		}
	}
	return out
}

// wipeBookie does what an operator does to a bookie whose disks failed:
// stop it (SIGKILL: the disk is gone, nothing is flushed), put in empty
// journal and ledger directories, delete its cookie from the metadata
// store (BookKeeper's `bookieformat -deleteCookie`; without that the
// bookie refuses to start, which scenario 10 checks), and start it. It
// comes back under the same id with a new cookie and none of its entries.
func wipeBookie(ctx context.Context, r *LedgerRun, store *metadata.Store, b *Bookie) error {
	r.Bookies.Kill(b)
	for _, d := range []string{b.JournalDir, b.LedgerDir} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := autorecovery.DeleteCookie(ctx, store, ledger.BookieID(b.ID)); err != nil {
		return err
	}
	return r.Bookies.Start(b)
}

// stillNaming returns the segments of before that still name b where
// b's share holds entries sent before the wipe: entries of which the wiped
// bookie has lost its copy, neither copied back nor its place given to
// another bookie. A segment where b's write sets hold none of those
// entries (a short last segment, say) needs no repair, and neither the
// auditor's check nor BookKeeper's would mark it.
func stillNaming(ctx context.Context, c *ledgerclient.Client, before wipedShares, b ledger.BookieID) ([]string, error) {
	var out []string
	ids := make([]int64, 0, len(before))
	for id := range before {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		md, err := c.Stat(ctx, id)
		if err != nil {
			return nil, err
		}
		for i, seg := range md.Segments {
			if !slices.Contains(before[id].firsts, seg.FirstEntryID) || !slices.Contains(seg.Bookies, b) {
				continue
			}
			last := before[id].sent - 1
			switch {
			case i+1 < len(md.Segments):
				last = min(last, md.Segments[i+1].FirstEntryID-1)
			case md.State == ledger.StateClosed:
				last = min(last, md.LastEntryID)
			}
			held := 0
			for e := seg.FirstEntryID; e <= last; e++ {
				if slices.Contains(md.WriteSetBookies(e), b) {
					held++
				}
			}
			if held > 0 {
				out = append(out, fmt.Sprintf("%d@%d (%d entries)", id, seg.FirstEntryID, held))
			}
		}
	}
	return out, nil
}

// arBound is how long full replication may take after a fault, as the
// scenario states it: the time until the auditor can know (the lost
// bookie's session timeout, or the periodic check's interval for a wiped
// one), lostBookieRecoveryDelay, and arCopySlack for the copies and the
// swaps. The figures of a quiet machine are a few seconds to some tens
// of seconds (docs/autorecovery.md, "Measured"); a run over the bound is
// logged and shown as a figure, and counts as a violation only past
// arBoundFactor times the bound, so that a machine shared with other
// builds does not fail the run while a stuck worker or an auditor that
// never notices does.
func arBound(notice time.Duration) time.Duration { return notice + arLostDelay + arCopySlack }

// awaitReplicated polls until done holds with nothing marked, from start,
// and returns how long it took and how long since the first marker seen.
// Past the stated bound it says so; past arBoundFactor times it, it is a
// violation and it stops waiting.
func awaitReplicated(ctx context.Context, r *LedgerRun, mgr *autorecovery.Manager, start time.Time, what string,
	bound time.Duration, done func() (bool, string)) (took, copying time.Duration) {
	var firstMark time.Time
	over := false
	for {
		ok, state := done()
		marked, merr := mgr.List(ctx)
		if len(marked) > 0 && firstMark.IsZero() {
			firstMark = time.Now()
		}
		if ok && merr == nil && len(marked) == 0 {
			break
		}
		if el := time.Since(start); el > bound && !over {
			over = true
			r.Logf("%s: not fully replicated within the stated bound %v: %s, %d marked", what, bound, state, len(marked))
		}
		if time.Since(start) > arBoundFactor*bound {
			r.Report.Violate("bk-autorecovery", "%s: not fully replicated %v after it (%d times the bound %v): %s, %d marked",
				what, arBoundFactor*bound, arBoundFactor, bound, state, len(marked))
			break
		}
		time.Sleep(arPoll)
	}
	took = time.Since(start)
	if !firstMark.IsZero() {
		copying = time.Since(firstMark)
	}
	return took, copying
}
