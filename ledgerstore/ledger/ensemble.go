package ledger

import (
	"errors"
	"fmt"
	"slices"

	"keeper/internal/invariants"
)

// startChange proposes an ensemble change replacing the failed bookies
// (docs/bookkeeper-protocol.md §2.3). The LAC is frozen from here until the change is committed:
// drain does nothing while w.change is set.
func (w *Writer) startChange() {
	if w.write != nil {
		// The close is being written: nothing is pending, so there is
		// nothing to re-send; the failed bookie no longer matters.
		w.failed = nil
		return
	}
	proposed, moot, err := w.proposeChange(w.md)
	if err != nil {
		w.fail(err)
		return
	}
	if moot {
		w.failed = nil
		return
	}
	w.change = &proposed
	w.logger.Info("ensemble change", "ledger", w.ledgerID, "failed", w.failed,
		"from", proposed.LastSegment().FirstEntryID, "ensemble", proposed.LastSegment().Bookies)
	if w.recovery {
		// In recovery the metadata is IN_RECOVERY: changes stay local and
		// are folded into the closing write (docs/bookkeeper-protocol.md §4.1 step 6).
		w.commitChange(proposed)
		return
	}
	w.requestWrite(writeChange, proposed)
}

// proposeChange returns base with the failed bookies of its last ensemble
// replaced, in a segment starting at LAC+1 (replacing the last segment if
// it starts there). moot is true when none of the failed bookies is in the
// last ensemble any more.
func (w *Writer) proposeChange(base Metadata) (md Metadata, moot bool, err error) {
	last := base.LastSegment()
	var positions []int
	for pos, b := range last.Bookies {
		if slices.Contains(w.failed, b) {
			positions = append(positions, pos)
		}
	}
	if len(positions) == 0 {
		return Metadata{}, true, nil
	}
	// Bookies that failed on this writer are quarantined: chosen only if
	// nothing else is left (as in the Java client).
	ensemble, adheres, err := w.policy.ReplaceBookies(base.WriteQuorum, last.Bookies, positions, w.bookies,
		w.quarantined, w.rng)
	if errors.Is(err, ErrNotEnoughBookies) {
		ensemble, adheres, err = w.policy.ReplaceBookies(base.WriteQuorum, last.Bookies, positions, w.bookies, nil, w.rng)
	}
	if err != nil {
		return Metadata{}, false, fmt.Errorf("ledger %d: replace %v: %w", w.ledgerID, w.failed, err)
	}
	if !adheres {
		w.ready.Stats.NotAdhering++
	}
	if !adheres && len(w.bookies.Racks) > 0 {
		w.logger.Warn("new ensemble does not adhere to the placement policy", "ledger", w.ledgerID,
			"ensemble", ensemble)
	}
	start := w.lac + 1
	if start < last.FirstEntryID {
		return Metadata{}, false, fmt.Errorf("%w: ledger %d: last segment starts at %d, beyond LAC+1 = %d",
			ErrMetadataConflict, w.ledgerID, last.FirstEntryID, start)
	}
	md = base.Clone()
	if start == last.FirstEntryID {
		md.Segments[len(md.Segments)-1].Bookies = ensemble
	} else {
		md.Segments = append(md.Segments, Segment{FirstEntryID: start, Bookies: ensemble})
	}
	return md, false, nil
}

// commitChange adopts md, whose ensemble change is now stored (or local,
// in recovery). Entries still pending are re-sent to the replaced positions
// only; acknowledgements from the bookies that left those positions no
// longer count (docs/bookkeeper-protocol.md §2.3 step 4). Then completions resume, and bookies
// that failed meanwhile start the next change.
func (w *Writer) commitChange(md Metadata) {
	old := w.ensemble
	w.md, w.ensemble = md, md.LastSegment().Bookies
	w.change = nil
	w.failed = slices.DeleteFunc(w.failed, func(b BookieID) bool { return !slices.Contains(w.ensemble, b) })
	for _, pa := range w.pending {
		invariants.Assertf(pa.entryID >= md.LastSegment().FirstEntryID,
			"ledger %d: pending entry %d below the new segment at %d", w.ledgerID, pa.entryID, md.LastSegment().FirstEntryID)
		for pos := range w.ensemble {
			if old[pos] != w.ensemble[pos] {
				pa.sent[pos] = false
			}
		}
		w.send(pa)
	}
	w.drain()
	if len(w.failed) > 0 && w.err == nil {
		w.startChange()
	}
}

// HandleMetadataWritten reports that the metadata write in flight landed
// with the given new version.
func (w *Writer) HandleMetadataWritten(version int64) {
	if w.write == nil || w.done {
		return
	}
	md := w.write.md
	md.Version = version
	w.write = nil
	switch {
	case md.State == StateClosed:
		w.logger.Info("ledger closed", "ledger", w.ledgerID, "last", md.LastEntryID, "length", md.Length)
		w.finish(md, nil)
	case w.err != nil:
		// The change landed after the writer failed: nothing to resend.
		w.md, w.ensemble, w.change = md, md.LastSegment().Bookies, nil
		w.maybeClose()
	default:
		w.commitChange(md)
	}
}

// HandleMetadata feeds the ledger's current metadata: the answer to a
// metadata write that did not land (a version conflict, or an unknown
// outcome such as a lost connection or an expired session: the driver
// re-reads and passes what is stored), or a change the driver's watch
// noticed. The writer decides again from what is stored: a write of its own
// that landed after all is treated as written; CLOSED or IN_RECOVERY mean
// another client recovered the ledger, which fences this writer.
func (w *Writer) HandleMetadata(current Metadata) {
	if w.done {
		return
	}
	if w.write != nil && sameContent(current, w.write.md) {
		w.HandleMetadataWritten(current.Version)
		return
	}
	switch {
	case current.State == StateClosed:
		w.write = nil
		w.failPending(fmt.Errorf("%w: closed by another client at entry %d", ErrLedgerClosed, current.LastEntryID))
		if w.closing {
			w.closedElsewhere(current)
		}
	case current.State == StateInRecovery && !w.recovery:
		w.write = nil
		w.failPending(fmt.Errorf("%w: metadata is IN_RECOVERY", ErrLedgerFenced))
		if w.closing {
			w.finish(current, w.err)
		}
	case w.write == nil:
		// A watch notification with nothing of ours in flight.
	case w.write.kind == writeChange:
		w.write = nil
		w.rebaseChange(current)
	default:
		w.write = nil
		w.rebaseClose(current)
	}
}

// closedElsewhere ends a Close that found the ledger already closed:
// success if at the same point (close is idempotent), else ErrLedgerClosed.
func (w *Writer) closedElsewhere(current Metadata) {
	if current.LastEntryID == w.lac && current.Length == w.lacLength {
		w.finish(current, nil)
		return
	}
	w.finish(current, fmt.Errorf("%w: stored end is entry %d (length %d), this writer's LAC %d (length %d)",
		ErrLedgerClosed, current.LastEntryID, current.Length, w.lac, w.lacLength))
}

// rebaseChange retries an ensemble change on top of the stored metadata,
// which is still OPEN (or IN_RECOVERY, in recovery mode).
func (w *Writer) rebaseChange(current Metadata) {
	if w.err != nil {
		w.md, w.ensemble, w.change = current, current.LastSegment().Bookies, nil
		w.maybeClose()
		return
	}
	proposed, moot, err := w.proposeChange(current)
	switch {
	case err != nil:
		w.fail(err)
	case moot:
		w.commitChange(current)
	default:
		w.change = &proposed
		w.requestWrite(writeChange, proposed)
	}
}

// rebaseClose retries a close on top of the stored metadata.
func (w *Writer) rebaseClose(current Metadata) {
	md := current.Clone()
	if w.recovery {
		// Our segments are the stored ones plus local changes; they still
		// apply only if the stored segments are those recovery started from.
		if !sameSegments(current.Segments, w.baseSegments) {
			w.finish(current, fmt.Errorf("%w: ledger %d segments changed during recovery", ErrMetadataConflict, w.ledgerID))
			return
		}
		md.Segments = w.md.Clone().Segments
	} else if last := current.LastSegment(); last.FirstEntryID > w.lac+1 {
		w.finish(current, fmt.Errorf("%w: ledger %d has a segment at %d beyond LAC %d",
			ErrMetadataConflict, w.ledgerID, last.FirstEntryID, w.lac))
		return
	}
	md.State, md.LastEntryID, md.Length = StateClosed, w.lac, w.lacLength
	w.md.Version = current.Version
	w.requestWrite(writeClose, md)
}
