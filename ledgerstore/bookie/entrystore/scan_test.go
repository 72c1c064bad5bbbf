package entrystore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"slices"
	"testing"
)

// logBuilder writes entry logs byte by byte, as the store's writer does.
type logBuilder struct {
	b       []byte
	bounds  []int64 // offsets where records end (the first is the header's end)
	ledgers map[int64]int64
}

func newLogBuilder() *logBuilder {
	return &logBuilder{
		b:       append([]byte{}, freshHeader...),
		bounds:  []int64{LogHeaderBytes},
		ledgers: make(map[int64]int64),
	}
}

func (lb *logBuilder) entry(ledgerID, entryID int64, size int) *logBuilder {
	return lb.raw(makeEntry(ledgerID, entryID, entryID-1, size), ledgerID)
}

// raw appends a record of arbitrary bytes.
func (lb *logBuilder) raw(entry []byte, ledgerID int64) *logBuilder {
	lb.b = appendRecord(lb.b, entry)
	lb.bounds = append(lb.bounds, int64(len(lb.b)))
	lb.ledgers[ledgerID] += recordHeaderBytes + int64(len(entry))
	return lb
}

// seal appends the ledgers map and patches the header.
func (lb *logBuilder) seal() []byte {
	var pairs []LedgerBytes
	for _, id := range slices.Sorted(maps.Keys(lb.ledgers)) {
		pairs = append(pairs, LedgerBytes{LedgerID: id, Bytes: lb.ledgers[id]})
	}
	end := int64(len(lb.b))
	b := appendMapChunks(slices.Clone(lb.b), pairs)
	copy(b, encodeHeader(Header{Version: LogVersion, LedgersMapOffset: end, LedgersCount: int32(len(pairs))})[:20])
	return b
}

func (lb *logBuilder) bytes() []byte { return slices.Clone(lb.b) }

// scanned is what a scan of a whole log found.
type scanned struct {
	entries int
	pairs   int
	err     error
	offset  int64 // Offset() after the last call
}

func scanAll(data []byte, last bool) scanned {
	sc := NewScanner(bytes.NewReader(data), "test.log", int64(len(data)), last)
	var out scanned
	for {
		rec, err := sc.Next()
		if err != nil {
			out.err, out.offset = err, sc.Offset()
			return out
		}
		if rec.Kind == KindEntry {
			out.entries++
		} else {
			out.pairs += len(rec.Ledgers)
		}
	}
}

func sampleLog() *logBuilder {
	lb := newLogBuilder()
	for i := range int64(6) {
		lb.entry(i%3, i, 40+int(i)*37)
	}
	return lb
}

// TestScanClean reads well-formed logs: unsealed, sealed, sealed with
// more than one map chunk, sealed and empty.
func TestScanClean(t *testing.T) {
	many := newLogBuilder()
	for i := range int64(mapChunkPairs + 5) {
		many.entry(i, 0, MinEntryBytes)
	}
	for name, tc := range map[string]struct {
		data           []byte
		entries, pairs int
	}{
		"unsealed":     {sampleLog().bytes(), 6, 0},
		"sealed":       {sampleLog().seal(), 6, 3},
		"two chunks":   {many.seal(), mapChunkPairs + 5, mapChunkPairs + 5},
		"empty sealed": {newLogBuilder().seal(), 0, 0},
		"header only":  {newLogBuilder().bytes(), 0, 0},
	} {
		for _, last := range []bool{false, true} {
			got := scanAll(tc.data, last)
			if got.err != io.EOF || got.entries != tc.entries || got.pairs != tc.pairs {
				t.Errorf("%s (last %v): %+v, want %d entries, %d pairs, EOF", name, last, got, tc.entries, tc.pairs)
			}
		}
	}
	data := sampleLog().seal()
	sc := NewScanner(bytes.NewReader(data), "x", int64(len(data)), false)
	if ok, err := sc.SeekLedgersMap(); !ok || err != nil {
		t.Fatalf("SeekLedgersMap = %v, %v", ok, err)
	}
	rec, err := sc.Next()
	if err != nil || rec.Kind != KindLedgersMap || len(rec.Ledgers) != 3 || rec.Ledgers[1].LedgerID != 1 {
		t.Fatalf("map chunk = %+v, %v", rec, err)
	}
	if _, err := sc.Next(); err != io.EOF {
		t.Fatalf("after the map: %v", err)
	}
}

// TestScanEveryCut cuts a log at every byte, as a crash during the append
// can, and zero-fills the cut as a filesystem that grew the file first
// can: the newest log is then torn (or clean on a record boundary), never
// corrupt, and cutting it where the scanner says leaves a clean log. Any
// other log is corrupt.
func TestScanEveryCut(t *testing.T) {
	lb := sampleLog()
	full := lb.bytes()
	boundary := map[int64]bool{}
	for _, b := range lb.bounds {
		boundary[b] = true
	}
	for cut := range int64(len(full)) {
		for _, zeroFill := range []bool{false, true} {
			data := slices.Clone(full[:cut])
			if zeroFill {
				data = append(data, make([]byte, int64(len(full))-cut)...)
			}
			got := scanAll(data, true)
			clean := boundary[cut] && !zeroFill
			switch {
			case clean && got.err != io.EOF:
				t.Fatalf("cut %d: %v, want a clean end", cut, got.err)
			case !clean && !errors.Is(got.err, ErrTorn):
				t.Fatalf("cut %d (zero fill %v): %v, want torn", cut, zeroFill, got.err)
			case !clean && got.offset != 0:
				if again := scanAll(data[:got.offset], true); again.err != io.EOF {
					t.Fatalf("cut %d: after truncating to %d: %v", cut, got.offset, again.err)
				}
			}
			if !clean && !errors.Is(scanAll(data, false).err, ErrCorrupt) {
				t.Fatalf("cut %d (zero fill %v) of an older log not corrupt", cut, zeroFill)
			}
		}
	}
}

// TestScanDamage lists damage that must be ErrCorrupt even in the newest
// log, where a torn tail would be forgiven.
func TestScanDamage(t *testing.T) {
	put32 := func(b []byte, off int, v uint32) []byte {
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	lb := sampleLog()
	recStart := func(i int) int { return int(lb.bounds[i]) } // record i's header
	lastStart := recStart(len(lb.bounds) - 2)
	flip := func(b []byte, off int) []byte { b[off] ^= 0x40; return b }
	negative := newLogBuilder().entry(1, 0, 50)
	negative.raw(makeEntry(-7, 3, 0, 50), 0)
	afterMap := newLogBuilder().entry(1, 0, 50)
	afterMap.b = appendMapChunks(afterMap.b, []LedgerBytes{{1, 58}})
	afterMap.entry(1, 1, 50)
	emptyChunk := newLogBuilder().entry(1, 0, 50)
	chunk := binary.BigEndian.AppendUint64(nil, mapIDBits(mapLedgerID))
	chunk = binary.BigEndian.AppendUint64(chunk, mapIDBits(mapEntryID))
	chunk = binary.BigEndian.AppendUint32(chunk, 0) // count 0
	emptyChunk.raw(append(chunk, 0, 0, 0, 0), 0)

	for name, data := range map[string][]byte{
		"middle payload":     flip(lb.bytes(), recStart(3)+40),
		"last record body":   flip(lb.bytes(), lastStart+12),
		"size shrunk":        put32(lb.bytes(), recStart(2), 30),
		"size swallows next": put32(lb.bytes(), recStart(1), uint32(lb.bounds[3]-lb.bounds[1]-8)),
		"last size grown":    put32(lb.bytes(), lastStart, uint32(len(lb.b)-lastStart-8+100)),
		"bad magic":          flip(lb.bytes(), 1),
		"bad version":        put32(lb.bytes(), 4, 1),
		"reserved header":    flip(lb.bytes(), 500),
		"map offset too far": put32(lb.seal(), 12, 1<<30),
		"count mismatch":     put32(lb.seal(), 16, 2),
		"map offset mid-log": put32(lb.seal(), 12, uint32(lb.bounds[2])),
		"negative ids":       negative.bytes(),
		"entry after map":    afterMap.bytes(),
		"empty map chunk":    emptyChunk.bytes(),
		"sealed and cut":     lb.seal()[:len(lb.seal())-5],
	} {
		if got := scanAll(data, true); !errors.Is(got.err, ErrCorrupt) {
			t.Errorf("%s: %+v, want ErrCorrupt", name, got)
		}
	}
}
