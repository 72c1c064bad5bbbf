package chaos

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"keeper/txn"
	"keeper/txnlog"
	"keeper/vfs"
	"keeper/zkproto"
)

// TestReadCommittedLiveAppend: the harness reads the logs of servers that
// are still running, so a record appended past the converged zxid can be
// half copied into the reader's buffer and look like data after the end
// of the log (CI, scenario 8, seed 1796061835659518012). That is no
// violation when the log already reached the converged zxid; it still is
// one when the log stops short of it.
func TestReadCommittedLiveAppend(t *testing.T) {
	dir := t.TempDir()
	l, err := txnlog.Open(vfs.Default, dir, txnlog.Config{PreAllocSizeBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*txn.Txn{
		tx(1, 0, zkproto.OpCreateSession, &txn.CreateSession{TimeoutMs: 4000}),
		tx(2, 1, zkproto.OpCreate, &txn.Create{Path: "/k", Data: []byte("a"), ACL: zkproto.OpenACLUnsafe, ParentCversion: -1}),
		tx(3, 2, zkproto.OpSetData, &txn.SetData{Path: "/k", Data: []byte("b"), Version: 1}),
	} {
		if err := l.Append(x); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, txnlog.DirName, "log.*"))
	if len(logs) != 1 {
		t.Fatalf("logs: %v", logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	end := len(bytes.TrimRight(b, "\x00"))
	// The tail of the next record is visible, its head not yet.
	b[end+60] = 'B'
	if err := os.WriteFile(logs[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{"s1": dir}
	c, err := ReadCommitted(dirs, z(3))
	if err != nil {
		t.Fatalf("log reaching the converged zxid: %v", err)
	}
	if len(c.Txns) != 3 {
		t.Fatalf("read %d txns, want 3", len(c.Txns))
	}
	if _, err := ReadCommitted(dirs, z(4)); err == nil {
		t.Fatal("a log stopping short of the converged zxid, then garbage: no error")
	}
}
