package ledger

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"keeper/ledgerstore/bkproto"
)

// One scenario per pitfall of docs/bookkeeper-protocol.md Appendix A (8 and 9 are bookie-side;
// see doc.go), each run by the simulator with the faults that expose it.
// Each would fail if its pitfall were reintroduced in this package: the
// scenario asserts the specific outcome, and s.finish runs every checker.

// pred selects requests for a fault rule.
type pred func(c *simClient, b BookieID, req any) bool

func when(p pred, a action) rule {
	return func(c *simClient, b BookieID, req any) (action, bool) { return a, p(c, b, req) }
}

func isAdd(entry int64, bookies ...BookieID) pred {
	return func(_ *simClient, b BookieID, req any) bool {
		a, ok := req.(AddRequest)
		return ok && a.EntryID == entry && (len(bookies) == 0 || slices.Contains(bookies, b))
	}
}

func isRead(entry int64, bookies ...BookieID) pred {
	return func(_ *simClient, b BookieID, req any) bool {
		r, ok := req.(ReadRequest)
		return ok && !r.LongPoll && r.EntryID == entry && (len(bookies) == 0 || slices.Contains(bookies, b))
	}
}

func from(name string, p pred) pred {
	return func(c *simClient, b BookieID, req any) bool { return c.name == name && p(c, b, req) }
}

func before(s *sim, tick int64, p pred) pred {
	return func(c *simClient, b BookieID, req any) bool { return s.now < tick && p(c, b, req) }
}

func anyAdd(_ *simClient, _ BookieID, req any) bool { _, ok := req.(AddRequest); return ok }

func replay(t *testing.T) string { return "go test ./ledger -run '^" + t.Name() + "$'" }

// scenario starts a simulation with n bookies b1..bn and a ledger on the
// first e of them, writes `acked` entries and waits for them.
func scenario(t *testing.T, e, qw, qa, n, acked int) (*sim, *simWriter) {
	t.Helper()
	s := newSim(t, 99, n)
	sw := s.createLedgerOn(s.ids[:e], qw, qa, bkproto.DigestCRC32C)
	if acked > 0 {
		sw.append(acked)
		if !s.run(200, func() bool { return sw.w.LAC() == int64(acked-1) }) {
			t.Fatalf("setup: LAC %d, want %d", sw.w.LAC(), acked-1)
		}
	}
	return s, sw
}

// TestPitfall1_UnknownIsNotAbsent: entry 5 is acknowledged by b1 and b2.
// During recovery b1 answers its read with EIO and b2 does not answer; b3
// truthfully says NoSuchEntry. Counting either unknown as a negative makes
// two negatives (Qw−Qa+1) and truncates entry 5; recovery must wait.
func TestPitfall1_UnknownIsNotAbsent(t *testing.T) {
	s, sw := scenario(t, 3, 3, 2, 4, 5)
	s.rules = []rule{when(isAdd(5, "b3"), action{drop: true})}
	sw.append(1)
	if !s.run(100, func() bool { return sw.w.LAC() == 5 }) {
		t.Fatal("entry 5 not acknowledged")
	}
	sw.c.kill()
	heal := s.now + 200
	s.rules = []rule{
		when(before(s, heal, isRead(5, "b1")), action{answer: true, status: bkproto.StatusCode_EIO}),
		when(before(s, heal, isRead(5, "b2")), action{drop: true}),
	}
	rc := s.startRecovery("recovery")
	s.run(150, nil)
	if rc.done != nil {
		t.Fatalf("recovery finished (%+v) while the only copies of entry 5 were unknown", rc.done)
	}
	s.run(400, func() bool { return rc.done != nil })
	if rc.done == nil || rc.done.Err != nil || rc.done.Metadata.LastEntryID != 5 {
		t.Fatalf("recovery ended with %+v, want closed at 5", rc.done)
	}
	s.finish(replay(t))
}

// TestPitfall2_CoverageBeforeReadingForward: the fence to b3 is lost and
// the fence to b2 is slow, while the writer keeps writing. Recovery must
// not read forward before the fence answers cover the ensemble (b2's
// answer), and every recovery read must fence.
func TestPitfall2_CoverageBeforeReadingForward(t *testing.T) {
	s, sw := scenario(t, 3, 3, 2, 4, 3)
	isFence := func(_ *simClient, _ BookieID, req any) bool {
		r, ok := req.(ReadRequest)
		return ok && r.Fence && r.EntryID == bkproto.LastAddConfirmed
	}
	s.rules = []rule{
		when(func(c *simClient, b BookieID, req any) bool { return b == "b3" && isFence(c, b, req) }, action{drop: true}),
		when(func(c *simClient, b BookieID, req any) bool { return b == "b2" && isFence(c, b, req) }, action{delay: 30}),
	}
	s.hooks = append(s.hooks, func() { sw.append(1) })
	start := s.now
	rc := s.startRecovery("recovery")
	s.run(600, func() bool { return rc.done != nil })
	for i, r := range rc.sentReads {
		if r.EntryID >= 0 && rc.sentReadTicks[i] < start+30 {
			t.Fatalf("recovery read entry %d at tick %d, before the fence answers covered the ensemble (tick ≥ %d)",
				r.EntryID, rc.sentReadTicks[i], start+30)
		}
	}
	if rc.done == nil || rc.done.Err != nil {
		s.violate("recovery: %+v", rc.done)
		s.report(replay(t))
	}
	if err := sw.w.Err(); !errors.Is(err, ErrLedgerFenced) && !errors.Is(err, ErrLedgerClosed) {
		t.Fatalf("old writer not fenced: Err() = %v", err)
	}
	s.hooks = nil
	s.finish(replay(t))
}

// TestPitfall3_NoAckDuringEnsembleChange: b2 and b3 crash, the writer's
// metadata store is unreachable so its ensemble change never lands, and it
// keeps writing. Nothing may be acknowledged: the only copies would be on
// replacements that no reader or recoverer knows (#1591). Then the writer
// dies, b2 and b3 come back, and recovery must not lose anything.
func TestPitfall3_NoAckDuringEnsembleChange(t *testing.T) {
	s, sw := scenario(t, 3, 2, 2, 6, 6)
	sw.c.sessionDownUntil, sw.c.sessionWritesLand = 1<<40, 0
	s.crash("b2")
	s.crash("b3")
	s.run(5, nil)
	sw.append(6)
	s.run(150, nil)
	if got := sw.w.LAC(); got != 5 || len(s.h.acked) != 6 {
		t.Fatalf("LAC %d with %d acknowledged entries during an ensemble change that never landed, want 5 and 6", got, len(s.h.acked))
	}
	sw.c.kill()
	s.restart("b2")
	s.restart("b3")
	s.finish(replay(t))
}

// TestPitfall4_CompletionsInEntryOrder: entry 0's adds are lost, entry 1
// gets its ack quorum. Entry 1 must not complete before entry 0; when the
// writer dies, recovery finds entry 0 absent and closes the ledger empty,
// which is only right if entry 1 was never acknowledged.
func TestPitfall4_CompletionsInEntryOrder(t *testing.T) {
	s, sw := scenario(t, 3, 2, 2, 3, 0)
	s.rules = []rule{when(isAdd(0, "b1", "b2"), action{drop: true})}
	sw.append(2)
	s.run(15, nil)
	if len(s.h.acked) != 0 || sw.w.LAC() != -1 {
		t.Fatalf("acknowledged %v (LAC %d) while entry 0 has no ack", s.h.acked, sw.w.LAC())
	}
	sw.c.kill()
	s.finish(replay(t))
	if md := s.store.read(); md.LastEntryID != -1 {
		t.Fatalf("ledger closed at %d, want -1", md.LastEntryID)
	}
}

// TestPitfall5_LACIsTheHeaderField: entry 4 is lost everywhere; entry 5
// (LAC field 3) reaches b1 only. The LAC is 3, not 5: recovery closes at 3.
// Starting from the entry id would close at 5 around a hole at 4.
func TestPitfall5_LACIsTheHeaderField(t *testing.T) {
	s, sw := scenario(t, 3, 3, 2, 3, 4)
	s.rules = []rule{when(isAdd(4), action{drop: true}), when(isAdd(5, "b2", "b3"), action{drop: true})}
	sw.append(2)
	s.run(15, nil)
	sw.c.kill()
	rc := s.startRecovery("recovery")
	s.run(300, func() bool { return rc.done != nil })
	if rc.done == nil || rc.done.Metadata.LastEntryID != 3 {
		t.Fatalf("recovery: %+v, want closed at 3", rc.done)
	}
	s.finish(replay(t))
}

// TestPitfall5_LACFloorAtLastEnsemble (#2615): the whole ensemble is
// replaced at entry 10 and nothing is written to the new one. Its bookies
// report no LAC; recovery must start at 9, not walk entry 0 onwards in the
// new ensemble.
func TestPitfall5_LACFloorAtLastEnsemble(t *testing.T) {
	s, sw := scenario(t, 3, 2, 2, 6, 10)
	for _, b := range []BookieID{"b1", "b2", "b3"} {
		s.crash(b)
	}
	if !s.run(100, func() bool {
		last := s.store.read().LastSegment()
		return last.FirstEntryID == 10 && !slices.ContainsFunc(last.Bookies, func(b BookieID) bool { return b <= "b3" })
	}) {
		t.Fatalf("ensemble not replaced: %v", s.store.read().Segments)
	}
	sw.c.kill()
	for _, b := range []BookieID{"b1", "b2", "b3"} {
		s.restart(b)
	}
	rc := s.startRecovery("recovery")
	s.run(300, func() bool { return rc.done != nil })
	if rc.done == nil || rc.done.Err != nil || rc.done.Metadata.LastEntryID != 9 {
		t.Fatalf("recovery: %+v, want closed at 9", rc.done)
	}
	s.finish(replay(t))
}

// TestPitfall6_RecoveryAddsBypassFence: entry 3 reached b1 only; recovery
// must re-add it to its fenced write set, which only RECOVERY_ADD gets past.
func TestPitfall6_RecoveryAddsBypassFence(t *testing.T) {
	s, sw := scenario(t, 3, 3, 2, 3, 3)
	s.rules = []rule{when(isAdd(3, "b2", "b3"), action{drop: true})}
	sw.append(1)
	s.run(15, nil)
	sw.c.kill()
	s.rules = nil
	rc := s.startRecovery("recovery")
	s.run(300, func() bool { return rc.done != nil })
	if rc.done == nil || rc.done.Err != nil || rc.done.Metadata.LastEntryID != 3 {
		t.Fatalf("recovery: %+v, want closed at 3", rc.done)
	}
	s.finish(replay(t))
}

// TestPitfall7_FailedAddMayBeInTheLedger: entry 3 reaches only b1, then a
// recovery fences the writer. The writer's add fails, but recovery finds
// entry 3 and keeps it: the failure must say "outcome unknown".
func TestPitfall7_FailedAddMayBeInTheLedger(t *testing.T) {
	s, sw := scenario(t, 3, 3, 2, 4, 3)
	s.rules = []rule{when(isAdd(3, "b2", "b3"), action{drop: true})}
	sw.append(1)
	s.run(5, nil)
	rc := s.startRecovery("recovery")
	s.run(300, func() bool { return rc.done != nil && sw.w.Err() != nil })
	err := s.h.failed[3]
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, ErrLedgerFenced) {
		t.Fatalf("entry 3's add failed with %v, want outcome unknown and fenced", err)
	}
	if rc.done == nil || rc.done.Metadata.LastEntryID != 3 {
		t.Fatalf("recovery: %+v, want entry 3 kept", rc.done)
	}
	s.finish(replay(t))
}

// TestPitfall8_BookieCrashes: bookies crash while the writer writes (their
// in-flight adds are lost, what they acknowledged and their fence flags
// survive); a fenced bookie that restarts still rejects the old writer.
func TestPitfall8_BookieCrashes(t *testing.T) {
	s, sw := scenario(t, 3, 3, 2, 5, 5)
	s.hooks = append(s.hooks, func() {
		if s.now%3 == 0 {
			sw.append(1)
		}
	})
	s.crash("b2")
	s.run(60, nil)
	s.restart("b2")
	s.crash("b1")
	s.run(10, nil)
	s.restart("b1")
	rc := s.startRecovery("recovery")
	s.run(400, func() bool { return rc.done != nil })
	fenced := s.store.read().LastSegment().Bookies[0]
	s.crash(fenced)
	s.restart(fenced)
	s.run(100, nil)
	if err := sw.w.Err(); !errors.Is(err, ErrLedgerFenced) && !errors.Is(err, ErrLedgerClosed) {
		t.Fatalf("old writer still writing after recovery and a restart: Err() = %v", err)
	}
	s.hooks = nil
	s.finish(replay(t))
}

// TestPitfall10_DigestsAndIdentity: b1 returns corrupt bodies (HMAC
// digest), b2 answers every read with a valid copy of another entry.
// Neither may be taken: readers move on to the next replica (recovery
// counts both as unknown: TestRecoveryUnknownIsNotAbsent), and no two
// identical requests are ever in flight on one connection (checked
// throughout).
func TestPitfall10_DigestsAndIdentity(t *testing.T) {
	s := newSim(t, 7, 4)
	sw := s.createLedgerOn(s.ids[:3], 3, 2, bkproto.DigestHMAC)
	sw.append(8)
	s.run(50, nil)
	sw.append(2) // carries LAC 7 to the bookies
	s.run(50, nil)
	other := sw.c.sentAdds[len(sw.c.sentAdds)-1] // entry 9, digest-valid
	isReadAt := func(bookie BookieID) pred {
		return func(_ *simClient, b BookieID, req any) bool {
			r, ok := req.(ReadRequest)
			return ok && b == bookie && !r.LongPoll && r.Kind == ReadEntry
		}
	}
	s.rules = []rule{
		when(isReadAt("b1"), action{corrupt: true}),
		when(func(c *simClient, b BookieID, req any) bool {
			return isReadAt("b2")(c, b, req) && req.(ReadRequest).EntryID != other.EntryID
		}, action{answer: true, status: bkproto.StatusCode_EOK, body: other.Body}),
	}
	s.startTailer("tailer")
	s.startLACRead("lac-reader")
	s.run(200, nil)
	if next := *s.h.tailers["tailer"]; next != 8 {
		t.Fatalf("tailer at entry %d, want 8: it must move on to the good replica", next)
	}
	sw.w.Close()
	sw.c.flush()
	s.run(50, nil)
	r := s.startReader("reader", s.store.read(), 9)
	s.run(200, func() bool { return r.done != nil })
	if r.done == nil || r.done.Err != nil {
		t.Fatalf("read of 0..9 with two bad replicas: %+v", r.done)
	}
	s.finish(replay(t))
}

// TestConcurrentRecoveriesNeverExposeBeyondTheEnd: two recoveries race.
// Entries 4 and 5 reached b1 only; recovery-2 cannot read them from b1 and
// closes at 3, recovery-1 finds 4 and 5 and re-adds them, 5 after 4. A tailer that
// has not yet seen the close keeps polling: the LAC it learns from the
// re-added entries must never pass 3, so re-adds carry the LAC recovery
// started from, not recovery-1's own progress.
func TestConcurrentRecoveriesNeverExposeBeyondTheEnd(t *testing.T) {
	s, sw := scenario(t, 3, 3, 2, 3, 4)
	s.rules = []rule{when(isAdd(4, "b2", "b3"), action{drop: true}), when(isAdd(5, "b2", "b3"), action{drop: true})}
	sw.append(2)
	s.run(15, nil)
	sw.c.kill()
	tl := s.startTailer("tailer")
	tl.watch = false // it learns of the close late
	s.rules = []rule{
		when(from("recovery-2", isRead(4, "b1")), action{drop: true}),
		when(from("recovery-1", anyAdd), action{delay: 30}),
		// recovery-1 finds entry 5 (on b1) only after its re-add of 4
		// completed, and does not hear b2 and b3 deny it.
		when(from("recovery-1", before(s, s.now+150, isRead(5))), action{drop: true}),
		when(from("recovery-1", isRead(5, "b2", "b3")), action{drop: true}),
	}
	r1 := s.startRecovery("recovery-1")
	r2 := s.startRecovery("recovery-2")
	s.run(600, func() bool { return r1.done != nil && r2.done != nil })
	if md := s.store.read(); md.State != StateClosed || md.LastEntryID != 3 {
		t.Fatalf("ledger %v at %d, want closed at 3 by recovery-2", md.State, md.LastEntryID)
	}
	s.run(200, nil)
	tl.deliverMetadata(s.store.read())
	s.finish(replay(t))
}

// TestWriterSessionExpiresDuringEnsembleChange: the writer's session is
// lost while its ensemble change is written. Whether the write landed or
// not, once the session is back the writer re-reads the metadata, carries
// on, acknowledges everything and closes.
func TestWriterSessionExpiresDuringEnsembleChange(t *testing.T) {
	for _, lands := range []int{0, 1} {
		t.Run(fmt.Sprintf("lands=%d", lands), func(t *testing.T) {
			s, sw := scenario(t, 3, 3, 2, 4, 4)
			sw.c.sessionDownUntil, sw.c.sessionWritesLand = s.now+80, lands
			s.crash("b1")
			sw.append(4)
			s.run(40, nil)
			if sw.w.LAC() != 3 {
				t.Fatalf("LAC %d moved during the change", sw.w.LAC())
			}
			if !s.run(300, func() bool { return sw.w.LAC() == 7 }) {
				t.Fatalf("LAC %d after the session came back, want 7", sw.w.LAC())
			}
			sw.w.Close()
			sw.c.flush()
			s.run(100, func() bool { return sw.c.done != nil })
			if sw.c.done == nil || sw.c.done.Err != nil || sw.c.done.Metadata.LastEntryID != 7 {
				t.Fatalf("close: %+v", sw.c.done)
			}
			s.finish(replay(t))
		})
	}
}

// TestRacingMetadataUpdates: the writer's ensemble change and a recovery's
// IN_RECOVERY mark race for the same version; whichever wins, the other
// re-reads and decides again, and nothing acknowledged is lost.
func TestRacingMetadataUpdates(t *testing.T) {
	for seed := range uint64(40) {
		s, sw := scenario(t, 3, 3, 2, 5, 3)
		s.seed = seed
		s.rng = rand.New(rand.NewPCG(seed, 5))
		sw.append(3)
		s.crash("b3")
		s.run(int64(seed%4), nil)
		s.startRecovery("recovery")
		s.hooks = append(s.hooks, func() { sw.append(1) })
		s.run(300, nil)
		s.hooks = nil
		s.finish(fmt.Sprintf("%s (iteration %d)", replay(t), seed))
	}
}
