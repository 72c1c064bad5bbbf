package bookie

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/entrystore"
)

// BenchmarkStoreAdd measures the bookie's step of the add path that puts
// an entry into ledger storage (storeAdd: the master key and fence
// checks, the write cache insert and the metrics recorded around it),
// without the network and the journal, whose fsync would hide a
// difference of nanoseconds. The write cache is large enough that no
// flush runs while it is timed (at most 300k entries of 100 bytes per
// run: use -benchtime Nx with N at most that).
func BenchmarkStoreAdd(b *testing.B) {
	dir := b.TempDir()
	bk, err := New(Config{
		ListenAddr:      "127.0.0.1:0",
		JournalDirs:     []string{dir + "/journal"},
		LedgerDirs:      []string{dir + "/ledgers"},
		WriteCacheBytes: 512 << 20,
		FlushInterval:   time.Hour, DiskCheckInterval: time.Hour, GCWaitTime: time.Hour,
		MinorCompactionInterval: time.Hour, MajorCompactionInterval: 2 * time.Hour,
		DiskUsage: func(dir string) (entrystore.DirUsage, error) {
			return entrystore.DirUsage{Dir: dir, UsedBytes: 0, TotalBytes: 1 << 40}, nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := bk.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer bk.Close()
	const ledgers = 64
	key := make([]byte, 20) // a master key's size (SHA-1); bound, and journaled, at each ledger's first add
	// One buffer, its ids patched per add (the store copies it).
	e := bkproto.EncodeEntry(0, 0, -1, 0, bkproto.DigestCRC32C, nil, payload(0, 0, 100))
	b.SetBytes(int64(len(e)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		l, id := int64(i%ledgers), int64(i/ledgers)
		binary.BigEndian.PutUint64(e[0:8], uint64(l))
		binary.BigEndian.PutUint64(e[8:16], uint64(id))
		binary.BigEndian.PutUint64(e[16:24], uint64(id-1))
		if _, err := bk.storeAdd(bk.journalFor(l), l, id, e, key, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddInstrumentation measures what storeAdd records per add on
// top of the store's insert: two clock reads and one OpStats record.
func BenchmarkAddInstrumentation(b *testing.B) {
	m := newMetrics()
	b.ReportAllocs()
	for range b.N {
		start := time.Now()
		observe(m.storageAdd, start, true)
	}
}
