package entrystore

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
)

// fillInterleaved adds entries of ledgers 0..n-1 round-robin, flushing
// every few rounds, so that every log holds entries of many ledgers.
func fillInterleaved(t *testing.T, s *Store, ledgers, entries, size int) model {
	t.Helper()
	m := model{}
	for id := range int64(entries) {
		for l := range int64(ledgers) {
			m.put(l, id, mustAdd(t, s, l, id, id-1, size))
		}
		if id%5 == 4 {
			mustFlush(t, s)
		}
	}
	mustFlush(t, s)
	return m
}

// TestGCReclaimsSpace deletes three quarters of the ledgers, compacts,
// and checks that the log files really shrink and that the live entries
// read back byte for byte, also after a reopen.
func TestGCReclaimsSpace(t *testing.T) {
	e := newEnv()
	cfg := e.config()
	cfg.Dirs = testDirs[:1]
	cfg.ReadCacheBytes = -1 // every read below goes to the logs
	s := e.open(t, cfg)
	m := fillInterleaved(t, s, 20, 50, 1000)
	before := logBytes(t, e.fs)

	snapshot := s.Ledgers()
	live := func(id int64) bool { return id%4 == 0 }
	st, err := s.GC(snapshot, live)
	if err != nil {
		t.Fatal(err)
	}
	if st.LedgersDeleted != 15 {
		t.Fatalf("GC deleted %d ledgers, want 15", st.LedgersDeleted)
	}
	for id := range m {
		if !live(id) {
			mustAbsent(t, s, id, 0, ErrNoLedger)
			delete(m, id)
		}
	}
	var total, liveBytes int64
	minorVictims := 0
	for _, u := range s.LogUsage() {
		total += u.TotalBytes
		liveBytes += u.LiveBytes
		if u.Sealed && u.LiveRatio() < MinorCompactionThreshold {
			minorVictims++
		}
	}
	if r := float64(liveBytes) / float64(total); r < 0.2 || r > 0.3 {
		t.Fatalf("live ratio %.2f overall with a quarter of the ledgers alive", r)
	}
	cst, err := s.Compact(MinorCompactionThreshold, 8<<10)
	if err != nil {
		t.Fatal(err)
	}
	if cst.LogsCompacted != minorVictims {
		t.Fatalf("minor compaction took %d logs, want the %d below %.1f", cst.LogsCompacted, minorVictims, MinorCompactionThreshold)
	}
	for _, u := range s.LogUsage() {
		if u.Sealed && u.LiveRatio() < MinorCompactionThreshold {
			t.Fatalf("log %d still at ratio %.2f after minor compaction", u.LogID, u.LiveRatio())
		}
	}
	cst, err = s.Compact(MajorCompactionThreshold, 8<<10)
	if err != nil {
		t.Fatal(err)
	}
	if cst.LogsCompacted == 0 || cst.BytesFreed == 0 || cst.EntriesMoved == 0 {
		t.Fatalf("major compaction did nothing: %+v", cst)
	}
	after := logBytes(t, e.fs)
	t.Logf("log bytes %d -> %d; major compaction %+v", before, after, cst)
	if after > before/2 {
		t.Fatalf("log bytes %d -> %d: space not reclaimed", before, after)
	}
	m.check(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = e.open(t, cfg)
	m.check(t, s)
	if got := len(s.Ledgers()); got != 5 {
		t.Fatalf("%d ledgers after reopen, want 5", got)
	}
}

// TestGCRemovesDeadLogs checks that a log whose ledgers are all deleted is
// removed outright, without compaction.
func TestGCRemovesDeadLogs(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	for i := range int64(200) { // ledger 2: ~200 KB, several logs of dir 0
		mustAdd(t, s, 2, i, i-1, 1000)
	}
	mustFlush(t, s)
	keep := mustAdd(t, s, 4, 0, -1, 1000) // dir 0 too, in the current log
	mustFlush(t, s)
	before := logBytes(t, e.fs)
	st, err := s.GC(s.Ledgers(), func(id int64) bool { return id != 2 })
	if err != nil {
		t.Fatal(err)
	}
	if st.LedgersDeleted != 1 || st.LogsRemoved < 2 || st.BytesFreed < 128<<10 {
		t.Fatalf("GC: %+v", st)
	}
	if after := logBytes(t, e.fs); before-after != st.BytesFreed {
		t.Fatalf("log bytes %d -> %d, GC says %d freed", before, after, st.BytesFreed)
	}
	mustGet(t, s, 4, 0, keep)
	mustAbsent(t, s, 2, 0, ErrNoLedger)
}

// TestGCSnapshotRule checks Appendix A item 9: a ledger created after the
// snapshot survives GC even though the metadata listing missed it.
func TestGCSnapshotRule(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	mustAdd(t, s, 1, 0, -1, 100)
	snapshot := s.Ledgers()
	young := mustAdd(t, s, 2, 0, -1, 100) // created after the snapshot
	listed := map[int64]bool{1: true}     // the listing was taken before ledger 2 existed
	st, err := s.GC(snapshot, func(id int64) bool { return listed[id] })
	if err != nil || st.LedgersDeleted != 0 {
		t.Fatalf("GC = %+v, %v", st, err)
	}
	mustGet(t, s, 2, 0, young)
	if err := s.DeleteLedger(77); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("DeleteLedger of unknown ledger = %v", err)
	}
}

// TestCompactStepsInterleaved compacts in tiny steps while adds, flushes
// and reads go on between the steps.
func TestCompactStepsInterleaved(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	m := fillInterleaved(t, s, 6, 60, 700)
	if _, err := s.GC(s.Ledgers(), func(id int64) bool { return id%3 == 0 }); err != nil {
		t.Fatal(err)
	}
	for id := range m {
		if id%3 != 0 {
			delete(m, id)
		}
	}
	next := int64(60)
	steps := 0
	for _, u := range s.LogUsage() {
		if !u.Sealed || u.LiveRatio() >= MajorCompactionThreshold {
			continue
		}
		for done := false; !done; steps++ {
			var err error
			if _, done, err = s.CompactStep(u.LogID, 2<<10); err != nil {
				t.Fatal(err)
			}
			m.put(0, next, mustAdd(t, s, 0, next, next-1, 700))
			next++
			mustFlush(t, s)
			mustGet(t, s, 3, 10, m[3][10])
		}
	}
	if steps < 10 {
		t.Fatalf("only %d compaction steps", steps)
	}
	m.check(t, s)
	c := e.crash(nil)
	m.check(t, c.open(t, c.config()))
}

// TestCrashDuringCompaction crashes after some compaction steps of a log:
// both copies exist, the index names one, and every live entry reads.
func TestCrashDuringCompaction(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	m := fillInterleaved(t, s, 4, 80, 900)
	if _, err := s.GC(s.Ledgers(), func(id int64) bool { return id == 0 }); err != nil {
		t.Fatal(err)
	}
	for id := range m {
		if id != 0 {
			delete(m, id)
		}
	}
	var victim int64 = -1
	for _, u := range s.LogUsage() {
		if u.Sealed && u.LiveBytes > 0 && u.LiveRatio() < MajorCompactionThreshold {
			victim = u.LogID
			break
		}
	}
	if victim < 0 {
		t.Fatal("no compaction victim")
	}
	if _, done, err := s.CompactStep(victim, 4<<10); err != nil || done {
		t.Fatalf("CompactStep = done %v, %v", done, err)
	}
	c := e.crash(nil)
	s2 := c.open(t, c.config())
	m.check(t, s2)
	if _, err := s2.Compact(MajorCompactionThreshold, 0); err != nil {
		t.Fatal(err)
	}
	m.check(t, s2)
}

// TestCompactConcurrent runs compaction while other goroutines add,
// flush and read, for the race detector and for Get's retry when a log it
// was about to read is removed.
func TestCompactConcurrent(t *testing.T) {
	e := newEnv()
	cfg := e.config()
	cfg.ReadCacheBytes = -1
	s := e.open(t, cfg)
	m := fillInterleaved(t, s, 8, 40, 800)
	if _, err := s.GC(s.Ledgers(), func(id int64) bool { return id < 2 }); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Go(func() {
		for id := int64(40); id < 140; id++ {
			b := makeEntry(9, id, id-1, 800)
			for {
				err := s.Add(9, id, b)
				if errors.Is(err, ErrCacheFull) {
					err = s.Flush()
				} else if err == nil {
					break
				}
				if err != nil {
					errs <- err
					return
				}
			}
			if id%10 == 0 {
				if err := s.Flush(); err != nil {
					errs <- err
					return
				}
			}
		}
	})
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(7, 7))
		for range 2000 {
			l, id := rng.Int64N(2), rng.Int64N(40)
			got, err := s.Get(l, id)
			if err != nil || string(got) != string(m[l][id]) {
				errs <- errors.Join(errors.New("concurrent Get failed"), err)
				return
			}
		}
	})
	wg.Go(func() {
		if _, err := s.Compact(MajorCompactionThreshold, 4<<10); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for id := range m {
		if id >= 2 {
			delete(m, id)
		}
	}
	m.check(t, s)
	for id := int64(40); id < 140; id++ {
		mustGet(t, s, 9, id, makeEntry(9, id, id-1, 800))
	}
}
