package entrystore

import (
	"bytes"
	"errors"
	"testing"
)

// TestWriteCacheReusesSegments fills the write cache many times over,
// flushing when it is full, and checks that the halves take back the
// segments a flush released instead of making new ones: the segments
// made stay within both halves' worth, whatever the volume, and every
// entry reads back.
func TestWriteCacheReusesSegments(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cacheBytes int64
		entryBytes int
		entries    int
	}{
		{name: "small entries", cacheBytes: 2 << 20, entryBytes: 1024, entries: 8000},
		{name: "entries near a segment", cacheBytes: 2 << 20, entryBytes: 300 << 10, entries: 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv()
			cfg := e.config()
			cfg.WriteCacheBytes = tc.cacheBytes
			cfg.EntryLogMaxBytes = DefaultEntryLogMaxBytes
			s := e.open(t, cfg)
			for i := range tc.entries {
				entry := makeEntry(1, int64(i), int64(i)-1, tc.entryBytes)
				err := s.Add(1, int64(i), entry)
				if errors.Is(err, ErrCacheFull) {
					if err = s.Flush(); err == nil {
						err = s.Add(1, int64(i), entry)
					}
				}
				if err != nil {
					t.Fatalf("entry %d: %v", i, err)
				}
			}
			s.mu.Lock()
			made, bound := s.segs.made, s.segs.maxSegs
			s.mu.Unlock()
			if made > bound {
				t.Fatalf("%d segments made, bound %d", made, bound)
			}
			if total := int64(tc.entries * tc.entryBytes); made*arenaSegmentBytes >= int(total) {
				t.Fatalf("%d segments made for %d bytes: none reused", made, total)
			}
			for _, i := range []int{0, tc.entries / 2, tc.entries - 1} {
				got, err := s.Get(1, int64(i))
				if err != nil || !bytes.Equal(got, makeEntry(1, int64(i), int64(i)-1, tc.entryBytes)) {
					t.Fatalf("entry %d reads back %d bytes, %v", i, len(got), err)
				}
			}
		})
	}
}
