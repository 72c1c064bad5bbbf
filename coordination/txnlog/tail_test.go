package txnlog_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// outcome is how reading a file ends.
type outcome int

const (
	clean outcome = iota
	torn
	corrupt
)

func (o outcome) String() string { return [...]string{"clean", "torn", "corrupt"}[o] }

func outcomeOf(err error) outcome {
	switch {
	case err == nil:
		return clean
	case errors.Is(err, txnlog.ErrTorn):
		return torn
	case errors.Is(err, txnlog.ErrCorrupt):
		return corrupt
	}
	return -1
}

func flip(b []byte, i int) []byte {
	b = slices.Clone(b)
	b[i] ^= 0x10
	return b
}

// setLength returns rec with its length field replaced.
func setLength(rec []byte, n int32) []byte {
	rec = slices.Clone(rec)
	binary.BigEndian.PutUint32(rec[8:12], uint32(n))
	return rec
}

// TestTailRules holds files against the torn-or-corrupt rule of the package
// doc. Each file is named log.1 and read twice: as the log's last file, and
// followed by a valid log.ff (where nothing may be torn).
func TestTailRules(t *testing.T) {
	r1, r2 := frame(payload(1)), frame(payload(2))
	off2 := int64(16 + len(r1))
	undecodable := frame(append(payload(2)[:40:40], 0xff, 0xff, 0xff, 0xff))
	tests := []struct {
		name    string
		data    []byte
		records int
		last    outcome // reading it as the last file
		offset  int64   // of the error, when there is one
	}{
		{"clean, preallocated", join(header, r1, r2, zeros(300)), 2, clean, 0},
		{"clean, not preallocated", join(header, r1, r2), 2, clean, 0},
		{"clean, short zero tail", join(header, r1, r2, zeros(5)), 2, clean, 0},
		{"header only", header, 0, clean, 0},
		{"header and zeros", join(header, zeros(100)), 0, clean, 0},
		{"empty file", nil, 0, torn, 0},
		{"all zeros", zeros(100), 0, torn, 0},
		{"partial header", []byte("ZKL"), 0, torn, 0},
		{"partial header then zeros", join([]byte("ZKLG\x00\x00"), zeros(100)), 0, torn, 0},
		{"bad magic", join([]byte("ZKSN\x00\x00\x00\x02"), zeros(8), r1), 0, corrupt, 0},
		{"bad version", join([]byte("ZKLG\x00\x00\x00\x03"), zeros(8), r1), 0, corrupt, 0},
		{"partial header, then data", join([]byte("ZKLG\x00"), zeros(20), []byte{1}), 0, corrupt, 0},
		{"record header cut at EOF", join(header, r1, r2[:7]), 1, torn, off2},
		{"only the checksum written", join(header, r1, r2[:8], zeros(100)), 1, torn, off2},
		{"payload cut at EOF", join(header, r1, r2[:len(r2)-5]), 1, torn, off2},
		{"payload cut, zeros after", join(header, r1, r2[:len(r2)-5], zeros(200)), 1, torn, off2},
		{"marker missing, zeros after", join(header, r1, r2[:len(r2)-1], zeros(200)), 1, torn, off2},
		{"header written, payload zero", join(header, r1, r2[:12], zeros(300)), 1, torn, off2},
		{"payload byte flipped in the last record", join(header, r1, flip(r2, 30), zeros(100)), 1, corrupt, off2},
		{"payload byte flipped in the first record", join(header, flip(r1, 30), r2, zeros(100)), 0, corrupt, 16},
		{"checksum flipped", join(header, r1, flip(r2, 6), zeros(100)), 1, corrupt, off2},
		{"marker damaged", join(header, r1, flip(r2, len(r2)-1), zeros(100)), 1, corrupt, off2},
		{"length enlarged on the last record", join(header, r1, setLength(r2, int32(len(r2))), zeros(300)), 1, corrupt, off2},
		{"length enlarged, swallowing the next record", join(header, setLength(r1, int32(len(r1)+len(r2)+20)), r2, zeros(300)), 0, corrupt, 16},
		{"length enlarged past the end of the file", join(header, r1, setLength(r2, 5000), zeros(30)), 1, corrupt, off2},
		{"length shrunk", join(header, r1, setLength(r2, 20), zeros(100)), 1, corrupt, off2},
		{"length too large", join(header, r1, setLength(r2, 1<<30), zeros(100)), 1, corrupt, off2},
		{"length negative", join(header, r1, setLength(r2, -5), zeros(100)), 1, corrupt, off2},
		{"data after the end marker", join(header, r1, zeros(50), []byte{1}, zeros(10)), 1, corrupt, off2},
		{"a hole, then a record", join(header, r1, zeros(len(r2)), r2), 1, corrupt, off2},
		{"garbage after a record", join(header, r1, []byte("garbage garbage garbage"), zeros(100)), 1, corrupt, off2},
		{"zxids out of order", join(header, r1, frame(payload(3)), r2, zeros(10)), 2, corrupt, off2 + int64(len(frame(payload(3))))},
		// A repeat of an earlier record, byte for byte, is passed over
		// (Apache ZooKeeper writes them; TestRepeatedRecords).
		{"a record repeated", join(header, r1, r1, r2, zeros(10)), 2, clean, 0},
		{"first zxid does not match the name", join(header, r2, zeros(10)), 0, corrupt, 16},
		{"payload shorter than a txn header", join(header, r1, frame([]byte("short")), zeros(10)), 1, corrupt, off2},
		{"undecodable payload", join(header, r1, undecodable), 1, corrupt, off2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, asLast := range []bool{true, false} {
				m := vfs.NewMem()
				writeRaw(t, m, "/d", "log.1", tt.data)
				if !asLast {
					writeRaw(t, m, "/d", "log.ff", join(header, frame(payload(0xff))))
				}
				zs, err := readZxids(t, m, "/d", 0)
				want := tt.last
				if !asLast && want == torn {
					want = corrupt
				}
				wantRecords := tt.records
				if !asLast && want == clean {
					wantRecords++ // log.ff's record
				}
				if got := outcomeOf(err); got != want || len(zs) != wantRecords {
					t.Fatalf("last=%v: read %d records then %v (%v), want %d then %v", asLast, len(zs), got, err, wantRecords, want)
				}
				if want != clean {
					re := recordErr(t, err)
					if re.File != "/d/version-2/log.1" || re.Offset != tt.offset {
						t.Errorf("last=%v: error names %s offset %d, want /d/version-2/log.1 offset %d", asLast, re.File, re.Offset, tt.offset)
					}
				}
			}
		})
	}
}

// TestRepairTornTail repairs each torn shape and checks that the log then
// reads cleanly with every complete record and nothing else, and that Open
// does the same by itself.
func TestRepairTornTail(t *testing.T) {
	r1, r2 := frame(payload(1)), frame(payload(2))
	off2 := int64(16 + len(r1))
	tests := []struct {
		name     string
		data     []byte
		wantSize int64 // of log.1 afterwards; -1: removed
		wantLast zxid.ID
	}{
		{"torn second record", join(header, r1, r2[:len(r2)-5], zeros(200)), off2, 1},
		{"torn first record", join(header, frame(payload(1))[:9], zeros(100)), -1, 0},
		{"torn header", []byte("ZK"), -1, 0},
		{"empty file", nil, -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, viaOpen := range []bool{false, true} {
				m := vfs.NewMem()
				writeRaw(t, m, "/d", "log.1", tt.data)
				if viaOpen {
					l, err := txnlog.Open(m, "/d", testConfig)
					mustOK(t, err)
					if l.LastZxid() != tt.wantLast {
						t.Errorf("LastZxid = %v, want %v", l.LastZxid(), tt.wantLast)
					}
					mustOK(t, l.Close())
				} else {
					re, err := txnlog.RepairTornTail(m, "/d", testConfig)
					mustOK(t, err)
					if re == nil || !errors.Is(re, txnlog.ErrTorn) {
						t.Fatalf("RepairTornTail reported %v", re)
					}
				}
				info, err := m.CrashClone(nil).Stat("/d/version-2/log.1") // the repair is durable
				switch {
				case tt.wantSize < 0 && err == nil:
					t.Errorf("viaOpen=%v: log.1 still exists (%d bytes)", viaOpen, info.Size())
				case tt.wantSize >= 0 && (err != nil || info.Size() != tt.wantSize):
					t.Errorf("viaOpen=%v: log.1: %v, %v; want %d bytes", viaOpen, info, err, tt.wantSize)
				}
				if _, err := readZxids(t, m, "/d", 0); err != nil {
					t.Errorf("viaOpen=%v: after repair: %v", viaOpen, err)
				}
				if re, err := txnlog.RepairTornTail(m, "/d", testConfig); re != nil || err != nil {
					t.Errorf("second repair: %v, %v", re, err)
				}
			}
		})
	}
}

// TestRepairLeavesCorruption checks that corruption is reported, never cut.
func TestRepairLeavesCorruption(t *testing.T) {
	m := vfs.NewMem()
	data := join(header, frame(payload(1)), flip(frame(payload(2)), 30), zeros(100))
	writeRaw(t, m, "/d", "log.1", data)
	re, err := txnlog.RepairTornTail(m, "/d", testConfig)
	if re != nil || !errors.Is(err, txnlog.ErrCorrupt) {
		t.Fatalf("RepairTornTail = %v, %v; want ErrCorrupt", re, err)
	}
	if _, err := txnlog.Open(m, "/d", testConfig); !errors.Is(err, txnlog.ErrCorrupt) {
		t.Fatalf("Open = %v; want ErrCorrupt", err)
	}
	got, err := vfs.ReadFile(m, "/d/version-2/log.1")
	mustOK(t, err)
	if !slices.Equal(got, data) {
		t.Error("the corrupt file was changed")
	}
}

// TestUnknownTxnType checks that an intact record of a type keeper cannot
// decode is reported without stopping the iterator.
func TestUnknownTxnType(t *testing.T) {
	check := &txn.Txn{
		Header: txn.Header{Zxid: 2, Type: zkproto.OpCheck},
		Record: &txn.CheckVersion{Path: "/a", Version: 1},
	}
	m := vfs.NewMem()
	writeRaw(t, m, "/d", "log.1", join(header, frame(payload(1)), frame(txn.Marshal(check)), frame(payload(3))))
	it, err := txnlog.Read(m, "/d", 0, testConfig)
	mustOK(t, err)
	defer it.Close()
	var got []string
	for {
		tx, err := it.Next()
		if err != nil {
			if !errors.Is(err, txn.ErrUnknownType) {
				break
			}
			if re := recordErr(t, err); re.Offset != int64(16+len(frame(payload(1)))) {
				t.Errorf("unknown type reported at offset %d", re.Offset)
			}
			got = append(got, "unknown")
			continue
		}
		got = append(got, tx.Header.Zxid.String())
	}
	if len(got) != 3 || got[0] != "0x1" || got[2] != "0x3" {
		t.Errorf("read %v", got)
	}
	l, err := txnlog.Open(m, "/d", testConfig)
	mustOK(t, err)
	if l.LastZxid() != 3 {
		t.Errorf("LastZxid = %v", l.LastZxid())
	}
	mustOK(t, l.Close())
}

// TestEveryTornPrefix cuts a log at every byte, as a crash during an append
// can, with and without the preallocated zeros after the cut. The outcome
// must never be corruption, and exactly the records completed before the
// cut must be read, before and after a repair.
func TestEveryTornPrefix(t *testing.T) {
	stream := header
	var ends []int // where each record ends
	for z := zxid.ID(1); z <= 4; z++ {
		stream = join(stream, frame(payload(z)))
		ends = append(ends, len(stream))
	}
	for cut := 0; cut <= len(stream); cut++ {
		complete := 0
		for complete < len(ends) && ends[complete] <= cut {
			complete++
		}
		for _, pad := range []int{0, 3, 500} {
			m := vfs.NewMem()
			writeRaw(t, m, "/d", "log.1", join(stream[:cut], zeros(pad)))
			zs, err := readZxids(t, m, "/d", 0)
			if outcomeOf(err) == corrupt || !slices.Equal(zs, seq(1, zxid.ID(complete))) {
				t.Fatalf("cut %d, pad %d: read %v then %v; want %d records", cut, pad, zs, err, complete)
			}
			l, err := txnlog.Open(m, "/d", testConfig)
			if err != nil {
				t.Fatalf("cut %d, pad %d: Open: %v", cut, pad, err)
			}
			if l.LastZxid() != zxid.ID(complete) {
				t.Fatalf("cut %d, pad %d: LastZxid %v, want %d", cut, pad, l.LastZxid(), complete)
			}
			mustOK(t, l.Close())
			if zs, err := readZxids(t, m, "/d", 0); err != nil || len(zs) != complete {
				t.Fatalf("cut %d, pad %d: after Open: %v, %v", cut, pad, zs, err)
			}
		}
	}
}
