package txnlog_test

import (
	"fmt"
	"io"
	"testing"

	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// BenchmarkAppendSync measures group commit on the real filesystem: each
// iteration appends a batch of txns and syncs once, as a driver does with
// the writes that arrived while the previous sync ran. txns/s should grow
// with the batch size, since the fdatasync dominates.
func BenchmarkAppendSync(b *testing.B) {
	for _, batch := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			l, err := txnlog.Open(vfs.Default, b.TempDir(), txnlog.Config{})
			mustOK(b, err)
			defer l.Close()
			z, batches := zxid.ID(0), 0
			for b.Loop() {
				for range batch {
					z++
					if err := l.Append(mkTxn(z)); err != nil {
						b.Fatal(err)
					}
				}
				if err := l.Sync(); err != nil {
					b.Fatal(err)
				}
				batches++
			}
			b.ReportMetric(float64(batches*batch)/b.Elapsed().Seconds(), "txns/s")
		})
	}
}

// BenchmarkRecoverPreallocated measures what a restart does with a log whose
// last file is preallocated to the default 64 MiB but holds few records:
// check the tail for a torn record, read every txn, and reopen for appends.
// Each of the three reads the file to its end, so the zero tail dominates.
func BenchmarkRecoverPreallocated(b *testing.B) {
	dir := b.TempDir()
	l, err := txnlog.Open(vfs.Default, dir, txnlog.Config{})
	mustOK(b, err)
	const txns = 1000
	for z := zxid.ID(1); z <= txns; z++ {
		mustOK(b, l.Append(mkTxn(z)))
	}
	mustOK(b, l.Sync())
	mustOK(b, l.Close())
	b.ReportAllocs()
	for b.Loop() {
		if torn, err := txnlog.RepairTornTail(vfs.Default, dir, txnlog.Config{}); err != nil || torn != nil {
			b.Fatal(torn, err)
		}
		it, err := txnlog.Read(vfs.Default, dir, 0, txnlog.Config{})
		mustOK(b, err)
		n := 0
		for _, err := it.Next(); err != io.EOF; _, err = it.Next() {
			mustOK(b, err)
			n++
		}
		mustOK(b, it.Close())
		if n != txns {
			b.Fatalf("read %d txns, want %d", n, txns)
		}
		l, err := txnlog.Open(vfs.Default, dir, txnlog.Config{})
		mustOK(b, err)
		mustOK(b, l.Close())
	}
}
