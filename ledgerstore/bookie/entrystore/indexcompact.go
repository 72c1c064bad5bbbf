package entrystore

import (
	"context"
	"fmt"
)

// IndexPath is where the pebble index lives: <IndexDir>/current/index.
// It is what BookKeeper calls the entry location index's path.
func (s *Store) IndexPath() string {
	return s.cfg.IndexFS.PathJoin(s.cfg.IndexDir, "current", "index")
}

// CompactIndex compacts the whole pebble index now, as BookKeeper's entry
// location compaction compacts its RocksDB index: pebble rewrites its
// files without what deleted ledgers and overwritten locations left. Adds,
// reads and flushes go on meanwhile (pebble compacts alongside writes); as
// for every call, Close must wait until it returns.
func (s *Store) CompactIndex(ctx context.Context) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	// Every key starts with a prefix byte below 0xff ('e' or 'l').
	if err := s.db.Compact(ctx, []byte{0}, []byte{0xff}, true); err != nil {
		return fmt.Errorf("entrystore: compact index: %w", err)
	}
	return nil
}
