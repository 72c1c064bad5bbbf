package ledger

import (
	"testing"

	"keeper/ledgerstore/bkproto"
)

// FuzzReadReplies feeds bookie answers built from arbitrary bytes to every
// reading state machine: whole response frames through bkproto and
// ReadReplyOf, and raw bodies with arbitrary statuses. Nothing may panic,
// and nothing unverified may come out: delivered entries are the ones
// asked for, and a recovery never starts beyond what a verified body said.
func FuzzReadReplies(f *testing.F) {
	md := Metadata{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2, State: StateOpen, LastEntryID: -1,
		Segments: []Segment{{FirstEntryID: 0, Bookies: []BookieID{"a", "b", "c"}}}, DigestType: bkproto.DigestCRC32C}
	good := bkproto.EncodeEntry(testLedger, 1, 0, 3, md.DigestType, nil, []byte("abc"))
	f.Add(good, int32(0), byte(0))
	f.Add(good[:20], int32(0), byte(1))
	f.Add([]byte{}, int32(403), byte(2))
	f.Add(bkproto.EncodeLAC(testLedger, 5, md.DigestType, nil), int32(0), byte(3))
	f.Fuzz(func(t *testing.T, data []byte, status int32, pick byte) {
		replies := []ReadReply{
			{Status: bkproto.StatusCode(status), EntryID: int64(pick) - 1, Body: data, LACBody: data,
				MaxLAC: int64(pick), HasMaxLAC: pick&1 == 1},
		}
		if resp, err := bkproto.DecodeResponse(data); err == nil {
			replies = append(replies, ReadReplyOf(resp))
		}
		for _, rep := range replies {
			fuzzRecovery(t, md, rep)
			fuzzReaders(t, md, rep, int64(pick%4))
		}
	})
}

func fuzzRecovery(t *testing.T, md Metadata, rep ReadReply) {
	m := md.Clone()
	m.State = StateInRecovery
	r, err := NewRecovery(RecoveryConfig{LedgerID: testLedger, Metadata: m})
	if err != nil {
		t.Fatal(err)
	}
	r.Ready()
	for _, b := range []BookieID{"a", "b", "c"} {
		r.HandleRead(fenceRead(b), rep)
	}
	if lac, ok := r.LACRecovered(); ok && lac >= 0 {
		if _, err := bkproto.DecodeEntry(rep.Body, md.DigestType, nil, testLedger, bkproto.LastAddConfirmed); err != nil {
			t.Fatalf("recovery started at LAC %d from an unverified body", lac)
		}
	}
	rd := r.Ready()
	for _, q := range rd.Reads {
		r.HandleRead(q, rep)
	}
	r.Tick()
	r.Ready()
}

func fuzzReaders(t *testing.T, md Metadata, rep ReadReply, entry int64) {
	rd, err := NewReader(ReaderConfig{LedgerID: testLedger, Metadata: md, LAC: 3, First: entry, Last: entry})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range rd.Ready().Reads {
		rd.HandleRead(q, rep)
	}
	for _, e := range rd.Ready().Entries {
		if e.EntryID != entry {
			t.Fatalf("reader asked for entry %d delivered %d", entry, e.EntryID)
		}
	}
	lr, _ := NewLACReader(LACReaderConfig{LedgerID: testLedger, Metadata: md})
	for _, q := range lr.Ready().Reads {
		lr.HandleRead(q, rep)
	}
	lr.Ready()
	tl, _ := NewTailer(TailerConfig{LedgerID: testLedger, Metadata: md, LAC: -1})
	for range 2 {
		out := tl.Ready()
		for _, e := range out.Entries {
			if e.EntryID > tl.LAC() {
				t.Fatalf("tailer delivered entry %d above its LAC %d", e.EntryID, tl.LAC())
			}
		}
		for _, q := range out.Reads {
			tl.HandleRead(q, rep)
		}
	}
}

// FuzzParseRackInfo feeds arbitrary bytes to the /bookies rack
// information decoder: it must not panic, and what it returns must be
// locations a policy can use (starting with "/", bounded).
func FuzzParseRackInfo(f *testing.F) {
	f.Add([]byte(`{"default":{"10.0.0.1:3181":{"rack":"/rack1","hostname":"bk1"}}}`))
	f.Add([]byte(`{"a":{"b:1":{"rack":"r"}},"b":{"b:1":{"rack":"/s"}}}`))
	f.Add([]byte(`{"g":{"x":{"rack":""}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		racks, err := ParseRackInfo(data)
		if err != nil {
			return
		}
		for b, loc := range racks {
			if len(loc) < 2 || loc[0] != '/' || len(loc) > maxLocationBytes {
				t.Fatalf("bookie %q: location %q", b, loc)
			}
		}
	})
}
