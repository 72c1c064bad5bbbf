package ledger

import (
	"errors"
	"slices"
	"testing"

	"keeper/ledgerstore/bkproto"
)

func plainRead(b BookieID, e int64) ReadRequest { return ReadRequest{Bookie: b, EntryID: e} }

func entryIDs(es []Entry) []int64 {
	var out []int64
	for _, e := range es {
		out = append(out, e.EntryID)
	}
	return out
}

func TestReaderBound(t *testing.T) {
	md := testMetadata(t, 3, 2, 2, "a", "b", "c")
	if _, err := NewReader(ReaderConfig{LedgerID: testLedger, Metadata: md, LAC: 4, First: 0, Last: 5}); !errors.Is(err, ErrReadBeyondLAC) {
		t.Fatalf("read past the LAC: %v", err)
	}
	md.State, md.LastEntryID = StateClosed, 9
	if _, err := NewReader(ReaderConfig{LedgerID: testLedger, Metadata: md, LAC: 100, First: 0, Last: 10}); !errors.Is(err, ErrReadBeyondLAC) {
		t.Fatalf("read past the last entry of a closed ledger: %v", err)
	}
	if _, err := NewReader(ReaderConfig{LedgerID: testLedger, Metadata: md, First: 3, Last: 2}); err == nil {
		t.Fatal("empty range accepted")
	}
}

func TestReaderSpeculativeAndInOrder(t *testing.T) {
	md := testMetadata(t, 3, 2, 2, "a", "b", "c")
	r, err := NewReader(ReaderConfig{LedgerID: testLedger, Metadata: md, LAC: 2, First: 0, Last: 2, SpeculativeTicks: 2})
	if err != nil {
		t.Fatal(err)
	}
	key := [20]byte{}
	first := r.Ready().Reads
	if got := reads(first, key); !slices.Equal(got, []string{"a/0", "b/1", "c/2"}) {
		t.Fatalf("first reads %v", got)
	}
	for _, rq := range first {
		if rq.Speculative {
			t.Fatalf("first read %v marked speculative", rq)
		}
	}
	r.HandleRead(plainRead("c", 2), okReply(entryBody(md, 2, 1, 3, "2")))
	r.HandleRead(plainRead("b", 1), statusReply(bkproto.StatusCode_EIO)) // moves on at once
	next := r.Ready().Reads
	if got := reads(next, key); !slices.Equal(got, []string{"c/1"}) {
		t.Fatalf("after EIO: %v, want c/1", got)
	}
	if next[0].Speculative {
		t.Fatal("the read after an error is marked speculative")
	}
	r.Tick()
	r.Tick() // entry 0 speculative
	rd := r.Ready()
	if got := reads(rd.Reads, key); !slices.Equal(got, []string{"b/0"}) {
		t.Fatalf("speculative reads %v, want b/0 (entry 1 has no replica left)", got)
	}
	if !rd.Reads[0].Speculative {
		t.Fatal("the read after SpeculativeTicks is not marked speculative")
	}
	if len(rd.Entries) != 0 {
		t.Fatalf("delivered %v before entry 0", entryIDs(rd.Entries))
	}
	r.HandleRead(plainRead("b", 0), okReply(entryBody(md, 0, -1, 1, "0")))
	r.HandleRead(plainRead("a", 0), okReply(entryBody(md, 0, -1, 1, "0"))) // late: ignored
	r.HandleRead(plainRead("c", 1), okReply(entryBody(md, 1, 0, 2, "1")))
	rd = r.Ready()
	if got := entryIDs(rd.Entries); !slices.Equal(got, []int64{0, 1, 2}) || rd.Done == nil || rd.Done.Err != nil {
		t.Fatalf("entries %v, done %+v", got, rd.Done)
	}
}

func TestReaderAllReplicasFail(t *testing.T) {
	md := testMetadata(t, 3, 2, 2, "a", "b", "c")
	r, _ := NewReader(ReaderConfig{LedgerID: testLedger, Metadata: md, LAC: 0, First: 0, Last: 0})
	r.Ready()
	corrupt := okReply(entryBody(md, 0, -1, 1, "0"))
	corrupt.Body[bkproto.EntryHeaderBytes] ^= 0xff
	r.HandleRead(plainRead("a", 0), corrupt)
	r.HandleRead(plainRead("b", 0), statusReply(bkproto.StatusCode_ENOENTRY))
	if rd := r.Ready(); rd.Done == nil || !errors.Is(rd.Done.Err, ErrEntryUnavailable) {
		t.Fatalf("Done %+v, want ErrEntryUnavailable", rd.Done)
	}
}

func TestLACReader(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	md.Segments = append(md.Segments, Segment{FirstEntryID: 5, Bookies: []BookieID{"a", "b", "d"}})
	r, _ := NewLACReader(LACReaderConfig{LedgerID: testLedger, Metadata: md, RetryTicks: 1})
	rd := r.Ready()
	if len(rd.Reads) != 3 || rd.Reads[0].Kind != ReadLAC || rd.Reads[2].Bookie != "d" {
		t.Fatalf("reads %+v", rd.Reads)
	}
	lacBody := bkproto.EncodeLAC(testLedger, 7, md.DigestType, nil)
	r.HandleRead(ReadRequest{Bookie: "a", Kind: ReadLAC}, ReadReply{Status: bkproto.StatusCode_EOK,
		Body: entryBody(md, 9, 6, 9, "x"), LACBody: lacBody})
	r.HandleRead(ReadRequest{Bookie: "b", Kind: ReadLAC}, ReadReply{Status: bkproto.StatusCode_EOK,
		Body: entryBody(md, 9, 6, 9, "x")[:20]}) // a bad body is unknown
	if rd := r.Ready(); rd.Done != nil {
		t.Fatalf("done on one answer: %+v", rd.Done)
	}
	r.HandleRead(ReadRequest{Bookie: "d", Kind: ReadLAC}, statusReply(bkproto.StatusCode_ENOLEDGER))
	if rd := r.Ready(); rd.Done == nil || rd.Done.LAC != 7 {
		t.Fatalf("Done %+v, want LAC 7 (the explicit LAC)", rd.Done)
	}
	// An ensemble that knows nothing: the floor.
	r, _ = NewLACReader(LACReaderConfig{LedgerID: testLedger, Metadata: md})
	r.Ready()
	for _, b := range []BookieID{"a", "b", "d"} {
		r.HandleRead(ReadRequest{Bookie: b, Kind: ReadLAC}, statusReply(bkproto.StatusCode_ENOENTRY))
	}
	if rd := r.Ready(); rd.Done == nil || rd.Done.LAC != 4 {
		t.Fatalf("Done %+v, want LAC 4 (first entry of the last ensemble - 1)", rd.Done)
	}
}

func pollReq(b BookieID, prev int64) ReadRequest {
	return ReadRequest{Bookie: b, EntryID: -1, LongPoll: true, PreviousLAC: prev, Piggyback: true}
}

func TestTailerFollowsLAC(t *testing.T) {
	md := testMetadata(t, 3, 2, 2, "a", "b", "c")
	tl, err := NewTailer(TailerConfig{LedgerID: testLedger, Metadata: md, LAC: -1, RetryTicks: 2})
	if err != nil {
		t.Fatal(err)
	}
	rd := tl.Ready()
	if len(rd.Reads) != 3 || !rd.Reads[0].LongPoll || rd.Reads[0].PreviousLAC != -1 || !rd.Reads[0].Piggyback {
		t.Fatalf("first polls %+v", rd.Reads)
	}
	// b knows LAC 1 and piggybacks entry 0.
	tl.HandleRead(pollReq("b", -1), ReadReply{Status: bkproto.StatusCode_EOK, EntryID: 0,
		Body: entryBody(md, 0, -1, 1, "0"), MaxLAC: 1, HasMaxLAC: true})
	rd = tl.Ready()
	if got := entryIDs(rd.Entries); !slices.Equal(got, []int64{0}) {
		t.Fatalf("entries %v, want the piggybacked entry 0", got)
	}
	// b alone moved the LAC: the tailer reads entry 1 and polls b again
	// with the new LAC, without waiting for a and c.
	if got := reads(rd.Reads, [20]byte{}); !slices.Equal(got, []string{"b/1", "b/-1"}) || rd.Reads[1].PreviousLAC != 1 {
		t.Fatalf("reads %+v, want entry 1 and b polled again from LAC 1", rd.Reads)
	}
	tl.HandleRead(plainRead("b", 1), okReply(entryBody(md, 1, 0, 2, "1")))
	tl.HandleRead(pollReq("a", -1), ReadReply{Status: bkproto.StatusCode_EOK, MaxLAC: 0, HasMaxLAC: true})
	// A bookie reporting a high entry id with a low header LAC does not
	// move the LAC past the header value.
	tl.HandleRead(pollReq("c", -1), okReply(entryBody(md, 5, 1, 6, "5")))
	rd = tl.Ready()
	if got := entryIDs(rd.Entries); !slices.Equal(got, []int64{1}) || tl.LAC() != 1 {
		t.Fatalf("entries %v, LAC %d; want [1], LAC 1", got, tl.LAC())
	}
	if got := reads(rd.Reads, [20]byte{}); !slices.Equal(got, []string{"a/-1", "c/-1"}) ||
		rd.Reads[0].PreviousLAC != 1 || rd.Reads[1].PreviousLAC != 1 {
		t.Fatalf("next polls %+v, want a and c from previousLAC 1", rd.Reads)
	}
	closed := md.Clone()
	closed.State, closed.LastEntryID, closed.Version = StateClosed, 2, 5
	tl.HandleMetadata(closed)
	rd = tl.Ready()
	if got := reads(rd.Reads, [20]byte{}); !slices.Equal(got, []string{"c/2"}) {
		t.Fatalf("reads after close %v, want c/2", got)
	}
	tl.HandleRead(plainRead("c", 2), okReply(entryBody(md, 2, 1, 3, "2")))
	rd = tl.Ready()
	if got := entryIDs(rd.Entries); !slices.Equal(got, []int64{2}) || rd.Done == nil {
		t.Fatalf("entries %v, done %+v; want [2] and done", got, rd.Done)
	}
}

func TestTailerRefreshesMetadataWhenReadsFail(t *testing.T) {
	md := testMetadata(t, 3, 2, 2, "a", "b", "c")
	tl, _ := NewTailer(TailerConfig{LedgerID: testLedger, Metadata: md, LAC: 0, RetryTicks: 2})
	tl.Ready()
	tl.HandleRead(plainRead("a", 0), statusReply(bkproto.StatusCode_ENOENTRY))
	tl.HandleRead(plainRead("b", 0), statusReply(bkproto.StatusCode_ENOENTRY))
	if rd := tl.Ready(); !rd.RefreshMetadata {
		t.Fatal("no metadata refresh after every replica failed")
	}
	tl.Tick()
	tl.Tick()
	if got := reads(tl.Ready().Reads, [20]byte{}); !slices.Equal(got, []string{"a/0"}) {
		t.Fatalf("retry %v", got)
	}
}
