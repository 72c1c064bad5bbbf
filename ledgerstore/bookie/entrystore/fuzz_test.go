package entrystore

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"reflect"
	"testing"
)

// FuzzScanEntryLog feeds arbitrary bytes to the entry log scanner, as the
// newest log or an older one. It must not panic, must move forward, must
// return only records that pass their checks, and must leave a torn log
// clean once cut where it says.
func FuzzScanEntryLog(f *testing.F) {
	lb := sampleLog()
	f.Add(lb.bytes(), true)
	f.Add(lb.seal(), false)
	f.Add(lb.bytes()[:len(lb.b)-9], true)
	f.Add(append(lb.bytes(), make([]byte, 100)...), true)
	f.Add(freshHeader[:30], true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, data []byte, last bool) {
		recs, off, err := scanChecked(t, data, last)
		switch {
		case err == io.EOF || errors.Is(err, ErrCorrupt):
		case errors.Is(err, ErrTorn):
			if !last {
				t.Fatalf("torn in a log that is not the newest: %v", err)
			}
			if off < LogHeaderBytes {
				return // Open removes such a file
			}
			again, _, err := scanChecked(t, data[:off], true)
			if err != io.EOF || again != recs {
				t.Fatalf("after cutting at %d: %d records, %v; want %d records, EOF", off, again, err, recs)
			}
		default:
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// scanChecked scans data, checking every record returned, and returns the
// number of records, the final Offset and the final error.
func scanChecked(t *testing.T, data []byte, last bool) (int, int64, error) {
	sc := NewScanner(bytes.NewReader(data), "fuzz.log", int64(len(data)), last)
	prev, n := int64(-1), 0
	for {
		rec, err := sc.Next()
		if err != nil {
			return n, sc.Offset(), err
		}
		n++
		if rec.Offset <= prev || rec.Offset+int64(len(rec.Entry)) > int64(len(data)) {
			t.Fatalf("record at %d (previous %d) outside the %d-byte file", rec.Offset, prev, len(data))
		}
		prev = rec.Offset
		stored := data[rec.Offset : rec.Offset+int64(len(rec.Entry))]
		if !bytes.Equal(stored, rec.Entry) ||
			crc32.Checksum(stored, castagnoli) != crc32FromHeader(data, rec.Offset) {
			t.Fatalf("record at %d does not match the file", rec.Offset)
		}
		if rec.Kind == KindEntry && (rec.LedgerID < 0 || rec.EntryID < 0) {
			t.Fatalf("entry with ids %d/%d", rec.LedgerID, rec.EntryID)
		}
	}
}

func crc32FromHeader(data []byte, entryOff int64) uint32 {
	h := data[entryOff-recordHeaderBytes : entryOff]
	return uint32(h[4])<<24 | uint32(h[5])<<16 | uint32(h[6])<<8 | uint32(h[7])
}

// FuzzLedgerRecord decodes arbitrary ledger records: a record that decodes
// must encode back to the same bytes.
func FuzzLedgerRecord(f *testing.F) {
	f.Add(encodeLedgerRecord(&ledgerInfo{}))
	f.Add(encodeLedgerRecord(&ledgerInfo{fenced: true, masterKey: []byte("k"), explicitLAC: []byte("lac")}))
	f.Add(encodeLedgerRecord(&ledgerInfo{masterKey: []byte{}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := decodeLedgerRecord(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode error %v does not match ErrCorrupt", err)
			}
			return
		}
		if again := encodeLedgerRecord(info); !bytes.Equal(again, b) {
			t.Fatalf("record %x re-encodes as %x", b, again)
		}
		back, err := decodeLedgerRecord(encodeLedgerRecord(info))
		if err != nil || !reflect.DeepEqual(back, info) {
			t.Fatalf("round trip turned %+v into %+v (%v)", info, back, err)
		}
	})
}
