package ledger

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"keeper/ledgerstore/bkproto"
)

const testLedger = 7

func testMetadata(t *testing.T, e, qw, qa int, ensemble ...BookieID) Metadata {
	t.Helper()
	md, err := NewMetadata(CreateConfig{EnsembleSize: e, WriteQuorum: qw, AckQuorum: qa, Password: []byte("pw")}, ensemble)
	if err != nil {
		t.Fatal(err)
	}
	md.Version = 1
	return md
}

func newTestWriter(t *testing.T, md Metadata, spares ...BookieID) *Writer {
	t.Helper()
	avail := append(slices.Clone(md.LastSegment().Bookies), spares...)
	w, err := NewWriter(WriterConfig{LedgerID: testLedger, Metadata: md, Bookies: Candidates{Available: avail}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// adds lists the bookies and entries of a batch of adds, as "bookie/entry".
func adds(rs []AddRequest) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s/%d", r.Bookie, r.EntryID))
	}
	return out
}

func completions(cs []Completion) []int64 {
	var out []int64
	for _, c := range cs {
		if c.Err != nil {
			out = append(out, -100-c.EntryID)
		} else {
			out = append(out, c.EntryID)
		}
	}
	return out
}

func ok(w interface {
	HandleAdd(AddRequest, bkproto.StatusCode)
}, b BookieID, entry int64) {
	w.HandleAdd(AddRequest{Bookie: b, EntryID: entry}, bkproto.StatusCode_EOK)
}

func TestWriterStripesAndPiggybacksLAC(t *testing.T) {
	md := testMetadata(t, 3, 2, 2, "a", "b", "c")
	w := newTestWriter(t, md)
	for i := range 3 {
		if id, err := w.Append([]byte(fmt.Sprint("payload", i))); err != nil || id != int64(i) {
			t.Fatalf("Append %d = %d, %v", i, id, err)
		}
		if i == 0 {
			ok(w, "a", 0)
			ok(w, "b", 0)
		}
	}
	rd := w.Ready()
	want := []string{"a/0", "b/0", "b/1", "c/1", "c/2", "a/2"}
	if got := adds(rd.Adds); !slices.Equal(got, want) {
		t.Fatalf("adds %v, want %v", got, want)
	}
	key := bkproto.MasterKey([]byte("pw"))
	wantLAC := map[int64]int64{0: -1, 1: 0, 2: 0}
	wantLength := map[int64]int64{0: 8, 1: 16, 2: 24}
	for _, a := range rd.Adds {
		e, err := bkproto.DecodeEntry(a.Body, md.DigestType, nil, testLedger, a.EntryID)
		if err != nil {
			t.Fatal(err)
		}
		if e.LAC != wantLAC[a.EntryID] || e.Length != wantLength[a.EntryID] || a.MasterKey != key || a.Recovery {
			t.Errorf("entry %d: LAC %d (want %d), length %d (want %d), key ok %v, recovery %v", a.EntryID,
				e.LAC, wantLAC[a.EntryID], e.Length, wantLength[a.EntryID], a.MasterKey == key, a.Recovery)
		}
	}
	if got := completions(rd.Completions); !slices.Equal(got, []int64{0}) {
		t.Errorf("completions %v, want [0]", got)
	}
}

// TestWriterCompletesInEntryOrder is the unit half of pitfall 4: a later
// entry with its ack quorum waits for every earlier one.
func TestWriterCompletesInEntryOrder(t *testing.T) {
	w := newTestWriter(t, testMetadata(t, 3, 2, 2, "a", "b", "c"))
	for range 3 {
		w.Append([]byte("x"))
	}
	w.Ready()
	ok(w, "c", 2)
	ok(w, "a", 2)
	ok(w, "b", 1)
	ok(w, "c", 1)
	if rd := w.Ready(); len(rd.Completions) != 0 || w.LAC() != -1 {
		t.Fatalf("completed %v with LAC %d before entry 0", completions(rd.Completions), w.LAC())
	}
	ok(w, "a", 0)
	ok(w, "a", 0) // a duplicate ack counts once
	if rd := w.Ready(); len(rd.Completions) != 0 {
		t.Fatalf("entry 0 completed with one ack: %v", completions(rd.Completions))
	}
	ok(w, "c", 0) // not in entry 0's write set {a, b}
	if rd := w.Ready(); len(rd.Completions) != 0 {
		t.Fatalf("an ack from outside the write set counted: %v", completions(rd.Completions))
	}
	ok(w, "b", 0)
	if rd := w.Ready(); !slices.Equal(completions(rd.Completions), []int64{0, 1, 2}) || w.LAC() != 2 {
		t.Fatalf("completions %v, LAC %d; want [0 1 2], 2", completions(rd.Completions), w.LAC())
	}
}

// TestWriterEnsembleChangeFreezesLAC is the unit half of pitfall 3: while
// the change is being written, nothing completes and the replacement gets
// nothing; once stored, only the replaced position is re-sent.
func TestWriterEnsembleChangeFreezesLAC(t *testing.T) {
	w := newTestWriter(t, testMetadata(t, 3, 2, 2, "a", "b", "c"), "d")
	for range 3 {
		w.Append([]byte("x"))
	}
	ok(w, "a", 0)
	ok(w, "b", 0)
	w.Ready()
	w.HandleAdd(AddRequest{Bookie: "c", EntryID: 1}, bkproto.StatusCode_EIO)
	rd := w.Ready()
	if rd.MetadataWrite == nil {
		t.Fatal("no ensemble change after EIO")
	}
	segs := rd.MetadataWrite.Metadata.Segments
	if len(segs) != 2 || segs[1].FirstEntryID != 1 || !slices.Equal(segs[1].Bookies, []BookieID{"a", "b", "d"}) {
		t.Fatalf("proposed segments %v, want a new segment at LAC+1 = 1 with c replaced by d", segs)
	}
	ok(w, "b", 1)
	ok(w, "a", 2)
	w.Append([]byte("x")) // entry 3, write set {a, b}: c is not in it
	ok(w, "a", 3)
	ok(w, "b", 3)
	rd = w.Ready()
	if len(rd.Completions) != 0 || w.LAC() != 0 {
		t.Fatalf("completed %v (LAC %d) during the ensemble change", completions(rd.Completions), w.LAC())
	}
	if got := adds(rd.Adds); !slices.Equal(got, []string{"a/3", "b/3"}) {
		t.Fatalf("adds during the change %v, want only entry 3 to a and b", got)
	}
	w.HandleMetadataWritten(2)
	rd = w.Ready()
	if got := adds(rd.Adds); !slices.Equal(got, []string{"d/1", "d/2"}) {
		t.Fatalf("adds after the change %v, want entries 1 and 2 to d", got)
	}
	ok(w, "c", 2) // the replaced bookie's late ack must not count
	if rd := w.Ready(); len(rd.Completions) != 0 {
		t.Fatalf("ack from the replaced bookie completed %v", completions(rd.Completions))
	}
	ok(w, "d", 1)
	ok(w, "d", 2)
	if rd := w.Ready(); !slices.Equal(completions(rd.Completions), []int64{1, 2, 3}) {
		t.Fatalf("completions %v, want [1 2 3]", completions(rd.Completions))
	}
	if md := w.Metadata(); md.Version != 2 || len(md.Segments) != 2 {
		t.Fatalf("writer metadata %+v after the change", md)
	}
}

// TestWriterSecondFailureReplacesSameSegment checks I3's equal-key rule:
// with the LAC unchanged, the next change replaces the new segment instead
// of adding another with the same key.
func TestWriterSecondFailureReplacesSameSegment(t *testing.T) {
	w := newTestWriter(t, testMetadata(t, 3, 3, 2, "a", "b", "c"), "d", "e")
	w.Append([]byte("x"))
	w.Ready()
	w.BookieFailed("a")
	w.BookieFailed("b") // queued behind the change in flight
	rd := w.Ready()
	if got := rd.MetadataWrite.Metadata.LastSegment(); got.FirstEntryID != 0 || got.Bookies[1] != "b" {
		t.Fatalf("first change %v, want segment 0 with only a replaced", got)
	}
	w.HandleMetadataWritten(2)
	rd = w.Ready()
	if rd.MetadataWrite == nil {
		t.Fatal("queued failure did not start a second change")
	}
	segs := rd.MetadataWrite.Metadata.Segments
	if len(segs) != 1 || slices.Contains(segs[0].Bookies, "a") || slices.Contains(segs[0].Bookies, "b") {
		t.Fatalf("second change %v, want one segment at 0 without a and b", segs)
	}
	for _, a := range rd.Adds {
		if a.Bookie == "b" || a.Bookie == "a" {
			t.Fatalf("sent %v to a failed bookie", adds(rd.Adds))
		}
	}
}

func TestWriterFencedFailsPendingAsUnknown(t *testing.T) {
	w := newTestWriter(t, testMetadata(t, 3, 3, 2, "a", "b", "c"))
	w.Append([]byte("x"))
	w.Append([]byte("y"))
	ok(w, "a", 0)
	ok(w, "b", 0)
	w.HandleAdd(AddRequest{Bookie: "c", EntryID: 1}, bkproto.StatusCode_EFENCED)
	rd := w.Ready()
	if got := completions(rd.Completions); !slices.Equal(got, []int64{0, -101}) {
		t.Fatalf("completions %v, want 0 ok then 1 failed", got)
	}
	if err := rd.Completions[1].Err; !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, ErrLedgerFenced) {
		t.Fatalf("pending add failed with %v, want outcome unknown and fenced", err)
	}
	_, err := w.Append([]byte("z"))
	if !errors.Is(err, ErrLedgerFenced) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("Append after fencing = %v, want fenced, not unknown (never sent)", err)
	}
	w.Close()
	rd = w.Ready()
	if rd.MetadataWrite == nil || rd.MetadataWrite.Metadata.LastEntryID != 0 {
		t.Fatalf("close after fencing: %+v, want a close at LAC 0", rd.MetadataWrite)
	}
	cur := rd.MetadataWrite.Metadata.Clone()
	cur.State, cur.LastEntryID, cur.Version = StateInRecovery, -1, 5
	w.HandleMetadata(cur)
	if rd := w.Ready(); rd.Done == nil || !errors.Is(rd.Done.Err, ErrLedgerFenced) {
		t.Fatalf("close of a ledger in recovery: %+v", rd.Done)
	}
}

func TestWriterChangeMeetsRecovery(t *testing.T) {
	w := newTestWriter(t, testMetadata(t, 3, 3, 2, "a", "b", "c"), "d")
	w.Append([]byte("x"))
	w.Ready()
	w.HandleAdd(AddRequest{Bookie: "a", EntryID: 0}, NoResponse)
	proposed := w.Ready().MetadataWrite.Metadata
	cur := proposed.Clone()
	cur.Segments = testMetadata(t, 3, 3, 2, "a", "b", "c").Segments
	cur.State, cur.Version = StateInRecovery, 2
	w.HandleMetadata(cur)
	rd := w.Ready()
	if len(rd.Completions) != 1 || !errors.Is(rd.Completions[0].Err, ErrLedgerFenced) || len(rd.Adds) != 0 {
		t.Fatalf("after IN_RECOVERY: completions %v adds %v", rd.Completions, adds(rd.Adds))
	}
}

// TestWriterChangeOutcomeUnknown: the driver lost the answer to the CAS
// and re-read; the stored value is the proposal, so it landed.
func TestWriterChangeOutcomeUnknown(t *testing.T) {
	w := newTestWriter(t, testMetadata(t, 3, 3, 2, "a", "b", "c"), "d")
	w.Append([]byte("x"))
	w.Ready()
	w.BookieFailed("c")
	cur := w.Ready().MetadataWrite.Metadata.Clone()
	cur.Version = 9
	w.HandleMetadata(cur)
	rd := w.Ready()
	if got := adds(rd.Adds); !slices.Equal(got, []string{"d/0"}) || rd.MetadataWrite != nil {
		t.Fatalf("after the unknown outcome resolved as landed: adds %v, write %v", got, rd.MetadataWrite)
	}
	if w.Metadata().Version != 9 {
		t.Fatalf("version %d, want 9", w.Metadata().Version)
	}
}

// TestWriterChangeRebase: another update (say, custom metadata) won the
// race; the writer proposes again on top of it.
func TestWriterChangeRebase(t *testing.T) {
	w := newTestWriter(t, testMetadata(t, 3, 3, 2, "a", "b", "c"), "d")
	w.Append([]byte("x"))
	w.Ready()
	w.BookieFailed("c")
	first := w.Ready().MetadataWrite.Metadata
	cur := testMetadata(t, 3, 3, 2, "a", "b", "c")
	cur.Custom, cur.Version = map[string][]byte{"k": []byte("v")}, 4
	w.HandleMetadata(cur)
	rd := w.Ready()
	if rd.MetadataWrite == nil {
		t.Fatal("no retry after a conflict")
	}
	got := rd.MetadataWrite.Metadata
	if got.Version != 4 || string(got.Custom["k"]) != "v" || !sameSegments(got.Segments, first.Segments) {
		t.Fatalf("retry %+v, want version 4, custom kept, same segments as %v", got, first.Segments)
	}
}

func TestWriterClose(t *testing.T) {
	w := newTestWriter(t, testMetadata(t, 3, 2, 2, "a", "b", "c"))
	w.Append([]byte("abc"))
	w.Append([]byte("de"))
	w.Ready()
	w.Close()
	if _, err := w.Append([]byte("x")); !errors.Is(err, ErrLedgerClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	if rd := w.Ready(); rd.MetadataWrite != nil {
		t.Fatal("close written with adds pending")
	}
	for _, a := range []struct {
		b BookieID
		e int64
	}{{"a", 0}, {"b", 0}, {"b", 1}, {"c", 1}} {
		ok(w, a.b, a.e)
	}
	rd := w.Ready()
	if rd.MetadataWrite == nil {
		t.Fatal("no close write after the adds completed")
	}
	md := rd.MetadataWrite.Metadata
	if md.State != StateClosed || md.LastEntryID != 1 || md.Length != 5 || md.Version != 1 {
		t.Fatalf("close write %+v, want CLOSED at 1, length 5, expecting version 1", md)
	}
	w.HandleMetadataWritten(2)
	if rd := w.Ready(); rd.Done == nil || rd.Done.Err != nil || rd.Done.Metadata.Version != 2 {
		t.Fatalf("Done %+v", rd.Done)
	}
}

func TestWriterCloseFindsClosed(t *testing.T) {
	for _, tt := range []struct {
		last   int64
		length int64
		ok     bool
	}{{0, 3, true}, {1, 5, false}} {
		w := newTestWriter(t, testMetadata(t, 3, 2, 2, "a", "b", "c"))
		w.Append([]byte("abc"))
		ok(w, "a", 0)
		ok(w, "b", 0)
		w.Close()
		cur := w.Ready().MetadataWrite.Metadata.Clone()
		cur.LastEntryID, cur.Length, cur.Version = tt.last, tt.length, 3
		w.HandleMetadata(cur)
		rd := w.Ready()
		if rd.Done == nil || (rd.Done.Err == nil) != tt.ok {
			t.Fatalf("stored end %d: Done %+v, want ok %v", tt.last, rd.Done, tt.ok)
		}
		if !tt.ok && !errors.Is(rd.Done.Err, ErrLedgerClosed) {
			t.Fatalf("stored end %d: %v, want ErrLedgerClosed", tt.last, rd.Done.Err)
		}
	}
}

func TestWriterNotEnoughBookies(t *testing.T) {
	w := newTestWriter(t, testMetadata(t, 3, 3, 2, "a", "b", "c"))
	w.Append([]byte("x"))
	w.Ready()
	w.HandleAdd(AddRequest{Bookie: "b", EntryID: 0}, bkproto.StatusCode_EREADONLY)
	rd := w.Ready()
	if len(rd.Completions) != 1 || !errors.Is(rd.Completions[0].Err, ErrNotEnoughBookies) ||
		!errors.Is(rd.Completions[0].Err, ErrOutcomeUnknown) {
		t.Fatalf("completions %v", rd.Completions)
	}
}

func TestWriterReadOnlyNeverChosen(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	w, _ := NewWriter(WriterConfig{LedgerID: testLedger, Metadata: md,
		Bookies: Candidates{Available: []BookieID{"a", "b", "c", "d", "e"}, ReadOnly: []BookieID{"d"}}})
	w.Append([]byte("x"))
	w.Ready()
	w.BookieFailed("a")
	if got := w.Ready().MetadataWrite.Metadata.LastSegment().Bookies; got[0] != "e" {
		t.Fatalf("replacement ensemble %v, want a replaced by e (d is read-only)", got)
	}
}

func TestWriterBackpressure(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	w, _ := NewWriter(WriterConfig{LedgerID: testLedger, Metadata: md, MaxPendingAdds: 2})
	w.Append(nil)
	w.Append(nil)
	if _, err := w.Append(nil); !errors.Is(err, ErrTooManyPending) {
		t.Fatalf("third Append = %v, want ErrTooManyPending", err)
	}
}

func TestNewWriterRejectsUsedLedger(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	md.State = StateClosed
	if _, err := NewWriter(WriterConfig{Metadata: md}); err == nil {
		t.Fatal("NewWriter accepted a closed ledger")
	}
}

// TestWriterOnlyBookies: a writer held to its bookies never moves the
// ledger elsewhere, not even after SetBookies offers others: a failed
// bookie fails the adds instead.
func TestWriterOnlyBookies(t *testing.T) {
	md := testMetadata(t, 1, 1, 1, "a")
	w, err := NewWriter(WriterConfig{LedgerID: testLedger, Metadata: md, OnlyBookies: []BookieID{"a"},
		Bookies: Candidates{Available: []BookieID{"a", "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	w.SetBookies(Candidates{Available: []BookieID{"a", "b", "c"}})
	w.Append([]byte("x"))
	w.Ready()
	w.BookieFailed("a")
	rd := w.Ready()
	if rd.MetadataWrite != nil {
		t.Fatalf("ensemble change to %v", rd.MetadataWrite.Metadata.LastSegment().Bookies)
	}
	if len(rd.Completions) != 1 || !errors.Is(rd.Completions[0].Err, ErrNotEnoughBookies) {
		t.Fatalf("completions %v, want the add failed with ErrNotEnoughBookies", rd.Completions)
	}
}
