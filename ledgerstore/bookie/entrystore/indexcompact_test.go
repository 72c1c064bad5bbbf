package entrystore

import (
	"context"
	"errors"
	"testing"
)

// TestCompactIndex: compacting the index keeps every entry readable, also
// after entries of a deleted ledger left tombstones; a closed store
// refuses.
func TestCompactIndex(t *testing.T) {
	e := newEnv()
	cfg := e.config()
	s := e.open(t, cfg)
	m := model{}
	for entryID := range int64(20) {
		for _, ledgerID := range []int64{1, 2} {
			m.put(ledgerID, entryID, mustAdd(t, s, ledgerID, entryID, entryID-1, 100))
		}
	}
	mustFlush(t, s)
	if err := s.DeleteLedger(2); err != nil {
		t.Fatal(err)
	}
	delete(m, 2)
	if err := s.CompactIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.check(t, s)
	if want := cfg.IndexFS.PathJoin(cfg.IndexDir, "current", "index"); s.IndexPath() != want {
		t.Fatalf("IndexPath %s, want %s", s.IndexPath(), want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.CompactIndex(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("CompactIndex after Close: %v, want ErrClosed", err)
	}
}
