package ledger

import (
	"fmt"
	"slices"
	"testing"

	"keeper/ledgerstore/bkproto"
)

// readAheadBookies is a fake set of bookies for recovery's forward reads:
// entries below present are held by every bookie of their write set,
// except the ones in missing (held by none); an entry in flaky answers
// EIO to its first read at each bookie.
type readAheadBookies struct {
	md      Metadata
	present int64
	missing map[int64]bool
	flaky   map[int64]bool
	tried   map[string]bool
	noBatch bool // a bookie before 4.17: batch reads go unanswered
	batches int  // batch reads asked
}

func (f *readAheadBookies) answer(req ReadRequest) ReadReply {
	key := fmt.Sprintf("%s/%d", req.Bookie, req.EntryID)
	if req.BatchMaxCount > 0 {
		return f.answerBatch(req)
	}
	switch {
	case req.EntryID == bkproto.LastAddConfirmed:
		return statusReply(bkproto.StatusCode_ENOENTRY) // nothing carries a LAC: LAC_r is -1
	case f.flaky[req.EntryID] && !f.tried[key]:
		f.tried[key] = true
		return statusReply(bkproto.StatusCode_EIO)
	case req.EntryID >= f.present || f.missing[req.EntryID]:
		return statusReply(bkproto.StatusCode_ENOENTRY)
	}
	p := fmt.Sprintf("e%d", req.EntryID)
	return okReply(entryBody(f.md, req.EntryID, -1, 2*(req.EntryID+1), p))
}

// answerBatch answers a batch read as a 4.17 bookie does: entries from
// the first on, up to the first it lacks, at most BatchMaxCount, within
// BatchMaxSize (the first always); a first entry it lacks is the status.
// With noBatch it is an older bookie: the batch goes unanswered. A flaky
// entry comes with its last payload byte flipped, once per bookie.
func (f *readAheadBookies) answerBatch(req ReadRequest) ReadReply {
	f.batches++
	if f.noBatch {
		return statusReply(NoResponse)
	}
	var body []byte
	size := int64(bkproto.V2BatchFixedBytes)
	for e := req.EntryID; e < req.EntryID+int64(req.BatchMaxCount); e++ {
		rep := f.answer(ReadRequest{Bookie: req.Bookie, EntryID: e})
		if rep.Status != bkproto.StatusCode_EOK {
			if e == req.EntryID {
				return rep
			}
			break
		}
		entry := rep.Body
		if key := fmt.Sprintf("%s/%d!", req.Bookie, e); f.flaky[e] && !f.tried[key] {
			f.tried[key] = true
			entry = slices.Clone(entry)
			entry[len(entry)-1] ^= 0xff
		}
		if size += 4 + int64(len(entry)); size > req.BatchMaxSize && e > req.EntryID {
			break
		}
		body = bkproto.AppendV2BatchEntry(body, entry)
	}
	return ReadReply{Status: bkproto.StatusCode_EOK, EntryID: req.EntryID, Body: body}
}

// TestRecoveryReadAhead drives recovery with several entries read at
// once, answers arriving in varied orders, and checks the rules reading
// ahead must keep: never more than the window read ahead of the next
// re-add, re-adds strictly in entry order and only of entries found, and
// the end at the first entry a coverage quorum says is absent, whatever
// was found beyond it.
func TestRecoveryReadAhead(t *testing.T) {
	tests := []struct {
		name    string
		window  int
		qw, qa  int
		present int64
		missing []int64
		flaky   []int64
		order   string   // which outstanding read is answered next: fifo, lifo, stride
		silent  BookieID // never answers a forward read
		batch   int64    // BatchReadMaxSize
		noBatch bool
		wantEnd int64
	}{
		{name: "one at a time", window: 1, qw: 2, qa: 2, present: 40, order: "fifo", wantEnd: 39},
		{name: "window in order", window: 8, qw: 2, qa: 2, present: 100, order: "fifo", wantEnd: 99},
		{name: "window answered backwards", window: 8, qw: 2, qa: 2, present: 100, order: "lifo", wantEnd: 99},
		{name: "window answered out of order", window: 16, qw: 3, qa: 2, present: 100, order: "stride", wantEnd: 99},
		{name: "gap inside the window ends the ledger", window: 16, qw: 2, qa: 2, present: 100,
			missing: []int64{37}, order: "lifo", wantEnd: 36},
		{name: "gap needs a coverage quorum of negatives", window: 16, qw: 3, qa: 2, present: 100,
			missing: []int64{5}, order: "stride", wantEnd: 4},
		{name: "unknown answers stall, never end", window: 8, qw: 3, qa: 2, present: 50,
			flaky: []int64{0, 7, 8, 20}, order: "lifo", wantEnd: 49},
		{name: "a silent first bookie: the rest are asked after the retry delay", window: 8, qw: 3, qa: 2,
			present: 30, order: "fifo", silent: "b", wantEnd: 29},
		{name: "empty ledger", window: 32, qw: 2, qa: 2, present: 0, order: "lifo", wantEnd: -1},
		{name: "window wider than the re-add bound", window: 256, qw: 2, qa: 2, present: 600, order: "lifo", wantEnd: 599},
		{name: "batches", window: 16, qw: 3, qa: 2, present: 100, order: "fifo", batch: 1 << 20, wantEnd: 99},
		{name: "batches answered out of order", window: 32, qw: 3, qa: 2, present: 300, order: "stride", batch: 1 << 20,
			wantEnd: 299},
		{name: "batches cut by their size", window: 16, qw: 3, qa: 2, present: 60, order: "lifo", batch: 200,
			wantEnd: 59},
		{name: "batches with a gap", window: 16, qw: 3, qa: 2, present: 100, missing: []int64{21}, order: "fifo",
			batch: 1 << 20, wantEnd: 20},
		{name: "batches with unknowns and bad copies", window: 16, qw: 3, qa: 2, present: 80, flaky: []int64{0, 3, 17, 40},
			order: "lifo", batch: 1 << 20, wantEnd: 79},
		{name: "batches around a silent bookie", window: 16, qw: 3, qa: 2, present: 50, order: "fifo", silent: "a",
			batch: 1 << 20, wantEnd: 49},
		{name: "a bookie without batches: single reads", window: 16, qw: 3, qa: 2, present: 100, order: "fifo",
			batch: 1 << 20, noBatch: true, wantEnd: 99},
		{name: "no batches unless E = Qw", window: 16, qw: 2, qa: 2, present: 50, order: "fifo", batch: 1 << 20,
			wantEnd: 49},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md := testMetadata(t, 3, tc.qw, tc.qa, "a", "b", "c")
			f := &readAheadBookies{md: md, present: tc.present, missing: map[int64]bool{},
				flaky: map[int64]bool{}, tried: map[string]bool{}, noBatch: tc.noBatch}
			for _, e := range tc.missing {
				f.missing[e] = true
			}
			for _, e := range tc.flaky {
				f.flaky[e] = true
			}
			r, err := NewRecovery(RecoveryConfig{LedgerID: testLedger, Metadata: md, RetryTicks: 2,
				ReadAheadEntries: tc.window, Bookies: Candidates{Available: md.LastSegment().Bookies},
				BatchReadMaxSize: tc.batch})
			if err != nil {
				t.Fatal(err)
			}
			var pending []ReadRequest
			var readded []int64
			maxAhead := int64(0)
			var done *Outcome
			for step := 0; done == nil; step++ {
				if step > 100_000 {
					t.Fatal("recovery did not finish")
				}
				rd := r.Ready()
				pending = append(pending, rd.Reads...)
				for _, rq := range rd.Reads {
					if rq.BatchMaxCount > 0 && (!rq.Fence || rq.BatchMaxSize != tc.batch) {
						t.Fatalf("batch read %+v", rq)
					}
				}
				if rd.MetadataWrite != nil {
					r.HandleMetadataWritten(rd.MetadataWrite.Metadata.Version + 1)
				}
				for _, a := range rd.Adds {
					if a.EntryID >= tc.present || f.missing[a.EntryID] || !a.Recovery {
						t.Fatalf("re-add %+v of an entry never found", a)
					}
					if a.Bookie == md.LastSegment().Bookies[md.Placement().Position(a.EntryID, 0)] {
						readded = append(readded, a.EntryID) // once per entry: its write set's first bookie
					}
					r.HandleAdd(a, bkproto.StatusCode_EOK)
				}
				if r.phase == phaseForward {
					maxAhead = max(maxAhead, r.nextRead-r.nextAdd)
				}
				if rd.Done != nil {
					done = rd.Done
					break
				}
				if len(rd.Adds) > 0 || rd.MetadataWrite != nil {
					continue
				}
				if len(pending) == 0 {
					r.Tick()
					continue
				}
				i := 0
				switch tc.order {
				case "lifo":
					i = len(pending) - 1
				case "stride":
					i = (step * 7) % len(pending)
				}
				req := pending[i]
				pending = slices.Delete(pending, i, i+1)
				if req.Bookie == tc.silent && req.EntryID != bkproto.LastAddConfirmed {
					continue // lost; recovery must ask elsewhere
				}
				r.HandleRead(req, f.answer(req))
			}
			if done.Err != nil || done.Metadata.State != StateClosed || done.Metadata.LastEntryID != tc.wantEnd {
				t.Fatalf("outcome %+v (%v), want closed at %d", done.Metadata, done.Err, tc.wantEnd)
			}
			if want := 2 * (tc.wantEnd + 1); done.Metadata.Length != want {
				t.Errorf("closed with length %d, want %d", done.Metadata.Length, want)
			}
			for i, e := range readded {
				if e != int64(i) {
					t.Fatalf("re-adds %v, want 0..%d in order", readded, tc.wantEnd)
				}
			}
			if int64(len(readded)) != tc.wantEnd+1 {
				t.Fatalf("%d entries re-added, want %d", len(readded), tc.wantEnd+1)
			}
			t.Logf("%d batch reads", f.batches)
			switch batching := tc.batch > 0 && tc.qw == 3; {
			case !batching && f.batches > 0:
				t.Errorf("%d batch reads, want none", f.batches)
			case batching && tc.noBatch && f.batches != 1:
				t.Errorf("%d batch reads to a bookie without them, want 1", f.batches)
			case batching && !tc.noBatch && (f.batches == 0 || f.batches > int(tc.wantEnd+2)/2):
				t.Errorf("%d batch reads for %d entries", f.batches, tc.wantEnd+1)
			}
			if maxAhead > int64(tc.window) {
				t.Errorf("read %d entries ahead of the next re-add, window %d", maxAhead, tc.window)
			}
		})
	}
}
