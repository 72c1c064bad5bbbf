package journal_test

import (
	"bytes"
	"errors"
	"runtime"
	"slices"
	"testing"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bookie/journal"
)

// fuzzConfig keeps the default record limit (8 MiB), far above any fuzz
// input, so that the allocation check below catches a reader that trusts
// a length field.
var fuzzConfig = journal.Config{PreAllocSizeBytes: 4096}

// FuzzReplayFile feeds arbitrary bytes to the reader as a journal file,
// once as the journal's last file and once followed by another. Reading
// must never panic, never allocate much more than the file's size, and
// end in one of the documented ways; a torn tail, once Open cut it, must
// read back cleanly with the same records; and Open must agree with the
// reader.
//
// The first input byte chooses a valid 512-byte header to put before the
// rest (format 5, 6 or 7), or none (the rest is the whole file), so that
// inputs stay small and the fuzzer's minimizer stays quick.
func FuzzReplayFile(f *testing.F) {
	e0, e1 := entryBody(1, 0, 20), entryBody(1, 1, 300)
	for _, version := range []byte{6, 7} {
		v := version - 4 // the selector byte
		f.Add(join([]byte{v}, frame(int(version), e0), frame(int(version), e1), padding(16)))
		f.Add(join([]byte{v}, frame(int(version), e0), frame(int(version), e1)[:40], zeros(16)))
		f.Add(join([]byte{v}, frame(int(version), e0), setLength(frame(int(version), e1), 5000), padding(8), zeros(16)))
		f.Add(join([]byte{v}, frame(int(version), journal.NewMasterKeyRecord(1, []byte("k")).Body()), padding(8), zeros(20), frame(int(version), e0)))
	}
	f.Add(join([]byte{3}, frame6(e0), padding(8)))
	f.Add(join([]byte{3}, setLength(frame7(e0), 8<<20-1), zeros(16)))
	f.Add(join([]byte{3}, frame7(e0), []byte{0xff, 0xff, 0xff, 0x00, 0x7f, 0, 0, 0}))
	f.Add([]byte("\x00BKLG"))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, input []byte) {
		if len(input) == 0 {
			return
		}
		data := input[1:]
		if v := input[0] % 4; v > 0 {
			data = join(fileHeader(int(v)+4), data)
		}
		checkReplayFile(t, data)
	})
}

// checkReplayFile is FuzzReplayFile's check of one file's bytes.
func checkReplayFile(t *testing.T, data []byte) {
	e0 := entryBody(1, 0, 20)
	{
		for _, last := range []bool{true, false} {
			m := vfs.NewMem()
			writeRaw(t, m, "/j", 1, data)
			if !last {
				writeRaw(t, m, "/j", 2, padTo(join(fileHeader(7), frame7(e0))))
			}
			got := replayBounded(t, m, int64(len(data)))
			switch {
			case got.err == nil:
				j, err := journal.Open(m, "/j", fuzzConfig)
				if err != nil {
					t.Fatalf("last=%v: read cleanly but Open failed: %v", last, err)
				}
				if j.Mark() != got.end {
					t.Fatalf("last=%v: Open's mark %v, Replay ended at %v", last, j.Mark(), got.end)
				}
				mustOK(t, j.Close())
			case errors.Is(got.err, journal.ErrTorn):
				if !last {
					t.Fatalf("torn tail reported in a file that is not the last: %v", got.err)
				}
				j, err := journal.Open(m, "/j", fuzzConfig)
				if err != nil {
					t.Fatalf("repair: %v", err)
				}
				again := replay(m, "/j", journal.Position{}, fuzzConfig)
				if again.err != nil || !slices.EqualFunc(again.bodies, got.bodies, bytes.Equal) || again.end != j.Mark() {
					t.Fatalf("after repair: %d records to %v, %v; want %d and a clean end at %v",
						len(again.bodies), again.end, again.err, len(got.bodies), j.Mark())
				}
				mustOK(t, j.Close())
			case errors.Is(got.err, journal.ErrCorrupt):
				if _, err := journal.Open(m, "/j", fuzzConfig); last && !errors.Is(err, journal.ErrCorrupt) {
					t.Fatalf("Open of a corrupt last file: %v", err)
				}
			default:
				t.Fatalf("last=%v: unexpected error %v", last, got.err)
			}
		}
	}
}

// replayBounded replays the journal and fails if reading allocated much
// more than the file holds, whatever its length fields say.
func replayBounded(t *testing.T, m *vfs.MemFS, fileBytes int64) replayed {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var r replayed
	var count int
	r.end, r.err = journal.Replay(m, "/j", journal.Position{}, fuzzConfig, func(rec journal.Record) error {
		count++
		return nil
	})
	runtime.ReadMemStats(&after)
	// The read-ahead and zero-scan buffers, the records of the second file,
	// and some slack for the error values.
	if grew := int64(after.TotalAlloc - before.TotalAlloc); grew > 2*fileBytes+512<<10 {
		t.Fatalf("reading a %d-byte file allocated %d bytes", fileBytes, grew)
	}
	// Replay again to collect the bodies (copying them allocates).
	r = replay(m, "/j", journal.Position{}, fuzzConfig)
	if len(r.bodies) != count {
		t.Fatalf("two replays of the same files: %d and %d records", count, len(r.bodies))
	}
	return r
}

// FuzzDecodeRecord checks the record decoder: it never panics, and what it
// accepts rebuilds to the same bytes through the constructors.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(entryBody(1, 2, 3))
	f.Add(journal.NewMasterKeyRecord(1, []byte("key")).Body())
	f.Add(journal.NewFenceRecord(1).Body())
	f.Add(journal.NewExplicitLACRecord(1, []byte("lac")).Body())
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := journal.DecodeRecord(body)
		if err != nil {
			return
		}
		var again journal.Record
		switch r.Kind() {
		case journal.KindEntry:
			again, err = journal.NewEntryRecord(bytes.Clone(body))
			mustOK(t, err)
		case journal.KindMasterKey:
			again = journal.NewMasterKeyRecord(r.LedgerID(), r.MasterKey())
		case journal.KindFence:
			again = journal.NewFenceRecord(r.LedgerID())
		case journal.KindExplicitLAC:
			again = journal.NewExplicitLACRecord(r.LedgerID(), r.ExplicitLAC())
		case journal.KindUnknown:
			if r.EntryID() >= 0 {
				t.Fatalf("unknown kind with entry id %d", r.EntryID())
			}
			return
		default:
			t.Fatalf("accepted record of kind %v", r.Kind())
		}
		if !bytes.Equal(again.Body(), body) {
			t.Fatalf("%v rebuilt as %x, decoded from %x", r, again.Body(), body)
		}
	})
}
