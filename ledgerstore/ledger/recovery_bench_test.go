package ledger

import (
	"runtime"
	"testing"

	"keeper/ledgerstore/bkproto"
)

// BenchmarkRecoveryForward runs one recovery of a ledger of
// benchRecoveryEntries 1 KiB entries, none of them confirmed (E3/Qw2/Qa2,
// a window of 64), per op, against bookies that answer every read and
// re-add at once: the state machine's own cost per entry, which the
// allocs/entry metric states without the benchmark's fixed costs.
func BenchmarkRecoveryForward(b *testing.B) {
	const benchRecoveryEntries = 10_000
	md, err := NewMetadata(CreateConfig{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2, Password: []byte("pw")},
		[]BookieID{"a", "b", "c"})
	if err != nil {
		b.Fatal(err)
	}
	md.Version = 1
	payload := string(make([]byte, 1024))
	bodies := make([][]byte, benchRecoveryEntries)
	for e := range bodies {
		bodies[e] = entryBody(md, int64(e), -1, int64(e+1)*1024, payload)
	}
	var reads []ReadRequest
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		r, err := NewRecovery(RecoveryConfig{LedgerID: testLedger, Metadata: md, ReadAheadEntries: 64,
			Bookies: Candidates{Available: md.LastSegment().Bookies}})
		if err != nil {
			b.Fatal(err)
		}
		for {
			rd := r.Ready()
			if rd.Done != nil {
				if rd.Done.Err != nil || rd.Done.Metadata.LastEntryID != benchRecoveryEntries-1 {
					b.Fatalf("recovered to %+v (%v)", rd.Done.Metadata, rd.Done.Err)
				}
				break
			}
			if rd.Empty() {
				b.Fatal("recovery stalled")
			}
			if rd.MetadataWrite != nil {
				r.HandleMetadataWritten(rd.MetadataWrite.Metadata.Version + 1)
			}
			reads = append(reads[:0], rd.Reads...)
			for _, a := range rd.Adds {
				r.HandleAdd(a, bkproto.StatusCode_EOK)
			}
			for _, req := range reads {
				reply := statusReply(bkproto.StatusCode_ENOENTRY)
				if req.EntryID >= 0 && req.EntryID < benchRecoveryEntries {
					reply = okReply(bodies[req.EntryID])
				}
				r.HandleRead(req, reply)
			}
		}
	}
	runtime.ReadMemStats(&after)
	entries := float64(b.N) * benchRecoveryEntries
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/entries, "allocs/entry")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/entries, "ns/entry")
}
