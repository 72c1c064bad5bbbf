package ledger

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"keeper/ledgerstore/bkproto"
)

func entryBody(md Metadata, entry, lac, length int64, payload string) []byte {
	return bkproto.EncodeEntry(testLedger, entry, lac, length, md.DigestType, nil, []byte(payload))
}

func okReply(body []byte) ReadReply {
	h, _ := bkproto.ParseEntryHeader(body)
	return ReadReply{Status: bkproto.StatusCode_EOK, EntryID: h.EntryID, Body: body}
}

func statusReply(s bkproto.StatusCode) ReadReply { return ReadReply{Status: s} }

// reads lists a batch of reads as "bookie/entry", with "!" for fencing
// reads that carry the master key.
func reads(rs []ReadRequest, key [bkproto.MasterKeyBytes]byte) []string {
	var out []string
	for _, r := range rs {
		s := fmt.Sprintf("%s/%d", r.Bookie, r.EntryID)
		if r.Fence && r.MasterKey == key {
			s += "!"
		}
		out = append(out, s)
	}
	return out
}

func fenceRead(b BookieID) ReadRequest {
	return ReadRequest{Bookie: b, EntryID: bkproto.LastAddConfirmed, Fence: true}
}

func entryRead(b BookieID, e int64) ReadRequest {
	return ReadRequest{Bookie: b, EntryID: e, Fence: true}
}

// startRecovery returns a recovery of md (OPEN) past its IN_RECOVERY write.
func startRecovery(t *testing.T, md Metadata, spares ...BookieID) *Recovery {
	t.Helper()
	avail := append(slices.Clone(md.LastSegment().Bookies), spares...)
	r, err := NewRecovery(RecoveryConfig{LedgerID: testLedger, Metadata: md, RetryTicks: 3,
		Bookies: Candidates{Available: avail}})
	if err != nil {
		t.Fatal(err)
	}
	rd := r.Ready()
	if rd.MetadataWrite == nil || rd.MetadataWrite.Metadata.State != StateInRecovery ||
		rd.MetadataWrite.Metadata.Version != md.Version || len(rd.Reads) != 0 {
		t.Fatalf("first step %+v, want only the IN_RECOVERY write", rd)
	}
	r.HandleMetadataWritten(md.Version + 1)
	return r
}

func TestRecoveryFencesAfterMarking(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	r := startRecovery(t, md)
	key := bkproto.MasterKey(md.Password)
	if got := reads(r.Ready().Reads, key); !slices.Equal(got, []string{"a/-1!", "b/-1!", "c/-1!"}) {
		t.Fatalf("fence reads %v", got)
	}
}

// TestRecoveryWaitsForEnsembleCoverage is the unit half of pitfall 2: no
// forward read before the fence answers cover every write set, and every
// forward read fences.
func TestRecoveryWaitsForEnsembleCoverage(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	r := startRecovery(t, md)
	key := bkproto.MasterKey(md.Password)
	r.Ready()
	r.HandleRead(fenceRead("a"), okReply(entryBody(md, 4, 3, 40, "e4")))
	r.HandleRead(fenceRead("b"), statusReply(bkproto.StatusCode_EIO))
	r.HandleRead(fenceRead("c"), statusReply(NoResponse))
	if rd := r.Ready(); len(rd.Reads) != 0 {
		t.Fatalf("read forward on one fence answer: %v", reads(rd.Reads, key))
	}
	for range 3 {
		r.Tick()
	}
	if got := reads(r.Ready().Reads, key); !slices.Equal(got, []string{"b/-1!", "c/-1!"}) {
		t.Fatalf("retried fences %v, want b and c again", got)
	}
	r.HandleRead(fenceRead("c"), statusReply(bkproto.StatusCode_ENOLEDGER))
	got := reads(r.Ready().Reads, key)
	// The anchor goes to its whole write set; entry 4 to the first
	// bookie of its write set only (one valid copy recovers it).
	want := []string{"a/3!", "b/3!", "c/3!", "b/4!"}
	if !slices.Equal(got, want) {
		t.Fatalf("after coverage: reads %v, want anchor 3 and entry 4, all fencing: %v", got, want)
	}
}

// TestRecoveryUsesHeaderLAC is the unit half of pitfall 5: the start is the
// last entry's header LAC, not its id.
func TestRecoveryUsesHeaderLAC(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	r := startRecovery(t, md)
	r.Ready()
	r.HandleRead(fenceRead("a"), okReply(entryBody(md, 7, 5, 70, "e7")))
	r.HandleRead(fenceRead("b"), okReply(entryBody(md, 5, 4, 50, "e5")))
	if lac, ok := r.LACRecovered(); !ok || lac != 5 {
		t.Fatalf("LAC_r = %d, %v; want 5 (entry 7's header LAC)", lac, ok)
	}
}

// TestRecoveryFloorsLAC: the last ensemble knows nothing (#2615); the start
// is the first entry of the last ensemble − 1, read from its own segment.
func TestRecoveryFloorsLAC(t *testing.T) {
	md := testMetadata(t, 3, 2, 2, "a", "b", "c")
	md.Segments = append(md.Segments, Segment{FirstEntryID: 10, Bookies: []BookieID{"d", "e", "f"}})
	r := startRecovery(t, md)
	key := bkproto.MasterKey(md.Password)
	r.Ready()
	for _, b := range []BookieID{"d", "e", "f"} {
		r.HandleRead(fenceRead(b), statusReply(bkproto.StatusCode_ENOLEDGER))
	}
	got := reads(r.Ready().Reads, key)
	want := []string{"a/9!", "b/9!", "e/10!"}
	if !slices.Equal(got, want) {
		t.Fatalf("reads %v, want anchor 9 in segment 0 and entry 10 in segment 10: %v", got, want)
	}
	r.HandleRead(entryRead("a", 9), okReply(entryBody(md, 9, 8, 90, "e9")))
	r.HandleRead(entryRead("e", 10), statusReply(bkproto.StatusCode_ENOENTRY))
	rd := r.Ready()
	if rd.MetadataWrite == nil {
		t.Fatal("no close after entry 10 was absent")
	}
	if c := rd.MetadataWrite.Metadata; c.State != StateClosed || c.LastEntryID != 9 || c.Length != 90 || len(c.Segments) != 2 {
		t.Fatalf("close %+v, want CLOSED at 9, length 90, two segments", c)
	}
}

// TestRecoveryUnknownIsNotAbsent is the unit half of pitfall 1.
func TestRecoveryUnknownIsNotAbsent(t *testing.T) {
	md := testMetadata(t, 4, 3, 2, "a", "b", "c", "d") // QC = 2
	r := startRecovery(t, md)
	r.Ready()
	for _, b := range []BookieID{"a", "b", "c", "d"} {
		r.HandleRead(fenceRead(b), statusReply(bkproto.StatusCode_ENOENTRY))
	}
	r.Ready() // entry 0 goes to a, b, c
	bad := okReply(entryBody(md, 0, -1, 1, "x"))
	bad.Body = slices.Clone(bad.Body)
	bad.Body[len(bad.Body)-1] ^= 1
	wrong := okReply(entryBody(md, 1, -1, 1, "x")) // a valid copy of another entry
	unknowns := []ReadReply{statusReply(NoResponse), statusReply(bkproto.StatusCode_EIO),
		statusReply(bkproto.StatusCode_EUNKNOWNLEDGERSTATE), statusReply(bkproto.StatusCode_ETOOMANYREQUESTS), bad, wrong}
	for i, u := range unknowns {
		r.HandleRead(entryRead("a", 0), u)
		r.HandleRead(entryRead("b", 0), statusReply(bkproto.StatusCode_ENOENTRY))
		if i == 0 {
			r.HandleRead(entryRead("c", 0), statusReply(bkproto.StatusCode_EIO))
		}
		if rd := r.Ready(); rd.MetadataWrite != nil || rd.Done != nil {
			t.Fatalf("answer %d (%v) taken as a negative: %+v", i, u.Status, rd)
		}
		for range 3 {
			r.Tick()
		}
		want := []string{"a/0"}
		if i == 0 {
			want = append(want, "c/0")
		}
		if got := reads(r.Ready().Reads, [20]byte{}); !slices.Equal(got, want) {
			t.Fatalf("retry after answer %d: %v, want %v", i, got, want)
		}
	}
	r.HandleRead(entryRead("c", 0), statusReply(bkproto.StatusCode_ENOLEDGER))
	rd := r.Ready()
	if rd.MetadataWrite == nil || rd.MetadataWrite.Metadata.LastEntryID != -1 || rd.MetadataWrite.Metadata.Length != 0 {
		t.Fatalf("two explicit negatives: %+v, want a close of the empty ledger", rd.MetadataWrite)
	}
}

func TestRecoveryReAddsAndCloses(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	r := startRecovery(t, md)
	r.Ready()
	r.HandleRead(fenceRead("a"), okReply(entryBody(md, 5, 4, 50, "e5")))
	r.HandleRead(fenceRead("b"), okReply(entryBody(md, 4, 3, 40, "e4")))
	r.Ready()                                                               // anchor 4, entry 5
	r.HandleRead(entryRead("c", 5), okReply(entryBody(md, 5, 4, 50, "e5"))) // found before the anchor
	rd := r.Ready()
	if len(rd.Adds) != 3 {
		t.Fatalf("re-adds %v", adds(rd.Adds))
	}
	for _, a := range rd.Adds {
		e, err := bkproto.DecodeEntry(a.Body, md.DigestType, nil, testLedger, 5)
		if err != nil || !a.Recovery || e.LAC != 4 || e.Length != 50 || string(e.Payload) != "e5" {
			t.Fatalf("re-add %+v: %v, entry %+v; want RECOVERY_ADD, LAC 4, length 50", a, err, e)
		}
	}
	r.HandleRead(entryRead("a", 6), statusReply(bkproto.StatusCode_ENOENTRY)) // the first of its write set; wakes b and c
	r.HandleRead(entryRead("c", 6), statusReply(bkproto.StatusCode_ENOENTRY))
	r.HandleRead(entryRead("a", 4), okReply(entryBody(md, 4, 3, 40, "e4")))
	ok(r, "a", 5)
	if rd := r.Ready(); rd.MetadataWrite != nil {
		t.Fatal("closed before the re-add reached Qa")
	}
	ok(r, "c", 5)
	rd = r.Ready()
	c := rd.MetadataWrite.Metadata
	if c.State != StateClosed || c.LastEntryID != 5 || c.Length != 50 || c.Version != md.Version+1 {
		t.Fatalf("close %+v", c)
	}
	r.HandleMetadataWritten(c.Version + 1)
	if rd := r.Ready(); rd.Done == nil || rd.Done.Err != nil || rd.Done.Metadata.LastEntryID != 5 {
		t.Fatalf("Done %+v", rd.Done)
	}
}

// TestRecoveryLocalEnsembleChange: a bookie fails during re-adds; the
// change stays local and is folded into the closing write.
func TestRecoveryLocalEnsembleChange(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	r := startRecovery(t, md, "d")
	r.Ready()
	r.HandleRead(fenceRead("a"), okReply(entryBody(md, 0, -1, 2, "e0")))
	r.HandleRead(fenceRead("b"), statusReply(bkproto.StatusCode_ENOENTRY))
	r.HandleRead(entryRead("a", 0), okReply(entryBody(md, 0, -1, 2, "e0")))
	r.Ready()
	r.HandleAdd(AddRequest{Bookie: "b", EntryID: 0}, bkproto.StatusCode_EIO)
	rd := r.Ready()
	if rd.MetadataWrite != nil || !slices.Equal(adds(rd.Adds), []string{"d/0"}) {
		t.Fatalf("after a failed re-add: write %v, adds %v; want a local change and d/0", rd.MetadataWrite, adds(rd.Adds))
	}
	ok(r, "a", 0)
	ok(r, "d", 0)
	r.HandleRead(entryRead("b", 1), statusReply(bkproto.StatusCode_ENOENTRY))
	r.HandleRead(entryRead("c", 1), statusReply(bkproto.StatusCode_ENOENTRY))
	c := r.Ready().MetadataWrite.Metadata
	if c.LastEntryID != 0 || len(c.Segments) != 1 || !slices.Equal(c.Segments[0].Bookies, []BookieID{"a", "d", "c"}) {
		t.Fatalf("close %+v, want end 0 and the local ensemble [a d c] at key 0", c)
	}
}

func TestRecoveryEndsWhenClosedElsewhere(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	r := startRecovery(t, md)
	r.Ready()
	closed := md.Clone()
	closed.State, closed.LastEntryID, closed.Version = StateClosed, 3, 9
	r.HandleMetadata(closed)
	if rd := r.Ready(); rd.Done == nil || rd.Done.Err != nil || rd.Done.Metadata.LastEntryID != 3 {
		t.Fatalf("Done %+v", rd.Done)
	}
	r2, _ := NewRecovery(RecoveryConfig{LedgerID: testLedger, Metadata: closed})
	if rd := r2.Ready(); rd.Done == nil || rd.Done.Metadata.LastEntryID != 3 || len(rd.Reads) != 0 {
		t.Fatalf("recovery of a closed ledger: %+v", rd)
	}
}

func TestRecoveryMarkConflict(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	r, _ := NewRecovery(RecoveryConfig{LedgerID: testLedger, Metadata: md})
	r.Ready()
	changed := md.Clone()
	changed.Segments[0].Bookies[2], changed.Version = "d", 4 // the writer's change landed first
	r.HandleMetadata(changed)
	rd := r.Ready()
	if rd.MetadataWrite == nil || rd.MetadataWrite.Metadata.Version != 4 {
		t.Fatalf("after a conflict: %+v, want the mark again on version 4", rd.MetadataWrite)
	}
	marked := rd.MetadataWrite.Metadata.Clone()
	marked.Version = 5
	r.HandleMetadata(marked) // outcome unknown, but it landed
	if got := reads(r.Ready().Reads, bkproto.MasterKey(md.Password)); !slices.Equal(got, []string{"a/-1!", "b/-1!", "d/-1!"}) {
		t.Fatalf("fence reads %v, want the new ensemble", got)
	}
}

func TestRecoveryFailures(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	r := startRecovery(t, md)
	r.Ready()
	r.HandleRead(fenceRead("a"), statusReply(bkproto.StatusCode_EUA))
	if rd := r.Ready(); rd.Done == nil || !errors.Is(rd.Done.Err, bkproto.ErrUnauthorized) {
		t.Fatalf("EUA: %+v", rd.Done)
	}
	r = startRecovery(t, md)
	r.Ready()
	r.HandleRead(fenceRead("a"), okReply(entryBody(md, 4, 3, 40, "e4")))
	r.HandleRead(fenceRead("b"), okReply(entryBody(md, 4, 3, 40, "e4")))
	r.HandleRead(entryRead("a", 3), statusReply(bkproto.StatusCode_ENOENTRY))
	r.HandleRead(entryRead("b", 3), statusReply(bkproto.StatusCode_ENOENTRY))
	if rd := r.Ready(); rd.Done == nil || !errors.Is(rd.Done.Err, ErrEntryMissing) || rd.MetadataWrite != nil {
		t.Fatalf("anchor denied: %+v, want ErrEntryMissing and no close", rd)
	}
}

// TestRecoveryFailedReAddNeverCloses: a re-add fails for good after the
// end was found; recovery must fail without writing a close short of the
// entries it found (found by the simulator with re-adds broken on purpose).
func TestRecoveryFailedReAddNeverCloses(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	r := startRecovery(t, md) // no spare bookies
	r.Ready()
	r.HandleRead(fenceRead("a"), okReply(entryBody(md, 0, -1, 2, "e0")))
	r.HandleRead(fenceRead("b"), statusReply(bkproto.StatusCode_ENOENTRY))
	r.HandleRead(entryRead("a", 0), okReply(entryBody(md, 0, -1, 2, "e0")))
	r.HandleRead(entryRead("b", 1), statusReply(bkproto.StatusCode_ENOENTRY))
	r.HandleRead(entryRead("c", 1), statusReply(bkproto.StatusCode_ENOENTRY))
	if rd := r.Ready(); rd.MetadataWrite != nil {
		t.Fatal("closed before the re-add of entry 0 completed")
	}
	r.HandleAdd(AddRequest{Bookie: "b", EntryID: 0}, bkproto.StatusCode_EIO)
	rd := r.Ready()
	if rd.MetadataWrite != nil {
		t.Fatalf("failed recovery wrote %+v", rd.MetadataWrite.Metadata)
	}
	if rd.Done == nil || !errors.Is(rd.Done.Err, ErrNotEnoughBookies) {
		t.Fatalf("Done %+v, want ErrNotEnoughBookies", rd.Done)
	}
}
