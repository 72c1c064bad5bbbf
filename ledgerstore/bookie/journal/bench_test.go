package journal_test

import (
	"fmt"
	"testing"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bookie/journal"
)

// BenchmarkAppendSync measures group commit on the real filesystem: each
// iteration appends a batch of records and syncs once, as a driver does
// with the adds that arrived while the previous sync ran. records/s should
// grow with the batch size, since the fdatasync dominates.
func BenchmarkAppendSync(b *testing.B) {
	for _, size := range []int{100, 1024} {
		for _, batch := range []int{1, 16, 256} {
			b.Run(fmt.Sprintf("entry=%dB/batch=%d", size, batch), func(b *testing.B) {
				j, err := journal.Open(vfs.Default, b.TempDir(), journal.Config{})
				mustOK(b, err)
				defer j.Close()
				recs := make([]journal.Record, batch)
				for i := range recs {
					recs[i] = entryRec(b, 1, int64(i), size-36)
				}
				b.SetBytes(int64(size * batch))
				batches := 0
				for b.Loop() {
					for _, r := range recs {
						if _, err := j.Append(r); err != nil {
							b.Fatal(err)
						}
					}
					if err := j.Sync(); err != nil {
						b.Fatal(err)
					}
					batches++
				}
				b.ReportMetric(float64(batches*batch)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}
