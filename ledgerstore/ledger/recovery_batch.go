package ledger

import (
	"math"
	"slices"

	"keeper/ledgerstore/bkproto"
)

// batching reports whether forward reads go in batches: asked for, not
// turned off, and every bookie holds every entry (E = Qw), so that one
// bookie can answer for a run of entries (BookKeeper's client batches
// only then too).
func (r *Recovery) batching() bool {
	return r.batchMaxSize > 0 && r.placement.EnsembleSize == r.placement.WriteQuorum
}

// readForwardBatch starts the next entries as one batch read from the
// first bookie of the first one's write set, once at least half the read
// window is free (or nothing is being read), so that batches stay large.
// Each entry still has its own quorum read: the batch stands for its
// request to that bookie, and the other bookies are asked as for a single
// read (after an answer that is not a valid copy, or RetryTicks of
// silence).
func (r *Recovery) readForwardBatch() {
	if r.phase != phaseForward || r.nextRead >= r.end || !r.reAddRoom() {
		return
	}
	room := r.readAhead - (r.nextRead - r.nextAdd)
	if room <= 0 || (r.nextRead > r.nextAdd && room < max(1, r.readAhead/2)) {
		return
	}
	if r.end != math.MaxInt64 {
		room = min(room, r.end-r.nextRead)
	}
	room = min(room, math.MaxInt32)
	from := r.nextRead
	b := r.fenced.Bookies[r.placement.Position(from, 0)] // the first bookie of from's write set
	for e := from; e < from+room; e++ {
		q := r.forwardRead(e)
		q.idleFrom(0)
		q.state[slices.Index(q.bookies, b)] = slotAsked
		r.reads[e] = q
	}
	r.nextRead += room
	r.ready.Reads = append(r.ready.Reads, ReadRequest{
		Bookie:        b,
		Kind:          ReadEntry,
		LedgerID:      r.ledgerID,
		EntryID:       from,
		Fence:         true,
		MasterKey:     r.masterKey,
		BatchMaxCount: int32(room),
		BatchMaxSize:  r.batchMaxSize,
	})
}

// handleBatch takes the answer to a batch read as the answers of its
// bookie for each entry of the batch: each entry it carries as that
// entry's read (verified like any other: a bad copy proves nothing), and a
// failed batch as each entry's failed read. An entry beyond the end of a
// shorter batch (the size bound, or a gap at the bookie) is asked of the
// same bookie alone: the batch said nothing about it. A batch with no
// answer, or one the bookie refused as a bad request (a bookie before
// 4.17 drops the connection on the opcode), turns batching off, as
// BookKeeper's client stops batching on such a ledger.
func (r *Recovery) handleBatch(req ReadRequest, reply ReadReply) {
	var bodies [][]byte
	if reply.Status == bkproto.StatusCode_EOK {
		var err error
		if bodies, err = bkproto.V2BatchEntries(reply.Body); err != nil {
			reply = ReadReply{Status: NoResponse}
		}
	}
	switch reply.Status {
	case NoResponse, bkproto.StatusCode_EBADREQ, bkproto.StatusCode_EBADVERSION:
		if r.batchMaxSize > 0 {
			r.logger.Info("recovery reads on without batches", "ledger", r.ledgerID, "bookie", req.Bookie,
				"status", reply.Status)
		}
		r.batchMaxSize = 0
	}
	for k := range int64(req.BatchMaxCount) {
		e := req.EntryID + k
		q := r.reads[e]
		if q == nil {
			continue // found, or beyond the end, already
		}
		i := q.outstanding(req.Bookie)
		if i < 0 {
			continue
		}
		switch {
		case reply.Status == bkproto.StatusCode_EOK && k < int64(len(bodies)):
			r.handleForward(e, i, ReadReply{Status: bkproto.StatusCode_EOK, EntryID: e, Body: bodies[k]})
		case reply.Status == bkproto.StatusCode_EOK || (k > 0 && isNegative(reply.Status)):
			r.ask(req.Bookie, e)
		default:
			r.handleForward(e, i, reply)
		}
	}
}
