package journal_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bookie/journal"
)

// TestFileBytes checks a whole file, byte for byte, against the layout
// built by hand: the header sector, each kind of record, the padding to
// the boundary and the preallocated zeros.
func TestFileBytes(t *testing.T) {
	for _, version := range []int{6, 7} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			m := vfs.NewMem()
			cfg := withFormat(version)
			cfg.FirstLogID = 0x18a5b2c3d4e // a time in ms, as BookKeeper picks
			j, err := journal.Open(m, "/j", cfg)
			mustOK(t, err)
			key := bytes.Repeat([]byte{0xAB}, 20)
			lac := entryBody(7, 3, 4)[:20]
			recs := []journal.Record{
				journal.NewMasterKeyRecord(7, key),
				entryRec(t, 7, 0, 40),
				summedRec(t, 7, 1, 40), // written as NewEntryRecord's: the sum given is the one computed
				journal.NewFenceRecord(7),
				journal.NewExplicitLACRecord(7, lac),
			}
			want := fileHeader(version)
			for i, r := range recs {
				want = append(want, frame(version, r.Body())...)
				pos, err := j.Append(r)
				mustOK(t, err)
				if wantPos := (journal.Position{LogID: cfg.FirstLogID, Offset: int64(len(want))}); pos != wantPos {
					t.Errorf("record %d: Append = %v, want %v", i, pos, wantPos)
				}
			}
			mustOK(t, j.Sync())
			want = padTo(want)
			if mark := j.Mark(); mark != (journal.Position{LogID: cfg.FirstLogID, Offset: int64(len(want))}) {
				t.Errorf("Mark = %v, want offset %d", mark, len(want))
			}
			want = append(want, zeros(4096-len(want))...) // one preallocation step
			got, err := vfs.ReadFile(m, "/j/current/18a5b2c3d4e.txn")
			mustOK(t, err)
			if !bytes.Equal(got, want) {
				t.Fatalf("file differs from the layout:\ngot  %s\nwant %s", hex.EncodeToString(got[:1024]), hex.EncodeToString(want[:1024]))
			}
			mustOK(t, j.Close())
		})
	}
}

// TestSpecialRecordBytes pins the bodies of the special records.
func TestSpecialRecordBytes(t *testing.T) {
	tests := []struct {
		name string
		rec  journal.Record
		want string
	}{
		{"master key", journal.NewMasterKeyRecord(0x0102, []byte{0xAA, 0xBB}),
			"0000000000000102" + "fffffffffffff000" + "00000002" + "aabb"},
		{"fence", journal.NewFenceRecord(-1 << 63),
			"8000000000000000" + "ffffffffffffe000"},
		{"explicit LAC", journal.NewExplicitLACRecord(5, []byte{1, 2, 3}),
			"0000000000000005" + "ffffffffffff8000" + "00000003" + "010203"},
		{"empty key", journal.NewMasterKeyRecord(5, nil),
			"0000000000000005" + "fffffffffffff000" + "00000000"},
	}
	for _, tt := range tests {
		if got := hex.EncodeToString(tt.rec.Body()); got != tt.want {
			t.Errorf("%s: body %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestPaddingSizes appends one record of each size so that the batch ends
// at every interesting distance from the boundary, and checks the padding
// record the Flush writes.
func TestPaddingSizes(t *testing.T) {
	tests := []struct {
		endMod  int // where the record ends, modulo 512
		padding int // the padding record's size in all
	}{
		{0, 512}, // already aligned: a whole unit (BookKeeper writes none)
		{504, 8}, // exactly a header fits: padLen 0
		{505, 519},
		{511, 513},
		{1, 511},
		{100, 412},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("end=%d", tt.endMod), func(t *testing.T) {
			m := vfs.NewMem()
			j, err := journal.Open(m, "/j", testConfig)
			mustOK(t, err)
			// The record starts at 512 and takes 8 bytes of framing (v7).
			bodyBytes := (tt.endMod-512-8)%512 + 512
			if bodyBytes < 32+16 {
				bodyBytes += 512
			}
			_, err = j.Append(entryRec(t, 1, 0, bodyBytes-36))
			mustOK(t, err)
			mustOK(t, j.Flush())
			end := 512 + 8 + bodyBytes
			data, err := vfs.ReadFile(m, "/j/current/100.txn")
			mustOK(t, err)
			if got := data[end : end+tt.padding]; !bytes.Equal(got, padding(tt.padding)) {
				t.Errorf("padding at %d: %x..., want a %d-byte padding record", end, got[:8], tt.padding)
			}
			if (end+tt.padding)%512 != 0 {
				t.Errorf("padding ends at %d, not on a boundary", end+tt.padding)
			}
		})
	}
}

// TestPreallocation checks that files grow ahead of the writes in whole
// steps, as BookKeeper's JournalChannel grows them.
func TestPreallocation(t *testing.T) {
	m := vfs.NewMem()
	cfg := testConfig
	cfg.MaxSizeBytes = 1 << 20
	j, err := journal.Open(m, "/j", cfg)
	mustOK(t, err)
	size := func() int64 {
		info, err := m.Stat("/j/current/100.txn")
		mustOK(t, err)
		return info.Size()
	}
	_, err = j.Append(entryRec(t, 1, 0, 100))
	mustOK(t, err)
	mustOK(t, j.Sync())
	if got := size(); got != 4096 {
		t.Errorf("after the first batch: %d bytes, want one step (4096)", got)
	}
	_, err = j.Append(entryRec(t, 1, 1, 10_000))
	mustOK(t, err)
	mustOK(t, j.Sync())
	if got, mark := size(), j.Mark().Offset; got != 12288 || mark > got {
		t.Errorf("after crossing two steps: %d bytes (mark %d), want 12288", got, mark)
	}
}

// TestDecodeRecord is the record decoder's table test.
func TestDecodeRecord(t *testing.T) {
	ids := func(ledgerID, entryID int64, rest ...byte) []byte {
		b := binary.BigEndian.AppendUint64(nil, uint64(ledgerID))
		b = binary.BigEndian.AppendUint64(b, uint64(entryID))
		return append(b, rest...)
	}
	tests := []struct {
		name string
		body []byte
		kind journal.Kind // 0: an error
	}{
		{"empty", nil, 0},
		{"15 bytes", make([]byte, 15), 0},
		{"bare entry ids", ids(1, 0), journal.KindEntry},
		{"entry", entryBody(1, 9, 3), journal.KindEntry},
		{"master key", ids(1, -0x1000, 0, 0, 0, 2, 7, 7), journal.KindMasterKey},
		{"master key, value too short", ids(1, -0x1000, 0, 0, 0, 3, 7, 7), 0},
		{"master key, value too long", ids(1, -0x1000, 0, 0, 0, 1, 7, 7), 0},
		{"master key, negative length", ids(1, -0x1000, 0xff, 0xff, 0xff, 0xff), 0},
		{"master key, no length", ids(1, -0x1000, 0, 0), 0},
		{"fence", ids(1, -0x2000), journal.KindFence},
		{"fence with a body", ids(1, -0x2000, 0), 0},
		{"explicit LAC", ids(1, -0x8000, 0, 0, 0, 1, 9), journal.KindExplicitLAC},
		{"explicit LAC, empty", ids(1, -0x8000, 0, 0, 0, 0), journal.KindExplicitLAC},
		{"explicit LAC, truncated", ids(1, -0x8000, 0, 0, 0, 2, 9), 0},
		{"force ledger", ids(1, -0x4000), journal.KindUnknown},
		{"unknown", ids(1, -1, 1, 2, 3), journal.KindUnknown},
	}
	for _, tt := range tests {
		r, err := journal.DecodeRecord(tt.body)
		switch {
		case tt.kind == 0 && err == nil:
			t.Errorf("%s: decoded as %v, want an error", tt.name, r)
		case tt.kind != 0 && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.kind != 0 && r.Kind() != tt.kind:
			t.Errorf("%s: kind %v, want %v", tt.name, r.Kind(), tt.kind)
		}
	}
	mk := journal.NewMasterKeyRecord(3, []byte("key"))
	if string(mk.MasterKey()) != "key" || mk.ExplicitLAC() != nil || mk.LedgerID() != 3 || mk.EntryID() != -0x1000 {
		t.Errorf("master-key accessors: %q %q %d %d", mk.MasterKey(), mk.ExplicitLAC(), mk.LedgerID(), mk.EntryID())
	}
	lac := journal.NewExplicitLACRecord(3, []byte("lac"))
	if string(lac.ExplicitLAC()) != "lac" || lac.MasterKey() != nil {
		t.Errorf("explicit-LAC accessors: %q %q", lac.ExplicitLAC(), lac.MasterKey())
	}
	if _, err := journal.NewEntryRecord(ids(1, -0x2000)); err == nil {
		t.Error("NewEntryRecord accepted a fence body")
	}
}

// TestFileNames checks the names of journal files both ways.
func TestFileNames(t *testing.T) {
	for _, tt := range []struct {
		id   int64
		name string
	}{{1, "1.txn"}, {0x18a5b2c3d4e, "18a5b2c3d4e.txn"}, {1<<63 - 1, "7fffffffffffffff.txn"}} {
		if got := journal.FileName(tt.id); got != tt.name {
			t.Errorf("FileName(%#x) = %s, want %s", tt.id, got, tt.name)
		}
		if id, ok := journal.ParseFileName(tt.name); !ok || id != tt.id {
			t.Errorf("ParseFileName(%s) = %#x, %v", tt.name, id, ok)
		}
	}
	for _, name := range []string{".txn", "x.txn", "1.txn.tmp", "8000000000000000.txn", "10000000000000000.txn", "lastMark", "1.log"} {
		if id, ok := journal.ParseFileName(name); ok {
			t.Errorf("ParseFileName(%q) = %#x, want not a journal file", name, id)
		}
	}
	if id, ok := journal.ParseFileName("0A.txn"); !ok || id != 10 {
		t.Errorf("ParseFileName(0A.txn) = %d, %v; Java's Long.parseLong accepts it", id, ok)
	}
}
