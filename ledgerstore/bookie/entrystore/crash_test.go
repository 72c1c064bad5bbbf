package entrystore

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"keeper/internal/vfs/errorfs"
)

// TestCrashKeepsFlushed crashes with exactly the synced state: entries
// flushed before the crash read back, unflushed ones are absent, and
// replaying them (as the journal does) restores them.
func TestCrashKeepsFlushed(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	flushed, unflushed := model{}, model{}
	for i := range int64(200) {
		flushed.put(i%13, i, mustAdd(t, s, i%13, i, i-1, 500))
	}
	mustFlush(t, s)
	for i := int64(200); i < 300; i++ {
		unflushed.put(i%13, i, mustAdd(t, s, i%13, i, i-1, 500))
	}
	unflushed.put(50, 0, mustAdd(t, s, 50, 0, -1, 500)) // a ledger that only existed in the cache

	c := e.crash(nil)
	s2 := c.open(t, c.config())
	flushed.check(t, s2)
	for l, entries := range unflushed {
		for id := range entries {
			want := ErrNoEntry
			if l == 50 {
				want = ErrNoLedger
			}
			mustAbsent(t, s2, l, id, want)
		}
	}
	for l, entries := range unflushed { // journal replay
		for id, b := range entries {
			if err := s2.Add(l, id, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustFlush(t, s2)
	c2 := c.crash(nil)
	s3 := c2.open(t, c2.config())
	flushed.check(t, s3)
	unflushed.check(t, s3)
}

var seedFlag = flag.Uint64("seed", 0, "run only this seed in the randomized crash tests")

// regressionSeeds once found bugs; they run on every go test.
var regressionSeeds = []uint64{1, 2, 3}

func crashSeeds() []uint64 {
	if *seedFlag != 0 {
		return []uint64{*seedFlag}
	}
	seeds := regressionSeeds
	n := 20
	if testing.Short() {
		n = 4
	}
	for range n {
		seeds = append(seeds, rand.Uint64())
	}
	return seeds
}

// TestCrashRandomized runs a random workload (adds, flushes, deletes,
// compactions) on a filesystem that starts failing log writes or syncs at
// a random point, then crashes keeping a random part of the unsynced data,
// which leaves torn tails. After reopening, every entry whose Flush
// returned nil reads back byte for byte, deleted ledgers stay deleted, and
// nothing else is invented.
func TestCrashRandomized(t *testing.T) {
	for _, seed := range crashSeeds() {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			if err := runCrashCase(t, seed); err != nil {
				t.Fatalf("%v\nreplay: go test ./ledgerstore/bookie/entrystore -run TestCrashRandomized -seed=%d", err, seed)
			}
		})
	}
}

func runCrashCase(t *testing.T, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	e := newEnv()
	efs := errorfs.Wrap(e.fs)
	cfg := e.config()
	cfg.FS = efs
	cfg.EntryLogMaxBytes = 16 << 10
	s, err := Open(cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	if rng.IntN(4) > 0 {
		// A failed sync leaves written but unsynced data behind, which the
		// crash below may keep in part: the torn tails Open must repair.
		ops := []errorfs.Op{errorfs.OpSync, errorfs.OpSync, errorfs.OpSync,
			errorfs.OpWrite, errorfs.OpRename, errorfs.OpSyncDir}[rng.IntN(6)]
		efs.Add(errorfs.Rule{Ops: ops, After: rng.IntN(60)})
	}
	durable, pending := model{}, model{}
	deleted := map[int64]bool{}
	next := map[int64]int64{}
	for range 300 {
		switch op := rng.IntN(20); {
		case op < 15:
			l := rng.Int64N(6)
			if deleted[l] {
				continue
			}
			id := next[l]
			b := makeEntry(l, id, id-1, 30+rng.IntN(2000))
			if s.Add(l, id, b) == nil {
				next[l]++
				pending.put(l, id, b)
			}
		case op < 18:
			if s.Flush() == nil {
				for l, es := range pending {
					for id, b := range es {
						durable.put(l, id, b)
					}
				}
				clear(pending)
			}
		case op < 19:
			l := rng.Int64N(6)
			if s.DeleteLedger(l) == nil {
				deleted[l] = true
				delete(durable, l)
				delete(pending, l)
			}
		default:
			_, _ = s.Compact(MajorCompactionThreshold, 4<<10)
		}
	}
	c := e.crash(rng)
	s2, err := Open(c.config())
	if err != nil {
		return fmt.Errorf("reopen after crash: %w", err)
	}
	defer s2.Close()
	return checkAfterCrash(s2, durable, pending, deleted)
}

// checkAfterCrash compares a reopened store with what was durable.
func checkAfterCrash(s *Store, durable, pending model, deleted map[int64]bool) error {
	for l, es := range durable {
		for id, want := range es {
			got, err := s.Get(l, id)
			if err != nil {
				return fmt.Errorf("durable ledger %d entry %d: %w", l, id, err)
			}
			if string(got) != string(want) {
				return fmt.Errorf("durable ledger %d entry %d: wrong bytes", l, id)
			}
		}
	}
	for l, es := range pending {
		for id := range es {
			if _, ok := durable[l][id]; ok {
				continue
			}
			// A failed Flush may have made part of it durable (a first
			// round), so an unflushed entry is absent or exactly right.
			got, err := s.Get(l, id)
			switch {
			case err == nil && string(got) != string(es[id]):
				return fmt.Errorf("unflushed ledger %d entry %d: wrong bytes", l, id)
			case err != nil && !errors.Is(err, ErrNoEntry) && !errors.Is(err, ErrNoLedger):
				return fmt.Errorf("unflushed ledger %d entry %d: Get = %v, want absent", l, id, err)
			}
		}
	}
	for l := range deleted {
		if _, ok := durable[l]; ok {
			continue
		}
		if _, err := s.Get(l, 0); !errors.Is(err, ErrNoLedger) {
			return fmt.Errorf("deleted ledger %d: Get = %v, want ErrNoLedger", l, err)
		}
	}
	return nil
}

// TestCrashDuringSeal simulates a crash after a log's ledgers map was
// written but before the header was patched: Open cuts the map, seals the
// log again, and its entries stay readable.
func TestCrashDuringSeal(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	m := model{}
	for i := range int64(20) {
		m.put(1, i, mustAdd(t, s, 1, i, i-1, 300))
	}
	mustFlush(t, s)
	w := s.writers[s.dirOf(1)]
	lf := w.lf
	chunks := appendMapChunks(nil, []LedgerBytes{{LedgerID: 1, Bytes: 999}})
	if _, err := lf.f.WriteAt(chunks[:len(chunks)-3], w.written); err != nil { // torn map
		t.Fatal(err)
	}
	if err := lf.f.Sync(); err != nil {
		t.Fatal(err)
	}
	c := e.crash(nil)
	s2 := c.open(t, c.config())
	m.check(t, s2)
	for _, u := range s2.LogUsage() {
		if u.LogID == lf.id && (!u.Sealed || !u.Known || u.TotalBytes != w.end()-LogHeaderBytes) {
			t.Fatalf("repaired log: %+v, want sealed with %d bytes", u, w.end()-LogHeaderBytes)
		}
	}
}

// TestTornHeaderRemoved checks that a newest log whose header never got
// written is removed, and that its id is not reused.
func TestTornHeaderRemoved(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	mustAdd(t, s, 0, 0, -1, 100)
	mustFlush(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cur := filepath.Join(testDirs[0], "current")
	torn := filepath.Join(cur, logFileName(40))
	f, err := e.fs.Create(torn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(freshHeader[:7]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s = e.open(t, e.config())
	if _, err := e.fs.Stat(torn); err == nil {
		t.Fatal("log with a torn header not removed")
	}
	mustGet(t, s, 0, 0, makeEntry(0, 0, -1, 100))
	mustAdd(t, s, 0, 1, 0, 100)
	mustFlush(t, s)
	if id, _ := splitLocation(mustLocation(t, s, 0, 1)); id <= 40 {
		t.Fatalf("new log id %d reuses the removed log's", id)
	}
}
