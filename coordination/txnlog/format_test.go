package txnlog_test

import (
	"bytes"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

func TestFileNames(t *testing.T) {
	tests := []struct {
		z    zxid.ID
		name string
	}{
		{1, "log.1"},
		{0xb, "log.b"},
		{0x11, "log.11"},
		{zxid.Make(1, 1), "log.100000001"},
		{zxid.Make(0x7fffffff, 0xffffffff), "log.7fffffffffffffff"},
	}
	for _, tt := range tests {
		if got := txnlog.FileName(tt.z); got != tt.name {
			t.Errorf("FileName(%v) = %q, want %q", tt.z, got, tt.name)
		}
		if got, ok := txnlog.ParseFileName(tt.name); !ok || got != tt.z {
			t.Errorf("ParseFileName(%q) = %v, %v", tt.name, got, ok)
		}
	}
	for _, bad := range []string{"log.", "log", "snapshot.1", "log.1.tmp", "log.xyz", "log.8000000000000000", "log.10000000000000000", "log.-1"} {
		if z, ok := txnlog.ParseFileName(bad); ok {
			t.Errorf("ParseFileName(%q) = %v, want rejection", bad, z)
		}
	}
	// Names ZooKeeper's parser accepts too.
	if z, ok := txnlog.ParseFileName("log.00A"); !ok || z != 10 {
		t.Errorf("ParseFileName(log.00A) = %v, %v", z, ok)
	}
}

// TestExactBytes writes two txns and compares the file with the layout of
// docs/zookeeper-protocol.md §9.2 byte for byte.
func TestExactBytes(t *testing.T) {
	m := vfs.NewMem()
	l, err := txnlog.Open(m, "/data", txnlog.Config{PreAllocSizeBytes: 8 << 10})
	mustOK(t, err)
	appendSync(t, l, 1, 2)
	mustOK(t, l.Close())
	got, err := vfs.ReadFile(m, "/data/version-2/log.1")
	mustOK(t, err)

	p1 := payload(1)
	want := join(header, frame(p1), frame(payload(2)))
	if len(got) != 16+8<<10 {
		t.Errorf("file size %d, want %d (preallocated)", len(got), 16+8<<10)
	}
	if !bytes.Equal(got[:len(want)], want) || !bytes.Equal(got[len(want):], zeros(len(got)-len(want))) {
		t.Fatalf("file bytes:\n%s\nwant:\n%s", hex.Dump(got[:len(want)+16]), hex.Dump(want))
	}
	// The layout, spelled out for the first record.
	rec := got[16:]
	checks := []struct {
		what string
		b    []byte
		want string
	}{
		{"magic", got[0:4], "5a4b4c47"},
		{"version", got[4:8], "00000002"},
		{"dbid", got[8:16], "0000000000000000"},
		{"checksum high half", rec[0:4], "00000000"},
		{"length", rec[8:12], hex.EncodeToString([]byte{0, 0, byte(len(p1) >> 8), byte(len(p1))})},
		{"zxid in payload", rec[12+12 : 12+20], "0000000000000001"},
		{"end of record", rec[12+len(p1) : 13+len(p1)], "42"},
	}
	for _, c := range checks {
		if h := hex.EncodeToString(c.b); h != c.want {
			t.Errorf("%s = %s, want %s", c.what, h, c.want)
		}
	}
}

// TestDefaultPreallocation checks the shape of a first file with the
// default settings on the real filesystem: 64 MiB + 16 bytes, as
// ZooKeeper's.
func TestDefaultPreallocation(t *testing.T) {
	dir := t.TempDir()
	l, err := txnlog.Open(vfs.Default, dir, txnlog.Config{})
	mustOK(t, err)
	appendSync(t, l, 1, 3)
	mustOK(t, l.Close())
	info, err := vfs.Default.Stat(filepath.Join(dir, "version-2", "log.1"))
	mustOK(t, err)
	if info.Size() != 64<<20+16 {
		t.Errorf("size %d, want %d", info.Size(), 64<<20+16)
	}
	zs, err := readZxids(t, vfs.Default, dir, 0)
	if err != nil || len(zs) != 3 {
		t.Errorf("read back %v, %v", zs, err)
	}
}

// TestPreallocationGrowth checks that files grow in PreAllocSizeBytes steps
// whenever a record starts within 4096 bytes of the end.
func TestPreallocationGrowth(t *testing.T) {
	m := vfs.NewMem()
	const step = 8 << 10
	l, err := txnlog.Open(m, "/d", txnlog.Config{PreAllocSizeBytes: step})
	mustOK(t, err)
	pos, size := int64(16), int64(16)
	for z := zxid.ID(1); z <= 300; z++ {
		if pos+4096 >= size {
			size += step
		}
		mustOK(t, l.Append(mkTxn(z)))
		pos += int64(len(payload(z)) + txnlog.RecordOverheadBytes)
		mustOK(t, l.Sync())
		info, err := m.Stat("/d/version-2/log.1")
		mustOK(t, err)
		if info.Size() != size {
			t.Fatalf("after zxid %d: size %d, want %d", z, info.Size(), size)
		}
	}
	if got := l.BytesSinceRoll(); got != pos-16 {
		t.Errorf("BytesSinceRoll = %d, want %d", got, pos-16)
	}
	mustOK(t, l.Close())
}

func TestNoPreallocation(t *testing.T) {
	m := vfs.NewMem()
	l, err := txnlog.Open(m, "/d", txnlog.Config{PreAllocSizeBytes: -1})
	mustOK(t, err)
	appendSync(t, l, 1, 2)
	mustOK(t, l.Close())
	got, err := vfs.ReadFile(m, "/d/version-2/log.1")
	mustOK(t, err)
	if want := join(header, frame(payload(1)), frame(payload(2))); !bytes.Equal(got, want) {
		t.Errorf("unpreallocated file is %d bytes, want exactly the %d written", len(got), len(want))
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []txnlog.Config{{MaxRecordBytes: -1}, {MaxRecordBytes: 10}} {
		if c.Validate() == nil {
			t.Errorf("%+v: Validate accepted it", c)
		}
		if _, err := txnlog.Open(vfs.NewMem(), "/d", c); err == nil || !strings.Contains(err.Error(), "MaxRecordBytes") {
			t.Errorf("%+v: Open = %v", c, err)
		}
	}
	if err := (txnlog.Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}
