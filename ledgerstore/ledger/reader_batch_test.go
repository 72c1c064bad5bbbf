package ledger

import (
	"fmt"
	"slices"
	"testing"

	"keeper/ledgerstore/bkproto"
)

// TestReaderBatches reads a closed ledger in v2 batches from fake bookies
// that answer in any order, cut batches by size, hold corrupted copies or
// lack entries, stay silent, or know no batch reads. Every entry comes
// once, in order, with its payload; no batch crosses a segment; batching
// happens only with E = Qw and stops after a batch goes unanswered.
func TestReaderBatches(t *testing.T) {
	tests := []struct {
		name     string
		qw       int
		entries  int64
		maxSize  int64
		segment  int64   // >0: a second segment, with d for c, from this entry
		corrupt  []int64 // the first copy read is corrupted
		lacking  []int64 // the first bookie asked lacks it
		silent   BookieID
		noBatch  bool
		lifo     bool
		batching bool
	}{
		{name: "in order", qw: 3, entries: 100, maxSize: 1 << 20, batching: true},
		{name: "answered backwards", qw: 3, entries: 100, maxSize: 1 << 20, lifo: true, batching: true},
		{name: "cut by size", qw: 3, entries: 60, maxSize: 200, batching: true},
		{name: "bad copies and gaps", qw: 3, entries: 80, maxSize: 1 << 20, corrupt: []int64{0, 5, 33},
			lacking: []int64{17, 18, 50}, batching: true},
		{name: "a silent bookie", qw: 3, entries: 40, maxSize: 1 << 20, silent: "a", batching: true},
		{name: "two segments", qw: 3, entries: 70, maxSize: 1 << 20, segment: 23, batching: true},
		{name: "bookies without batches", qw: 3, entries: 50, maxSize: 1 << 20, noBatch: true, batching: true},
		{name: "E > Qw: single reads", qw: 2, entries: 50, maxSize: 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md := testMetadata(t, 3, tc.qw, 2, "a", "b", "c")
			if tc.segment > 0 {
				md.Segments = append(md.Segments, Segment{FirstEntryID: tc.segment, Bookies: []BookieID{"a", "b", "d"}})
			}
			md.State, md.LastEntryID, md.Length = StateClosed, tc.entries-1, tc.entries
			body := func(e int64) []byte { return entryBody(md, e, e-1, e+1, fmt.Sprintf("e%d", e)) }
			tried := map[string]bool{}
			single := func(b BookieID, e int64) ReadReply {
				if !slices.Contains(md.WriteSetBookies(e), b) {
					return statusReply(bkproto.StatusCode_ENOENTRY)
				}
				key := fmt.Sprint(e) // only the first copy read of e is bad or missing
				if slices.Contains(tc.lacking, e) && !tried[key] {
					tried[key] = true
					return statusReply(bkproto.StatusCode_ENOENTRY)
				}
				if slices.Contains(tc.corrupt, e) && !tried[key] {
					tried[key] = true
					bad := body(e)
					bad[len(bad)-1] ^= 0xff
					return okReply(bad)
				}
				return okReply(body(e))
			}
			batches := 0
			batch := func(req ReadRequest) ReadReply {
				batches++
				seg, _ := md.SegmentFor(req.EntryID)
				last, _ := md.SegmentFor(req.EntryID + int64(req.BatchMaxCount) - 1)
				if seg.FirstEntryID != last.FirstEntryID {
					t.Fatalf("batch %d+%d crosses a segment", req.EntryID, req.BatchMaxCount)
				}
				if tc.noBatch {
					return statusReply(NoResponse)
				}
				var out []byte
				size := int64(bkproto.V2BatchFixedBytes)
				for e := req.EntryID; e < req.EntryID+int64(req.BatchMaxCount); e++ {
					rep := single(req.Bookie, e)
					if rep.Status != bkproto.StatusCode_EOK {
						if e == req.EntryID {
							return rep
						}
						break
					}
					if size += 4 + int64(len(rep.Body)); size > req.BatchMaxSize && e > req.EntryID {
						break
					}
					out = bkproto.AppendV2BatchEntry(out, rep.Body)
				}
				return ReadReply{Status: bkproto.StatusCode_EOK, EntryID: req.EntryID, Body: out}
			}
			r, err := NewReader(ReaderConfig{LedgerID: testLedger, Metadata: md, First: 0, Last: tc.entries - 1,
				SpeculativeTicks: 2, BatchReadMaxSize: tc.maxSize})
			if err != nil {
				t.Fatal(err)
			}
			var pending []ReadRequest
			var got []int64
			for step := 0; ; step++ {
				if step > 100_000 {
					t.Fatal("the read did not finish")
				}
				rd := r.Ready()
				pending = append(pending, rd.Reads...)
				for _, e := range rd.Entries {
					if e.EntryID != int64(len(got)) || string(e.Payload) != fmt.Sprintf("e%d", e.EntryID) {
						t.Fatalf("delivered entry %d (%q) after %d entries", e.EntryID, e.Payload, len(got))
					}
					got = append(got, e.EntryID)
				}
				if rd.Done != nil {
					if rd.Done.Err != nil || int64(len(got)) != tc.entries {
						t.Fatalf("done after %d entries: %v", len(got), rd.Done.Err)
					}
					break
				}
				if len(pending) == 0 {
					r.Tick()
					continue
				}
				i := 0
				if tc.lifo {
					i = len(pending) - 1
				}
				req := pending[i]
				pending = slices.Delete(pending, i, i+1)
				switch {
				case req.Bookie == tc.silent:
					// lost: the reader must read around it
				case req.BatchMaxCount > 0:
					r.HandleRead(req, batch(req))
				default:
					r.HandleRead(req, single(req.Bookie, req.EntryID))
				}
			}
			switch {
			case !tc.batching && batches > 0:
				t.Errorf("%d batch reads, want none", batches)
			case tc.batching && tc.noBatch && batches != 1:
				t.Errorf("%d batch reads to bookies without them, want 1", batches)
			case tc.batching && batches == 0:
				t.Error("no batch reads")
			}
			t.Logf("%d batch reads", batches)
		})
	}
}
