package ledger

import (
	"testing"

	"keeper/ledgerstore/bkproto"
)

// TestReaderCountsDigestMismatches: a copy that fails verification counts
// once in Stats, and the reader goes on to the next replica.
func TestReaderCountsDigestMismatches(t *testing.T) {
	md := testMetadata(t, 3, 2, 2, "a", "b", "c")
	r, err := NewReader(ReaderConfig{LedgerID: testLedger, Metadata: md, LAC: 0, First: 0, Last: 0})
	if err != nil {
		t.Fatal(err)
	}
	r.Ready()
	corrupt := okReply(entryBody(md, 0, -1, 1, "0"))
	corrupt.Body[bkproto.EntryHeaderBytes] ^= 0xff
	r.HandleRead(plainRead("a", 0), corrupt)
	rd := r.Ready()
	if rd.Stats != (Stats{DigestMismatches: 1}) {
		t.Fatalf("stats %+v after a corrupt copy, want one digest mismatch", rd.Stats)
	}
	r.HandleRead(plainRead("b", 0), okReply(entryBody(md, 0, -1, 1, "0")))
	rd = r.Ready()
	if rd.Stats != (Stats{}) || len(rd.Entries) != 1 {
		t.Fatalf("stats %+v, entries %d after a good copy; want none counted, one entry", rd.Stats, len(rd.Entries))
	}
}

// TestWriterCountsUnderReplicatedAdds: an entry acknowledged by Qa of its
// Qw bookies, then failed by the third while it still holds its position,
// counts as under-replicated; answers that leave no entry short do not.
func TestWriterCountsUnderReplicatedAdds(t *testing.T) {
	tests := []struct {
		name   string
		status bkproto.StatusCode
		bookie BookieID
		want   int
	}{
		{"error from the third bookie", bkproto.StatusCode_EIO, "c", 1},
		{"no answer from the third bookie", NoResponse, "c", 1},
		{"late ack from the third bookie", bkproto.StatusCode_EOK, "c", 0},
		{"error from a bookie outside the write set", bkproto.StatusCode_EIO, "z", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md := testMetadata(t, 3, 3, 2, "a", "b", "c")
			w := newTestWriter(t, md, "d")
			if _, err := w.Append([]byte("x")); err != nil {
				t.Fatal(err)
			}
			ok(w, "a", 0)
			ok(w, "b", 0)
			if rd := w.Ready(); len(rd.Completions) != 1 || rd.Stats != (Stats{}) {
				t.Fatalf("completions %v, stats %+v", completions(rd.Completions), rd.Stats)
			}
			w.HandleAdd(AddRequest{Bookie: tc.bookie, EntryID: 0}, tc.status)
			if got := w.Ready().Stats.UnderReplicatedAdds; got != tc.want {
				t.Fatalf("under-replicated adds %d, want %d", got, tc.want)
			}
		})
	}
}

// TestWriterCountsNotAdheringReplacements: with two racks and a write
// quorum that must span both, a replacement that can only come from the
// rack already used counts as not adhering; one that spans both does not.
func TestWriterCountsNotAdheringReplacements(t *testing.T) {
	tests := []struct {
		name  string
		spare BookieID
		rack  string
		want  int
	}{
		{"spare in the other rack", "d", "/r2", 0},
		{"spare in the same rack", "d", "/r1", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md := testMetadata(t, 2, 2, 2, "a", "b")
			racks := map[BookieID]string{"a": "/r1", "b": "/r2", tc.spare: tc.rack}
			w, err := NewWriter(WriterConfig{LedgerID: testLedger, Metadata: md,
				Bookies: Candidates{Available: []BookieID{"a", "b", tc.spare}, Racks: racks}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Append([]byte("x")); err != nil {
				t.Fatal(err)
			}
			w.Ready()
			w.HandleAdd(AddRequest{Bookie: "b", EntryID: 0}, bkproto.StatusCode_EIO)
			rd := w.Ready()
			if rd.MetadataWrite == nil {
				t.Fatal("no ensemble change proposed")
			}
			if got := rd.Stats.NotAdhering; got != tc.want {
				t.Fatalf("not adhering %d, want %d (ensemble %v)", got, tc.want,
					rd.MetadataWrite.Metadata.LastSegment().Bookies)
			}
		})
	}
}

// TestRecoveryCountsEntries: the Outcome of a recovery that read two
// entries forward and re-added them reports both counts.
func TestRecoveryCountsEntries(t *testing.T) {
	md := testMetadata(t, 3, 3, 2, "a", "b", "c")
	r := startRecovery(t, md)
	r.Ready()
	r.HandleRead(fenceRead("a"), okReply(entryBody(md, 5, 4, 50, "e5")))
	r.HandleRead(fenceRead("b"), okReply(entryBody(md, 5, 4, 50, "e5")))
	r.Ready()                                                               // the anchor 4, entries 5 on
	r.HandleRead(entryRead("b", 4), okReply(entryBody(md, 4, 3, 40, "e4"))) // the anchor's first bookie
	r.HandleRead(entryRead("c", 5), okReply(entryBody(md, 5, 4, 50, "e5")))
	corrupt := okReply(entryBody(md, 6, 5, 60, "e6"))
	corrupt.Body[bkproto.EntryHeaderBytes] ^= 0xff
	r.HandleRead(entryRead("a", 6), corrupt) // wakes b and c
	r.HandleRead(entryRead("b", 6), okReply(entryBody(md, 6, 5, 60, "e6")))
	if rd := r.Ready(); rd.Stats.DigestMismatches != 1 {
		t.Fatalf("stats %+v, want the corrupt copy of entry 6 counted", rd.Stats)
	}
	// Entry 7 is absent: b, asked first, then a and c, say so.
	for _, b := range []BookieID{"b", "a", "c"} {
		r.HandleRead(entryRead(b, 7), statusReply(bkproto.StatusCode_ENOENTRY))
	}
	for _, e := range []int64{5, 6} {
		ok(r, "a", e)
		ok(r, "b", e)
	}
	rd := r.Ready()
	if rd.MetadataWrite == nil || rd.MetadataWrite.Metadata.LastEntryID != 6 {
		t.Fatalf("closing write %+v, want one at entry 6", rd.MetadataWrite)
	}
	r.HandleMetadataWritten(rd.MetadataWrite.Metadata.Version + 1)
	rd = r.Ready()
	if rd.Done == nil || rd.Done.Err != nil {
		t.Fatalf("Done %+v", rd.Done)
	}
	if rd.Done.RecoveryReads != 2 || rd.Done.RecoveryAdds != 2 {
		t.Fatalf("recovery counted %d reads and %d adds, want 2 and 2", rd.Done.RecoveryReads, rd.Done.RecoveryAdds)
	}
}
