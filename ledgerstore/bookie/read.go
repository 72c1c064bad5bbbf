package bookie

import (
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"keeper/internal/metric"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/entrystore"
	"keeper/ledgerstore/bookie/journal"
)

// readEntry serves READ_ENTRY: a plain read (entryId -1 for the last
// entry), a fencing read, or a long poll for the LAC; and v2's
// BATCH_READ_ENTRY, which comes as a plain or fencing read of its first
// entry and reads the batch where that entry would be read.
func (b *Bookie) readEntry(cl call, h *bkproto.BKPacketHeader, r *bkproto.ReadRequest) {
	start := time.Now()
	read := b.read
	if v2 := cl.v2; v2 != nil && v2.Header.OpCode == bkproto.V2BatchReadEntry {
		read = func(ledgerID, entryID int64) *bkproto.ReadResponse { return b.readBatch(ledgerID, entryID, *v2) }
	}
	piggyback, fence := readFlag(r, bkproto.ReadRequest_ENTRY_PIGGYBACK), readFlag(r, bkproto.ReadRequest_FENCE_LEDGER)
	switch {
	case fence:
		b.fenceRead(cl, h, r, start, read)
	case piggyback && (r.PreviousLAC == nil || r.GetEntryId() != bkproto.LastAddConfirmed):
		b.sendRead(cl, h, start, nil, b.errorRead(r.GetLedgerId(), r.GetEntryId(), bkproto.StatusCode_EBADREQ))
	case r.PreviousLAC != nil:
		b.longPoll(cl, h, r, start)
	default:
		b.sendReadBody(cl, h, start, nil, func() *bkproto.ReadResponse { return read(r.GetLedgerId(), r.GetEntryId()) })
	}
}

// readFlag reports whether r carries flag f. (GetFlag would report
// FENCE_LEDGER, the enum's first value, for a request without a flag.)
func readFlag(r *bkproto.ReadRequest, f bkproto.ReadRequest_Flag) bool {
	return r.Flag != nil && *r.Flag == f
}

// read reads one entry (the last one for entryId -1) and returns the
// response, with the bookie-known LAC as maxLAC.
func (b *Bookie) read(ledgerID, entryID int64) *bkproto.ReadResponse {
	body, err := b.storeGet(ledgerID, entryID)
	st := statusOf(err)
	if st == bkproto.StatusCode_EIO {
		b.log.Error("read failed", "ledger", ledgerID, "entry", entryID, "err", err)
	}
	rr := &bkproto.ReadResponse{Status: st.Enum(), LedgerId: proto.Int64(ledgerID), EntryId: proto.Int64(entryID)}
	if err == nil {
		rr.Body = body
		b.m.readBytes.Add(float64(len(body)))
		b.m.readBytesOp.Record(int64(len(body)), true)
	}
	if lac, ok := b.knownLAC(ledgerID); ok {
		rr.MaxLAC = proto.Int64(lac)
	}
	return rr
}

// readBatch reads a v2 BATCH_READ_ENTRY as BookKeeper 4.17 does
// (docs/bookkeeper-protocol.md §6.2): entries first, first+1, ... up to
// v2.MaxCount of them (none: no bound) while the response stays within
// v2.MaxSize and the frame limit, counted from V2BatchFixedBytes with 4
// bytes per entry on top of the entry; the first entry is always included.
// A failure on the first entry is the answer; a later one ends the batch.
// The body holds the entries as the v2 response carries them.
func (b *Bookie) readBatch(ledgerID, first int64, v2 bkproto.V2Request) *bkproto.ReadResponse {
	limit := int64(b.cfg.MaxFrameBytes) // BookKeeper's maxBatchReadSize defaults to the frame limit
	if v2.MaxSize < limit {
		limit = v2.MaxSize
	}
	count := int64(v2.MaxCount)
	if count <= 0 {
		count = math.MaxInt64
	}
	frameBytes := int64(bkproto.V2BatchFixedBytes)
	var body []byte
	for i := int64(0); i < count; i++ {
		entry, err := b.storeGet(ledgerID, first+i)
		if err != nil {
			if i > 0 {
				break
			}
			st := statusOf(err)
			if st == bkproto.StatusCode_EIO {
				b.log.Error("read failed", "ledger", ledgerID, "entry", first, "err", err)
			}
			return b.errorRead(ledgerID, first, st)
		}
		frameBytes += int64(len(entry)) + 4
		if i > 0 && frameBytes > limit {
			break
		}
		body = bkproto.AppendV2BatchEntry(body, entry)
		b.m.readBytesOp.Record(int64(len(entry)), true)
	}
	b.m.readBytes.Add(float64(len(body)))
	return &bkproto.ReadResponse{Status: bkproto.StatusCode_EOK.Enum(), LedgerId: proto.Int64(ledgerID),
		EntryId: proto.Int64(first), Body: body}
}

func (b *Bookie) errorRead(ledgerID, entryID int64, st bkproto.StatusCode) *bkproto.ReadResponse {
	return &bkproto.ReadResponse{Status: st.Enum(), LedgerId: proto.Int64(ledgerID), EntryId: proto.Int64(entryID)}
}

// sendRead answers a read. Every read counts in READ_ENTRY_REQUEST; a
// fencing read or a long poll also in its own kind's summary (kind, nil
// for a plain read).
func (b *Bookie) sendRead(cl call, h *bkproto.BKPacketHeader, start time.Time, kind *metric.OpStats,
	rr *bkproto.ReadResponse) {
	cl.send(&bkproto.Response{Header: responseHeader(h), Status: rr.Status, ReadResponse: rr})
	ok := rr.GetStatus() == bkproto.StatusCode_EOK
	observe(b.m.readEntry, start, ok)
	if kind != nil {
		observe(kind, start, ok)
	}
}

// sendReadBody answers a read whose response may carry entry data. It
// reads only once the connection has room for the response
// (call.beginBody), so that a client that takes no responses stops its
// reads too.
func (b *Bookie) sendReadBody(cl call, h *bkproto.BKPacketHeader, start time.Time, kind *metric.OpStats,
	read func() *bkproto.ReadResponse) {
	if !cl.beginBody() {
		return
	}
	defer cl.endBody()
	b.sendRead(cl, h, start, kind, read())
}

// knownLAC returns the bookie-known LAC of a ledger: the greatest LAC
// piggybacked on its entries or sent as an explicit LAC. ok is false when
// the bookie knows none.
func (b *Bookie) knownLAC(ledgerID int64) (lac int64, ok bool) {
	lac, err := b.store.LAC(ledgerID)
	ok = err == nil
	if body, _ := b.store.ExplicitLAC(ledgerID); len(body) >= bkproto.LACHeaderBytes {
		if e := int64(binary.BigEndian.Uint64(body[8:16])); !ok || e > lac {
			lac, ok = e, true
		}
	}
	return lac, ok
}

// fenceRead fences the ledger and then reads (docs/bookkeeper-protocol.md §7.7): bind or check
// the master key, set the fenced flag (later normal adds get EFENCED),
// journal a fence record, and only once it is durable read the entry and
// answer, whatever the answer is, NoSuchEntry included (Appendix A item
// 2). Adds that took the ledger's lock before the fence are ahead of the
// fence record in the journal and in storage, so the read sees them.
func (b *Bookie) fenceRead(cl call, h *bkproto.BKPacketHeader, r *bkproto.ReadRequest, start time.Time,
	read func(ledgerID, entryID int64) *bkproto.ReadResponse) {
	ledgerID, entryID := r.GetLedgerId(), r.GetEntryId()
	jr := b.journalFor(ledgerID)
	lock := b.ledgerLock(ledgerID)
	lock.Lock()
	err := b.bindMasterKey(jr, ledgerID, r.MasterKey)
	durable := err == nil && b.fenceDurable(ledgerID)
	if err == nil && !durable {
		err = b.store.Fence(ledgerID)
	}
	if err != nil {
		lock.Unlock()
		b.sendRead(cl, h, start, b.m.fenceRequest, b.errorRead(ledgerID, entryID, statusOf(err)))
		return
	}
	if durable {
		// Fenced by an earlier request whose record is durable: every add
		// that preceded that fence is durable too (docs/bookkeeper-protocol.md §7.7), and no
		// normal add got in since. Journal nothing; just read.
		lock.Unlock()
		observe(b.m.fenceWait, start, true)
		b.sendReadBody(cl, h, start, b.m.fenceRequest, func() *bkproto.ReadResponse { return read(ledgerID, entryID) })
		return
	}
	b.fenceJournaled(ledgerID, +1)
	b.tasks.Add(1)
	jr.enqueue(journalOp{rec: journal.NewFenceRecord(ledgerID), done: func(err error) {
		observe(b.m.fenceWait, start, err == nil)
		if err == nil {
			b.fenceJournaled(ledgerID, -1)
		}
		if err != nil {
			defer b.tasks.Done()
			b.log.Error("fence record not durable", "ledger", ledgerID, "err", err)
			b.sendRead(cl, h, start, b.m.fenceRequest, b.errorRead(ledgerID, entryID, bkproto.StatusCode_EIO))
			return
		}
		go func() { // off the journal goroutine: the read may touch the disk
			defer b.tasks.Done()
			b.sendReadBody(cl, h, start, b.m.fenceRequest, func() *bkproto.ReadResponse { return read(ledgerID, entryID) })
		}()
	}})
	lock.Unlock()
}

// fenceDurable reports whether ledgerID is fenced and no fence record of
// it is waiting for the journal (or was lost by a failed journal): its
// fence is durable. Restart restores only durable fences. The caller holds
// the ledger's lock.
func (b *Bookie) fenceDurable(ledgerID int64) bool {
	if !b.store.IsFenced(ledgerID) {
		return false
	}
	b.fencesMu.Lock()
	defer b.fencesMu.Unlock()
	return b.fencesInFlight[ledgerID] == 0
}

// fenceJournaled counts a fence record of ledgerID into (+1) or out of
// (-1, once durable) the journal.
func (b *Bookie) fenceJournaled(ledgerID int64, delta int) {
	b.fencesMu.Lock()
	defer b.fencesMu.Unlock()
	if b.fencesInFlight == nil {
		b.fencesInFlight = make(map[int64]int)
	}
	if n := b.fencesInFlight[ledgerID] + delta; n > 0 {
		b.fencesInFlight[ledgerID] = n
	} else {
		delete(b.fencesInFlight, ledgerID)
	}
}

// longPoll serves a read with previousLAC (docs/bookkeeper-protocol.md §3.3): with a timeOut it
// parks until the bookie-known LAC passes previousLAC or the time is up,
// then answers with the current state: the last entry, or with
// ENTRY_PIGGYBACK entry previousLAC+1 if the bookie holds it.
func (b *Bookie) longPoll(cl call, h *bkproto.BKPacketHeader, r *bkproto.ReadRequest, start time.Time) {
	ledgerID, prev := r.GetLedgerId(), r.GetPreviousLAC()
	timeout := min(time.Duration(r.GetTimeOut())*time.Millisecond, DefaultLongPollMaxWait)
	kind := b.m.longPollRequest
	if !b.store.HasLedger(ledgerID) {
		b.sendRead(cl, h, start, kind, b.errorRead(ledgerID, r.GetEntryId(), bkproto.StatusCode_ENOLEDGER))
		return
	}
	answer := func() *bkproto.ReadResponse {
		began := time.Now()
		rr := b.longPollAnswer(r)
		observe(b.m.longPollRead, began, rr.GetStatus() == bkproto.StatusCode_EOK)
		return rr
	}
	if timeout <= 0 {
		b.sendReadBody(cl, h, start, kind, answer)
		return
	}
	w := b.lacs.add(ledgerID, prev)
	if lac, ok := b.knownLAC(ledgerID); ok && lac > prev {
		b.lacs.remove(ledgerID, w)
		b.sendReadBody(cl, h, start, kind, answer)
		return
	}
	observe(b.m.longPollPreWait, start, true)
	b.tasks.Add(1)
	go func() {
		defer b.tasks.Done()
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-w.ch:
		case <-t.C:
		case <-cl.c.closed:
			b.lacs.remove(ledgerID, w)
			cl.drop()
			return
		case <-b.stopping:
			b.lacs.remove(ledgerID, w)
			cl.drop()
			return
		}
		b.lacs.remove(ledgerID, w)
		observe(b.m.longPollWait, start, true)
		b.sendReadBody(cl, h, start, kind, answer)
	}()
}

// longPollAnswer builds a long poll's response from the current state.
func (b *Bookie) longPollAnswer(r *bkproto.ReadRequest) *bkproto.ReadResponse {
	ledgerID, prev := r.GetLedgerId(), r.GetPreviousLAC()
	if !readFlag(r, bkproto.ReadRequest_ENTRY_PIGGYBACK) {
		return b.read(ledgerID, r.GetEntryId())
	}
	rr := &bkproto.ReadResponse{Status: bkproto.StatusCode_EOK.Enum(), LedgerId: proto.Int64(ledgerID),
		EntryId: proto.Int64(r.GetEntryId())}
	lac, ok := b.knownLAC(ledgerID)
	if !ok {
		return rr
	}
	rr.MaxLAC = proto.Int64(lac)
	if lac <= prev {
		return rr
	}
	body, err := b.storeGet(ledgerID, prev+1)
	switch {
	case err == nil:
		rr.EntryId, rr.Body = proto.Int64(prev+1), body
	case errors.Is(err, entrystore.ErrNoEntry), errors.Is(err, entrystore.ErrNoLedger):
		// Best effort: with striping this bookie may not hold the entry.
		b.m.lastEntryNoEntry.Inc()
	default:
		b.log.Error("read failed", "ledger", ledgerID, "entry", prev+1, "err", err)
		rr.Status = bkproto.StatusCode_EIO.Enum()
	}
	return rr
}

// readLAC serves READ_LAC: the last explicit LAC body and the last entry.
func (b *Bookie) readLAC(cl call, h *bkproto.BKPacketHeader, r *bkproto.ReadLacRequest) {
	start := time.Now()
	if !cl.beginBody() {
		return
	}
	defer cl.endBody()
	ledgerID := r.GetLedgerId()
	resp := &bkproto.ReadLacResponse{LedgerId: proto.Int64(ledgerID)}
	lacBody, err := b.store.ExplicitLAC(ledgerID)
	st := statusOf(err)
	if err == nil {
		last, err := b.storeGet(ledgerID, entrystore.LastEntry)
		switch {
		case err == nil:
			resp.LastEntryBody = last
		case errors.Is(err, entrystore.ErrNoEntry) || errors.Is(err, entrystore.ErrNoLedger):
		default:
			b.log.Error("read of the last entry failed", "ledger", ledgerID, "err", err)
			st = bkproto.StatusCode_EIO
		}
		resp.LacBody = lacBody
		if st == bkproto.StatusCode_EOK && lacBody == nil && resp.LastEntryBody == nil {
			st = bkproto.StatusCode_ENOENTRY
		}
	}
	resp.Status = st.Enum()
	cl.send(&bkproto.Response{Header: responseHeader(h), Status: st.Enum(), ReadLacResponse: resp})
	observe(b.m.readLAC, start, st == bkproto.StatusCode_EOK)
}

// lacWatch holds the long polls waiting for a ledger's LAC to advance.
type lacWatch struct {
	count   atomic.Int64 // waiters, for a lock-free check on every add
	mu      sync.Mutex
	waiters map[int64][]*lacWaiter // mu guards waiters
}

// lacWaiter is one parked long poll: ch closes once the LAC passes prev.
type lacWaiter struct {
	prev int64
	ch   chan struct{}
}

func (w *lacWatch) add(ledgerID, prev int64) *lacWaiter {
	x := &lacWaiter{prev: prev, ch: make(chan struct{})}
	w.mu.Lock()
	w.waiters[ledgerID] = append(w.waiters[ledgerID], x)
	w.mu.Unlock()
	w.count.Add(1)
	return x
}

// remove forgets x if it is still registered.
func (w *lacWatch) remove(ledgerID int64, x *lacWaiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	list := w.waiters[ledgerID]
	for i, y := range list {
		if y == x {
			list = append(list[:i], list[i+1:]...)
			w.count.Add(-1)
			break
		}
	}
	if len(list) == 0 {
		delete(w.waiters, ledgerID)
	} else {
		w.waiters[ledgerID] = list
	}
}

// notify wakes the ledger's waiters whose previousLAC is below lac.
func (w *lacWatch) notify(ledgerID, lac int64) {
	if w.count.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	list := w.waiters[ledgerID]
	kept := list[:0]
	for _, x := range list {
		if lac > x.prev {
			close(x.ch)
			w.count.Add(-1)
		} else {
			kept = append(kept, x)
		}
	}
	if len(kept) == 0 {
		delete(w.waiters, ledgerID)
	} else {
		w.waiters[ledgerID] = kept
	}
}
