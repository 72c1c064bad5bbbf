package journal_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bookie/journal"
)

// setLength returns a copy of a framed record with its length field set.
func setLength(rec []byte, n uint32) []byte {
	c := append([]byte(nil), rec...)
	binary.BigEndian.PutUint32(c, n)
	return c
}

// flip returns a copy of b with the byte at i changed.
func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x40
	return c
}

// TestTornOrCorrupt is the table test of the reader's rules (see the
// package doc): each file is read as the journal's last (or, where noted,
// followed by another file), and must give exactly the records before the
// damage and the right outcome at the right offset.
func TestTornOrCorrupt(t *testing.T) {
	e0, e1, e2 := entryBody(1, 0, 20), entryBody(1, 1, 20), entryBody(1, 2, 300)
	h7, h6 := fileHeader(7), fileHeader(6)
	r0, r1, r2 := frame7(e0), frame7(e1), frame7(e2)
	base := padTo(join(h7, r0, r1)) // 1024 bytes: two records, padding
	mk := journal.NewMasterKeyRecord(1, make([]byte, 20)).Body()
	const r1At, tailAt = 576, 1024
	type outcome int
	const (
		clean outcome = iota
		torn
		corrupt
	)
	tests := []struct {
		name    string
		data    []byte
		notLast bool
		records int
		want    outcome
		offset  int64
	}{
		{name: "clean", data: join(base, zeros(1024)), records: 2},
		{name: "clean at the end of the file", data: base, records: 2},
		{name: "header only", data: join(h7, zeros(100)), records: 0},
		{name: "torn body", data: join(base, r2[:30], zeros(500)), records: 2, want: torn, offset: tailAt},
		{name: "torn body at the end of the file", data: join(base, r2[:30]), records: 2, want: torn, offset: tailAt},
		{name: "torn length", data: join(base, r2[:3], zeros(500)), records: 2, want: torn, offset: tailAt},
		{name: "torn length, only zeros written", data: join(base, r2[:2], zeros(500)), records: 2},
		{name: "torn checksum", data: join(base, r2[:6], zeros(500)), records: 2, want: torn, offset: tailAt},
		{name: "torn padding marker", data: join(h7, r0, padding(448)[:2], zeros(600)), records: 1, want: torn, offset: r1At},
		{name: "padding past the end", data: join(h7, r0, padding(448)[:8]), records: 1, want: torn, offset: r1At},
		{name: "non-zero in the last padding", data: join(h7, r0, flip(padding(448), 100)), records: 1, want: torn, offset: r1At},
		{name: "non-zero in padding, data follows", data: join(h7, r0, flip(padding(448), 100), padTo(join(h7[:0], r1))),
			records: 1, want: corrupt, offset: r1At},
		{name: "zero length, data follows", data: join(h7, r0, zeros(4), r1, zeros(600)), records: 1, want: corrupt, offset: r1At},
		{name: "length above the limit", data: join(base, []byte{0x7f, 0, 0, 0}, zeros(600)), records: 2, want: corrupt, offset: tailAt},
		{name: "negative length, data follows", data: join(h7, r0, setLength(r1, 0x80000001), zeros(600)),
			records: 1, want: corrupt, offset: r1At},
		{name: "pad length out of range", data: join(h7, r0, []byte{0xff, 0xff, 0xff, 0, 0x7f, 0xff, 0xff, 0xff}, zeros(600)),
			records: 1, want: corrupt, offset: r1At},
		{name: "checksum mismatch, data follows", data: padTo(join(h7, flip(r0, 30), r1)), records: 0, want: corrupt, offset: 512},
		{name: "checksum mismatch at the tail", data: join(h7, r0, flip(r1, 30), zeros(600)), records: 1, want: torn, offset: r1At},
		{name: "last record's length grew", data: padTo(join(h7, r0, setLength(r1, uint32(len(e1)+100)))),
			records: 1, want: corrupt, offset: r1At},
		{name: "last record's length grew past the end", data: padTo(join(h7, r0, setLength(r1, 5000))),
			records: 1, want: corrupt, offset: r1At},
		{name: "last record's length shrank", data: padTo(join(h7, r0, setLength(r1, 40))), records: 1, want: corrupt, offset: r1At},
		{name: "intact record that does not decode", data: padTo(join(h7, r0, frame7(e1[:10]))), records: 1, want: corrupt, offset: r1At},
		{name: "intact master key of the wrong length", data: padTo(join(h7, frame7(append(mk, 0)))), records: 0, want: corrupt, offset: 512},
		{name: "torn, not the last file", data: join(base, r2[:30], zeros(500)), notLast: true, records: 2, want: corrupt, offset: tailAt},
		{name: "torn header", data: join([]byte("BKLG\x00\x00"), zeros(4096)), want: torn},
		{name: "header cut short", data: h7[:100], want: torn},
		{name: "empty file", data: nil, want: torn},
		{name: "empty file, not the last", data: nil, notLast: true, want: corrupt},
		{name: "bad magic", data: join([]byte("BKLO"), h7[4:], r0), want: corrupt},
		{name: "format 4", data: join(fileHeader(4), r0), want: corrupt},
		{name: "format 8", data: join(fileHeader(8), r0), want: corrupt},

		{name: "v6 clean", data: padTo(join(h6, frame6(e0), frame6(e1))), records: 2},
		{name: "v6 torn body reads as a record", data: join(h6, frame6(e0), frame6(e1)[:30], zeros(500)), records: 2},
		{name: "v6 torn body at the end of the file", data: join(h6, frame6(e0), frame6(e1)[:30]), records: 1, want: torn, offset: 572},
		{name: "v6 torn master key", data: join(h6, frame6(mk)[:22], zeros(500)), want: torn, offset: 512},
		{name: "v6 malformed master key, data follows", data: padTo(join(h6, frame6(append(mk, 0)), frame6(e0))),
			want: corrupt, offset: 512},
		{name: "v6 last record's length grew past the end", data: padTo(join(h6, frame6(e0), setLength(frame6(e1), 5000))),
			records: 1, want: corrupt, offset: 572},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vfs.NewMem()
			path := writeRaw(t, m, "/j", 1, tt.data)
			if tt.notLast {
				writeRaw(t, m, "/j", 2, padTo(join(h7, r2)))
			}
			got := replay(m, "/j", journal.Position{}, testConfig)
			if len(got.bodies) != tt.records {
				t.Errorf("replayed %d records, want %d: %s", len(got.bodies), tt.records, describe(got.bodies))
			}
			switch tt.want {
			case clean:
				if got.err != nil {
					t.Fatalf("Replay: %v, want a clean end", got.err)
				}
				return
			case torn:
				if !errors.Is(got.err, journal.ErrTorn) {
					t.Fatalf("Replay: %v, want ErrTorn", got.err)
				}
			case corrupt:
				if !errors.Is(got.err, journal.ErrCorrupt) {
					t.Fatalf("Replay: %v, want ErrCorrupt", got.err)
				}
			}
			if re := recordErr(t, got.err); re.File != path || re.Offset != tt.offset {
				t.Errorf("damage reported at %s:%d, want %s:%d (%v)", re.File, re.Offset, path, tt.offset, got.err)
			}
			checkOpen(t, m, tt.want == torn, got)
		})
	}
}

// checkOpen opens the journal: a torn tail must be cut so that a second
// Replay reads the same records cleanly and ends where Open's mark is;
// corruption must make Open fail (if it is in the last file) and change
// nothing.
func checkOpen(t *testing.T, m *vfs.MemFS, wasTorn bool, before replayed) {
	t.Helper()
	j, err := journal.Open(m, "/j", testConfig)
	if !wasTorn {
		if err == nil {
			mustOK(t, j.Close()) // the corruption is in a file before the last
		} else if !errors.Is(err, journal.ErrCorrupt) {
			t.Errorf("Open: %v, want ErrCorrupt", err)
		}
		if again := replay(m, "/j", journal.Position{}, testConfig); len(again.bodies) != len(before.bodies) ||
			again.err.Error() != before.err.Error() {
			t.Errorf("after Open: %d records, %v", len(again.bodies), again.err)
		}
		return
	}
	mustOK(t, err)
	again := replay(m, "/j", journal.Position{}, testConfig)
	if again.err != nil || len(again.bodies) != len(before.bodies) {
		t.Fatalf("after repair: %d records, %v; want %d and a clean end", len(again.bodies), again.err, len(before.bodies))
	}
	if again.end != j.Mark() || again.end != before.end {
		t.Errorf("after repair Replay ends at %v, Open's mark is %v, the torn Replay ended at %v", again.end, j.Mark(), before.end)
	}
	mustOK(t, j.Close())
}
