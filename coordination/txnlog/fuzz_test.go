package txnlog_test

import (
	"errors"
	"io"
	"slices"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// FuzzReadFile feeds arbitrary bytes to the reader as a log file, once as
// the log's last file and once followed by another. Reading must never
// panic and must end in one of the documented ways; a torn tail, once
// repaired, must read back cleanly with the same records; and Open must
// agree with the reader.
func FuzzReadFile(f *testing.F) {
	r1, r2 := frame(payload(1)), frame(payload(2))
	f.Add(join(header, r1, r2, zeros(64)))
	f.Add(join(header, r1, r2[:len(r2)-3], zeros(64)))
	f.Add(join(header, r1, setLength(r2, int32(len(r2)+40)), zeros(64)))
	f.Add(join(header, r1, zeros(20), r2))
	f.Add([]byte("ZKLG"))
	f.Add([]byte{})
	cfg := txnlog.Config{PreAllocSizeBytes: 4096, MaxRecordBytes: 1 << 16}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, last := range []bool{true, false} {
			m := vfs.NewMem()
			writeRaw(t, m, "/d", "log.1", data)
			if !last {
				writeRaw(t, m, "/d", "log.7fffffffffffffff", join(header, frame(payload(1<<62))))
			}
			zs, err := readAll(m, cfg)
			switch {
			case err == nil:
				l, err := txnlog.Open(m, "/d", cfg)
				if err != nil {
					t.Fatalf("last=%v: read cleanly but Open failed: %v", last, err)
				}
				if want := lastOf(zs); l.LastZxid() != want {
					t.Fatalf("last=%v: LastZxid %v, want %v", last, l.LastZxid(), want)
				}
				_ = l.Close()
			case errors.Is(err, txnlog.ErrTorn):
				if !last {
					t.Fatalf("torn tail reported in a file that is not the last: %v", err)
				}
				if _, err := txnlog.RepairTornTail(m, "/d", cfg); err != nil {
					t.Fatalf("repair: %v", err)
				}
				again, err := readAll(m, cfg)
				if err != nil || !slices.Equal(again, zs) {
					t.Fatalf("after repair: read %v, %v; want %v and a clean end", again, err, zs)
				}
			case errors.Is(err, txnlog.ErrCorrupt):
				if _, err := txnlog.RepairTornTail(m, "/d", cfg); last && !errors.Is(err, txnlog.ErrCorrupt) {
					t.Fatalf("repair of a corrupt file: %v", err)
				}
			default:
				t.Fatalf("last=%v: unexpected error %v", last, err)
			}
		}
	})
}

// readAll reads the whole log, moving past records of unknown types.
func readAll(fsys vfs.FS, cfg txnlog.Config) ([]zxid.ID, error) {
	it, err := txnlog.Read(fsys, "/d", 0, cfg)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var zs []zxid.ID
	for {
		tx, err := it.Next()
		switch {
		case err == nil:
			zs = append(zs, tx.Header.Zxid)
		case errors.Is(err, txn.ErrUnknownType):
			zs = append(zs, -1)
		case err == io.EOF:
			return zs, nil
		default:
			return zs, err
		}
	}
}

func lastOf(zs []zxid.ID) zxid.ID {
	for i := len(zs) - 1; i >= 0; i-- {
		if zs[i] != -1 {
			return zs[i]
		}
	}
	return 0
}
