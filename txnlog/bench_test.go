package txnlog_test

import (
	"fmt"
	"testing"

	"keeper/txnlog"
	"keeper/vfs"
	"keeper/zxid"
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
