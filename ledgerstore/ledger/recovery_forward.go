package ledger

import (
	"errors"
	"fmt"
	"math"

	"keeper/internal/invariants"
	"keeper/ledgerstore/bkproto"
)

// startForward begins reading forward from LAC_r + 1, where LAC_r is the
// greatest header LAC the fence answers carried, floored at the first entry
// of the last ensemble − 1 (docs/bookkeeper-protocol.md §4.1 step 4; the floor is the fix for
// #2615: an empty last ensemble must not send recovery into older,
// immutable segments).
func (r *Recovery) startForward() {
	r.phase = phaseForward
	r.lacR = max(r.maxLAC, r.fenced.FirstEntryID-1)
	r.logger.Info("ledger fenced", "ledger", r.ledgerID, "lac", r.lacR)
	r.w = newWriter(WriterConfig{
		LedgerID: r.ledgerID,
		Metadata: r.md,
		Bookies:  r.bookies,
		Rand:     r.rng,
		Policy:   r.policy,
		Logger:   r.logger,
	}, r.lacR, 0)
	r.w.recovery, r.w.stampLAC = true, r.lacR
	r.w.baseSegments = r.md.Clone().Segments
	r.reads, r.found = map[int64]*quorumRead{}, map[int64]bkproto.Entry{}
	r.nextRead, r.nextAdd = r.lacR+1, r.lacR+1
	if r.lacR >= 0 {
		// The anchor read learns the ledger's length at LAC_r, which is the
		// closing length if nothing lies beyond it. LAC_r may sit in an
		// earlier segment (the floor), so it goes to that segment's write set.
		r.anchor = newQuorumRead(r.lacR, r.md.WriteSetBookies(r.lacR))
		for _, b := range r.anchor.bookies {
			r.ask(b, r.lacR)
		}
	}
	r.readForward()
}

// readForward starts reads of the next entries, up to ReadAheadEntries
// beyond the next entry to re-add, while re-adds keep up.
func (r *Recovery) readForward() {
	if r.batching() {
		r.readForwardBatch()
		return
	}
	for r.phase == phaseForward && r.nextRead < r.end && r.nextRead-r.nextAdd < r.readAhead && r.reAddRoom() {
		e := r.nextRead
		r.nextRead++
		invariants.Assertf(e >= r.fenced.FirstEntryID, "ledger %d: recovery read of entry %d below the last segment at %d",
			r.ledgerID, e, r.fenced.FirstEntryID)
		q := r.forwardRead(e)
		r.reads[e] = q
		// One valid copy recovers an entry, so the first bookie of its
		// write set is asked alone, as BookKeeper's sequential recovery
		// read does; the others are asked once it answers anything else
		// (wakeRest) or stays silent for RetryTicks (Tick).
		q.idleFrom(1)
		r.ask(q.bookies[0], e)
	}
}

// wakeRest asks the bookies of q's write set not asked yet.
func (r *Recovery) wakeRest(q *quorumRead) {
	for _, i := range q.wake() {
		r.ask(q.bookies[i], q.entryID)
	}
}

// forwardRead returns a new read of entry e from its write set in the
// last segment, started now, every slot asked. It reuses the read of an
// entry already found (spare), so that once the window is full reading
// forward allocates no read per entry.
func (r *Recovery) forwardRead(e int64) *quorumRead {
	var q *quorumRead
	if n := len(r.spare); n > 0 {
		q, r.spare = r.spare[n-1], r.spare[:n-1]
	} else {
		q = &quorumRead{}
	}
	q.reset(e, r.placement.WriteQuorum)
	for k := range q.bookies {
		q.bookies[k] = r.fenced.Bookies[r.placement.Position(e, k)]
	}
	q.sentAt = r.now
	return q
}

// handleAnchor takes an answer to the read of entry LAC_r. That entry was
// acknowledged, so a coverage quorum of negatives means lost data: recovery
// stops rather than close the ledger short.
func (r *Recovery) handleAnchor(i int, reply ReadReply) {
	q := r.anchor
	switch {
	case reply.Status == bkproto.StatusCode_EOK:
		e, err := bkproto.DecodeEntry(reply.Body, r.md.Digest(), r.macKey, r.ledgerID, q.entryID)
		if err != nil {
			r.ready.Stats.DigestMismatches++
			q.unknown(i, r.now+r.retryTicks)
			return
		}
		r.anchor, r.anchorLength = nil, e.Length
		r.maybeClose()
	case isNegative(reply.Status):
		q.negative(i)
		if r.placement.EnoughNegatives(q.negatives) {
			r.fail(fmt.Errorf("%w: ledger %d entry %d (LAC %d)", ErrEntryMissing, r.ledgerID, q.entryID, r.lacR))
		}
	case reply.Status == bkproto.StatusCode_EUA:
		r.fail(fmt.Errorf("ledger %d: read of entry %d at %s: %w", r.ledgerID, q.entryID, q.bookies[i], bkproto.ErrUnauthorized))
	default:
		q.unknown(i, r.now+r.retryTicks)
	}
}

// handleForward takes an answer to a forward read of entry e (docs/bookkeeper-protocol.md §4.1
// step 5): one valid copy means found; a coverage quorum of explicit
// negatives means absent; anything else is unknown and asked again.
func (r *Recovery) handleForward(e int64, i int, reply ReadReply) {
	q := r.reads[e]
	switch {
	case reply.Status == bkproto.StatusCode_EOK:
		entry, err := bkproto.DecodeEntry(reply.Body, r.md.Digest(), r.macKey, r.ledgerID, e)
		if err != nil {
			r.ready.Stats.DigestMismatches++
			q.unknown(i, r.now+r.retryTicks) // a bad copy proves nothing (pitfall 1, 10)
			r.wakeRest(q)
			return
		}
		delete(r.reads, e)
		// Nothing holds q once it has left reads (answers find their read
		// by entry id), so the next forward read may reuse it.
		r.spare = append(r.spare, q)
		r.found[e] = entry
		r.feed()
	case isNegative(reply.Status):
		q.negative(i)
		if r.placement.EnoughNegatives(q.negatives) {
			r.absent(e)
			return
		}
		r.wakeRest(q)
	case reply.Status == bkproto.StatusCode_EUA:
		r.fail(fmt.Errorf("ledger %d: read of entry %d at %s: %w", r.ledgerID, e, q.bookies[i], bkproto.ErrUnauthorized))
	default:
		q.unknown(i, r.now+r.retryTicks)
		r.wakeRest(q)
	}
}

// absent records that entry e was never acknowledged: the ledger ends
// before it. Reads and finds beyond it are dropped.
func (r *Recovery) absent(e int64) {
	r.end = min(r.end, e)
	for id := range r.reads {
		if id >= r.end {
			delete(r.reads, id)
		}
	}
	for id := range r.found {
		if id >= r.end {
			delete(r.found, id)
		}
	}
	r.logger.Info("recovery found the end", "ledger", r.ledgerID, "absent", e)
	r.feed()
}

// feed hands found entries to the writer in entry order, then reads on
// and closes when everything is in.
func (r *Recovery) feed() {
	for r.nextAdd < r.end {
		e, ok := r.found[r.nextAdd]
		if !ok {
			break
		}
		delete(r.found, r.nextAdd)
		r.w.appendRecovered(e.EntryID, e.Length, e.Payload)
		r.nextAdd++
		r.readCount++
	}
	r.absorb()
	r.readForward()
	r.maybeClose()
}

// maybeClose closes once the end is known, every entry before it is handed
// to the writer, and the length at LAC_r is known (docs/bookkeeper-protocol.md §4.1 step 7). The
// writer sends the closing write after its re-adds reach Qa.
func (r *Recovery) maybeClose() {
	if r.phase != phaseForward || r.end == math.MaxInt64 || r.nextAdd < r.end || r.anchor != nil {
		return
	}
	invariants.Assertf(r.w.lap == r.end-1, "ledger %d: recovery closing at %d, re-added up to %d",
		r.ledgerID, r.end-1, r.w.lap)
	if r.w.lap == r.lacR {
		r.w.lacLength, r.w.length = r.anchorLength, r.anchorLength
	}
	r.phase = phaseClosing
	r.w.Close()
	r.absorb()
}

// HandleAdd feeds a bookie's answer to a recovery re-add.
func (r *Recovery) HandleAdd(req AddRequest, status bkproto.StatusCode) {
	if r.w == nil || r.phase == phaseDone {
		return
	}
	r.w.HandleAdd(req, status)
	r.absorb()
	r.readForward()
}

// BookieFailed reports a dead connection to a bookie: re-adds in flight
// to it are given up and, if it is in the (local) ensemble, replaced.
func (r *Recovery) BookieFailed(b BookieID) {
	if r.w == nil || r.phase == phaseDone {
		return
	}
	r.w.BookieFailed(b)
	r.absorb()
}

// absorb moves the writer's work into recovery's Ready. A failed re-add
// fails recovery; the writer's Done ends it.
func (r *Recovery) absorb() {
	wr := r.w.Ready()
	r.ready.Stats.add(wr.Stats)
	for _, c := range wr.Completions {
		if c.Err == nil {
			r.addCount++
		} else {
			// Checked before anything else is passed on: a failed re-add
			// must never let a closing write out.
			r.fail(fmt.Errorf("ledger %d: recovery re-add: %w", r.ledgerID, c.Err))
			return
		}
	}
	if len(r.ready.Adds) == 0 {
		r.ready.Adds = wr.Adds // the writer's batch is ours: take it rather than copy it
	} else {
		r.ready.Adds = append(r.ready.Adds, wr.Adds...)
	}
	if wr.MetadataWrite != nil {
		r.ready.MetadataWrite = wr.MetadataWrite
	}
	if d := wr.Done; d != nil {
		if d.Err != nil && !errors.Is(d.Err, ErrLedgerClosed) {
			r.fail(d.Err)
			return
		}
		r.finish(d.Metadata, nil)
	}
}
