package ledger

import (
	"fmt"
	"math"
	"slices"

	"keeper/ledgerstore/bkproto"
)

// startBatch starts the next entries as one batch read, once at least half
// the read window is free (or nothing is being read), so that batches stay
// large. The batch is asked of the first bookie of the first entry's write
// set and stops at the end of that entry's segment, where the bookies
// change. Each entry still has its own fetch, whose first request the
// batch stands for: the other replicas are asked as for a single read
// (after an answer that is not a valid copy, or SpeculativeTicks of
// silence).
func (r *Reader) startBatch() {
	room := min(r.maxOutstanding-(r.nextStart-r.next), r.last+1-r.nextStart)
	if room <= 0 || (r.nextStart > r.next && room < max(1, r.maxOutstanding/2)) {
		return
	}
	from := r.nextStart
	for i, s := range r.md.Segments {
		if i+1 < len(r.md.Segments) && s.FirstEntryID <= from && from < r.md.Segments[i+1].FirstEntryID {
			room = min(room, r.md.Segments[i+1].FirstEntryID-from)
		}
	}
	room = min(room, math.MaxInt32)
	b := r.md.WriteSetBookies(from)[0]
	for e := from; e < from+room; e++ {
		ws := r.md.WriteSetBookies(e)
		i := slices.Index(ws, b)
		ws[0], ws[i] = ws[i], ws[0] // the batch's bookie is the one asked first
		f := newFetch(e, ws)
		f.asked[0], f.next = true, 1
		r.fetches[e] = f
	}
	r.nextStart += room
	r.ready.Reads = append(r.ready.Reads, ReadRequest{Bookie: b, Kind: ReadEntry, LedgerID: r.ledgerID, EntryID: from,
		BatchMaxCount: int32(room), BatchMaxSize: r.batchMaxSize})
}

// handleBatch takes the answer to a batch read as its bookie's answers for
// each entry of the batch, as Recovery.handleBatch does: each entry it
// carries is verified as that entry's read, an entry past a shorter batch
// is asked of the same bookie alone, and a failed batch is each entry's
// failed read. No answer, or a bad request, turns batching off.
func (r *Reader) handleBatch(req ReadRequest, reply ReadReply) {
	var bodies [][]byte
	if reply.Status == bkproto.StatusCode_EOK {
		var err error
		if bodies, err = bkproto.V2BatchEntries(reply.Body); err != nil {
			reply = ReadReply{Status: NoResponse}
		}
	}
	switch reply.Status {
	case NoResponse, bkproto.StatusCode_EBADREQ, bkproto.StatusCode_EBADVERSION:
		r.batchMaxSize = 0
	}
	for k := range int64(req.BatchMaxCount) {
		e := req.EntryID + k
		f := r.fetches[e]
		if r.done || f == nil {
			continue
		}
		i := f.outstanding(req.Bookie)
		if i < 0 {
			continue
		}
		one := reply
		switch {
		case reply.Status == bkproto.StatusCode_EOK && k < int64(len(bodies)):
			one = ReadReply{Status: bkproto.StatusCode_EOK, EntryID: e, Body: bodies[k]}
		case reply.Status == bkproto.StatusCode_EOK || (k > 0 && isNegative(reply.Status)):
			r.emit(req.Bookie, e, false) // the batch said nothing of e
			continue
		}
		if f.reply(i, one, r.dec.decode, r.emit, &r.ready.Stats) {
			r.finish(fmt.Errorf("%w: ledger %d entry %d from %v", ErrEntryUnavailable, r.ledgerID, f.entryID, f.bookies))
			return
		}
	}
	r.deliver()
}
