package txnlog_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"path/filepath"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// testConfig preallocates in small steps so that tests on MemFS stay small
// and still cross preallocation boundaries often.
var testConfig = txnlog.Config{PreAllocSizeBytes: 16 << 10}

// mkTxn returns a create txn with zxid z.
func mkTxn(z zxid.ID) *txn.Txn {
	return &txn.Txn{
		Header: txn.Header{ClientID: 0x1234, Cxid: int32(z.Counter()), Zxid: z, Time: 1_700_000_000_000, Type: zkproto.OpCreate},
		Record: &txn.Create{Path: fmt.Sprintf("/n%d", z), Data: []byte("data"), ACL: zkproto.OpenACLUnsafe, ParentCversion: 1},
		Digest: &txn.Digest{Version: txn.DigestVersion, TreeDigest: int64(z) * 7},
	}
}

func payload(z zxid.ID) []byte { return txn.Marshal(mkTxn(z)) }

// frame builds a record by hand from the layout, independently of the
// package's writer.
func frame(p []byte) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(adler32.Checksum(p)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
	b = append(b, p...)
	return append(b, 'B')
}

var header = []byte{'Z', 'K', 'L', 'G', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0}

func join(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func zeros(n int) []byte { return make([]byte, n) }

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeRaw writes a log file with the given bytes, durably.
func writeRaw(t testing.TB, fsys vfs.FS, dataLogDir, name string, data []byte) string {
	t.Helper()
	dir := filepath.Join(dataLogDir, txnlog.DirName)
	mustOK(t, vfs.MkdirAllSync(fsys, dir, 0o755))
	p := filepath.Join(dir, name)
	f, err := fsys.Create(p)
	mustOK(t, err)
	_, err = f.Write(data)
	mustOK(t, err)
	mustOK(t, f.Sync())
	mustOK(t, f.Close())
	mustOK(t, fsys.SyncDir(dir))
	return p
}

// readZxids reads the log from `from` and returns the zxids read before the
// iterator stopped, and its final error (nil at a clean end).
func readZxids(t testing.TB, fsys vfs.FS, dataLogDir string, from zxid.ID) ([]zxid.ID, error) {
	t.Helper()
	it, err := txnlog.Read(fsys, dataLogDir, from, testConfig)
	mustOK(t, err)
	defer it.Close()
	var zs []zxid.ID
	for {
		tx, err := it.Next()
		if err == io.EOF {
			return zs, nil
		}
		if err != nil {
			return zs, err
		}
		zs = append(zs, tx.Header.Zxid)
	}
}

// seq returns the zxids from..to inclusive.
func seq(from, to zxid.ID) []zxid.ID {
	var zs []zxid.ID
	for z := from; z <= to; z++ {
		zs = append(zs, z)
	}
	return zs
}

// appendSync appends the txns with zxids from..to and syncs once.
func appendSync(t testing.TB, l *txnlog.Log, from, to zxid.ID) {
	t.Helper()
	for z := from; z <= to; z++ {
		mustOK(t, l.Append(mkTxn(z)))
	}
	mustOK(t, l.Sync())
}

// recordErr returns err as a *RecordError, failing the test if it is not.
func recordErr(t testing.TB, err error) *txnlog.RecordError {
	t.Helper()
	var re *txnlog.RecordError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a *RecordError", err, err)
	}
	return re
}
