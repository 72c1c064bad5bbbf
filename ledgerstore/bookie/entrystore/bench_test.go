package entrystore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"keeper/internal/vfs"
)

// BenchmarkAddFlush measures the store's write path on the real disk:
// Add into the write cache, and a Flush (sorted append, fsync, synced
// index batch) whenever a half fills, as the bookie's checkpoint would.
// Bytes/s is entry bytes.
func BenchmarkAddFlush(b *testing.B) {
	for _, size := range []int{100, 1 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("entry=%d", size), func(b *testing.B) {
			dir := b.TempDir()
			s, err := Open(Config{
				FS:              vfs.Default,
				Dirs:            []string{dir + "/ledgers"},
				IndexDir:        dir + "/index",
				WriteCacheBytes: 32 << 20,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const ledgers = 16
			// One buffer, its ids patched per add (Add copies it), so the
			// benchmark does not measure building entries.
			e := makeEntry(0, 0, -1, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				l, id := int64(i%ledgers), int64(i/ledgers)
				binary.BigEndian.PutUint64(e[0:8], uint64(l))
				binary.BigEndian.PutUint64(e[8:16], uint64(id))
				binary.BigEndian.PutUint64(e[16:24], uint64(id-1))
				err := s.Add(l, id, e)
				if errors.Is(err, ErrCacheFull) {
					if err = s.Flush(); err == nil {
						err = s.Add(l, id, e)
					}
				}
				if err != nil {
					b.Fatal(err)
				}
				if s.NeedsFlush() {
					if err := s.Flush(); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := s.Flush(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
