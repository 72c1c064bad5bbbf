package journal_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"

	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
	"keeper/ledgerstore/bookie/journal"
)

// history records what a workload did to a journal: every record body
// appended, and how many of them a successful Sync had covered.
type history struct {
	cfg      journal.Config
	appended [][]byte
	synced   int
	nextID   int64 // the next entry id to use
}

// add appends a record and remembers it. A record whose Append failed
// because the journal broke may still be partly on disk, so it counts as
// appended (but not synced).
func (h *history) add(j *journal.Journal, r journal.Record) error {
	_, err := j.Append(r)
	if err != nil && j.Err() == nil {
		return err // refused: nothing was written
	}
	h.appended = append(h.appended, bytes.Clone(r.Body()))
	return err
}

// randomRecord returns an entry most of the time, else a special record.
func (h *history) randomRecord(rng *rand.Rand) journal.Record {
	h.nextID++
	ledger := int64(1 + rng.IntN(3))
	switch rng.IntN(20) {
	case 0:
		return journal.NewMasterKeyRecord(ledger, []byte(fmt.Sprintf("key-%020d", h.nextID)))
	case 1:
		return journal.NewFenceRecord(ledger)
	case 2:
		return journal.NewExplicitLACRecord(ledger, entryBody(ledger, h.nextID, rng.IntN(8))[:24])
	}
	r, _ := journal.NewEntryRecord(entryBody(ledger, h.nextID, rng.IntN(1500)))
	return r
}

// sync syncs and, if that worked, notes that everything appended is durable.
func (h *history) sync(j *journal.Journal) error {
	if err := j.Sync(); err != nil {
		return err
	}
	h.synced = len(h.appended)
	return nil
}

// check reads the journal on a crashed filesystem and checks the
// durability promise: every synced record comes back, in order, and
// anything after them is a prefix of what was appended but not synced. In
// format 6 the last record past the synced ones may be a torn record read
// as whole (see the package doc). It also checks that Replay before and
// after Open's repair agree. It returns what survived.
func (h *history) check(t *testing.T, fsys vfs.FS, what string) [][]byte {
	t.Helper()
	first := replay(fsys, "/j", journal.Position{}, h.cfg)
	if first.err != nil && !errors.Is(first.err, journal.ErrTorn) {
		t.Fatalf("%s: replay before repair: %v", what, first.err)
	}
	j, err := journal.Open(fsys, "/j", h.cfg)
	if err != nil {
		t.Fatalf("%s: reopen: %v", what, err)
	}
	got := replay(fsys, "/j", journal.Position{}, h.cfg)
	if got.err != nil {
		t.Fatalf("%s: replay after repair: %v", what, got.err)
	}
	mustOK(t, j.Close())
	if len(got.bodies) != len(first.bodies) || got.end != first.end || got.end != j.Mark() {
		t.Fatalf("%s: before repair %d records to %v (%v), after %d to %v, Open's mark %v",
			what, len(first.bodies), first.end, first.err, len(got.bodies), got.end, j.Mark())
	}
	n := len(got.bodies)
	if n < h.synced || n > len(h.appended) {
		t.Fatalf("%s: replayed %d records; %d were synced, %d appended", what, n, h.synced, len(h.appended))
	}
	for i, body := range got.bodies {
		tornV6 := h.cfg.FormatVersion == 6 && i == n-1 && i >= h.synced
		if !bytes.Equal(body, h.appended[i]) && !tornV6 {
			t.Fatalf("%s: record %d of %d (%d synced) differs:\ngot  %s\nwant %s", what, i, n, h.synced,
				describe(got.bodies[i:i+1]), describe(h.appended[i:i+1]))
		}
	}
	return got.bodies
}

// randomWorkload appends, flushes and syncs at random, ending with some
// records that were appended (and perhaps flushed) but not synced.
func randomWorkload(rng *rand.Rand, j *journal.Journal, h *history, steps int) error {
	for range steps {
		switch r := rng.IntN(10); {
		case r < 6:
			for range 1 + rng.IntN(20) {
				if err := h.add(j, h.randomRecord(rng)); err != nil {
					return err
				}
			}
		case r < 8:
			if err := h.sync(j); err != nil {
				return err
			}
		default:
			if err := j.Flush(); err != nil {
				return err
			}
		}
	}
	for range rng.IntN(30) {
		if err := h.add(j, h.randomRecord(rng)); err != nil {
			return err
		}
	}
	if rng.IntN(2) == 0 {
		return j.Flush()
	}
	return nil
}

// TestCrashRecovery crashes random workloads at random moments, with and
// without torn writes, and checks the durability promise after each of
// several restarts, in both formats.
func TestCrashRecovery(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 25
	}
	for _, version := range []int{7, 6} {
		var warnings bytes.Buffer // Open's reports of what it repaired
		cfg := withFormat(version)
		cfg.Logger = slog.New(slog.NewTextHandler(&warnings, nil))
		for seed := range uint64(seeds) {
			t.Run(fmt.Sprintf("v%d/seed=%d", version, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 0x10e))
				m := vfs.NewMem()
				h := &history{cfg: cfg}
				for restart := range 3 {
					j, err := journal.Open(m, "/j", cfg)
					mustOK(t, err)
					mustOK(t, randomWorkload(rng, j, h, 5+rng.IntN(25)))
					var crashRNG *rand.Rand
					if rng.IntN(3) > 0 {
						crashRNG = rand.New(rand.NewPCG(rng.Uint64(), 1))
					}
					m = m.CrashClone(crashRNG)
					got := h.check(t, m, fmt.Sprintf("restart %d", restart))
					h.appended, h.synced = got, len(got) // what survived is the new history
				}
			})
		}
		// The seeds must have torn some tails, or the test proves little.
		// (Format 6 sees few: most torn records read as whole; see the
		// package doc.)
		if n := strings.Count(warnings.String(), "cutting torn tail"); n == 0 && version == 7 {
			t.Errorf("v%d: no crash left a torn tail", version)
		} else {
			t.Logf("v%d: %d reopenings cut a torn tail", version, n)
		}
	}
}

// TestCorruptionIsReported damages each record of a closed journal in
// turn (its length, its checksum, its body): replay must stop at that
// record with ErrCorrupt naming its file and offset, never skip it, and
// never end early without an error. Format 6 has no checksum, so there
// only a length out of range is sure to be caught.
func TestCorruptionIsReported(t *testing.T) {
	for _, version := range []int{7, 6} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			cfg := withFormat(version)
			base := vfs.NewMem()
			j, err := journal.Open(base, "/j", cfg)
			mustOK(t, err)
			type rec struct {
				path  string
				start int64
			}
			var recs []rec
			rng := rand.New(rand.NewPCG(1, 2))
			h := &history{cfg: cfg}
			for i := range 150 {
				r := h.randomRecord(rng)
				pos, err := j.Append(r)
				mustOK(t, err)
				framed := int64(len(r.Body()) + 4)
				if version == 7 {
					framed += 4
				}
				path := fmt.Sprintf("/j/current/%s", journal.FileName(pos.LogID))
				recs = append(recs, rec{path, pos.Offset - framed})
				if i%9 == 0 {
					mustOK(t, j.Sync())
				}
			}
			mustOK(t, j.Close())
			at := []int64{0} // the length's high byte: far above the limit
			if version == 7 {
				at = append(at, 2, 5, 20) // the length's third byte, the checksum, the body
			}
			for i, r := range recs {
				for _, a := range at {
					m := base.CrashClone(nil)
					data, err := vfs.ReadFile(m, r.path)
					mustOK(t, err)
					data[r.start+a] ^= 0x40
					id, _ := journal.ParseFileName(r.path[len("/j/current/"):])
					writeRaw(t, m, "/j", id, data)
					got := replay(m, "/j", journal.Position{}, cfg)
					if !errors.Is(got.err, journal.ErrCorrupt) || len(got.bodies) != i {
						t.Fatalf("record %d, byte %d flipped: replayed %d records, then %v", i, a, len(got.bodies), got.err)
					}
					if re := recordErr(t, got.err); re.File != r.path || re.Offset != r.start {
						t.Errorf("record %d, byte %d: error at %s:%d, want %s:%d", i, a, re.File, re.Offset, r.path, r.start)
					}
				}
			}
		})
	}
}

// TestFullDisk fills the disk part way through: the journal reports
// ENOSPC, stays poisoned, and a restart finds every synced record intact.
func TestFullDisk(t *testing.T) {
	for _, space := range []int64{0, 1, 50, 500, 5000, 20000} {
		t.Run(fmt.Sprintf("space=%d", space), func(t *testing.T) {
			m := vfs.NewMem()
			efs := errorfs.Wrap(m)
			j, err := journal.Open(efs, "/j", testConfig)
			mustOK(t, err)
			rng := rand.New(rand.NewPCG(uint64(space), 1))
			h := &history{cfg: testConfig}
			for range 30 {
				mustOK(t, h.add(j, h.randomRecord(rng)))
			}
			mustOK(t, h.sync(j))
			efs.LimitSpace(space)
			var failure error
			for i := 0; failure == nil && i < 2000; i++ {
				if failure = h.add(j, h.randomRecord(rng)); failure == nil && i%10 == 9 {
					failure = h.sync(j)
				}
			}
			if !errors.Is(failure, syscall.ENOSPC) {
				t.Fatalf("got %v, want ENOSPC", failure)
			}
			checkPoisoned(t, j, failure)
			efs.LimitSpace(-1) // the disk is freed, but the journal stays poisoned
			checkPoisoned(t, j, failure)
			if err := j.Close(); err != failure {
				t.Errorf("Close = %v, want the poison", err)
			}
			h.check(t, m.CrashClone(nil), "after ENOSPC")
			h.check(t, m.CrashClone(rand.New(rand.NewPCG(uint64(space), 2))), "after ENOSPC, torn")
		})
	}
}

// checkPoisoned checks that every call on j returns the first failure.
func checkPoisoned(t *testing.T, j *journal.Journal, first error) {
	t.Helper()
	if j.Err() != first {
		t.Errorf("Err() = %v, want %v", j.Err(), first)
	}
	_, appendErr := j.Append(journal.NewFenceRecord(1))
	for name, err := range map[string]error{"Append": appendErr, "Flush": j.Flush(), "Sync": j.Sync()} {
		if err != first {
			t.Errorf("%s on a poisoned journal = %v, want %v", name, err, first)
		}
	}
}

// TestSyncFailure makes an fsync fail: the journal is poisoned, never
// retries, and a crash afterwards loses nothing an earlier Sync covered.
func TestSyncFailure(t *testing.T) {
	for _, op := range []errorfs.Op{errorfs.OpSyncData, errorfs.OpSync, errorfs.OpSyncDir} {
		t.Run(op.String(), func(t *testing.T) {
			m := vfs.NewMem()
			efs := errorfs.Wrap(m)
			cfg := testConfig
			cfg.MaxSizeBytes = 1 // every Sync rolls: the next file's first sync is an fsync plus a directory sync
			if op == errorfs.OpSyncData {
				// One file whose size never changes: its second sync is an fdatasync.
				cfg.MaxSizeBytes, cfg.PreAllocSizeBytes = 1<<20, 1<<20
			}
			j, err := journal.Open(efs, "/j", cfg)
			mustOK(t, err)
			rng := rand.New(rand.NewPCG(3, 4))
			h := &history{cfg: cfg}
			for range 10 {
				mustOK(t, h.add(j, h.randomRecord(rng)))
			}
			mustOK(t, h.sync(j))
			markBefore := j.Mark()
			efs.Add(errorfs.Rule{Ops: op, Times: 1})
			for range 10 {
				mustOK(t, h.add(j, h.randomRecord(rng)))
			}
			failure := h.sync(j)
			if !errors.Is(failure, errorfs.ErrInjected) {
				t.Fatalf("Sync = %v, want the injected failure", failure)
			}
			syncs := efs.Count(errorfs.OpAnySync)
			checkPoisoned(t, j, failure)
			if n := efs.Count(errorfs.OpAnySync) - syncs; n > 0 {
				t.Errorf("%d more syncs after the failure: a failed sync was retried", n)
			}
			if j.Mark() != markBefore {
				t.Errorf("Mark moved to %v after a failed sync", j.Mark())
			}
			if err := j.Close(); err != failure {
				t.Errorf("Close = %v", err)
			}
			h.check(t, m.CrashClone(nil), "after a failed sync")
		})
	}
}

// TestEveryFailurePoint runs one workload many times, failing a different
// filesystem operation each time, then crashes: whatever failed, the
// durability promise holds after the restart.
func TestEveryFailurePoint(t *testing.T) {
	run := func(fsys vfs.FS, h *history) error {
		j, err := journal.Open(fsys, "/j", h.cfg)
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(5, 6))
		for range 6 {
			for range 15 {
				if err := h.add(j, h.randomRecord(rng)); err != nil {
					return err
				}
			}
			if err := h.sync(j); err != nil {
				return err
			}
		}
		return j.Close()
	}
	probe := errorfs.Wrap(vfs.NewMem())
	mustOK(t, run(probe, &history{cfg: testConfig}))
	total := probe.Count(errorfs.OpAll)
	for n := range total {
		m := vfs.NewMem()
		efs := errorfs.Wrap(m)
		efs.Add(errorfs.Rule{Ops: errorfs.OpAll, After: n, Times: 1})
		h := &history{cfg: testConfig}
		err := run(efs, h)
		if err == nil {
			continue // the failed operation was one whose failure was handled
		}
		h.check(t, m.CrashClone(nil), fmt.Sprintf("operation %d failed (%v)", n, err))
		h.check(t, m.CrashClone(rand.New(rand.NewPCG(uint64(n), 3))), fmt.Sprintf("operation %d failed, torn", n))
	}
}

// TestCrashKeepsExactlySynced appends and syncs N records, appends M more
// (some flushed, some only buffered) and crashes: the worst-case crash
// keeps exactly the N synced records; crashes that let unsynced writes
// through keep N plus a prefix of the rest, and some of them tear a record
// that the next Open cuts.
func TestCrashKeepsExactlySynced(t *testing.T) {
	for _, version := range []int{7, 6} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			m := vfs.NewMem()
			cfg := withFormat(version)
			h := &history{cfg: cfg}
			j, err := journal.Open(m, "/j", cfg)
			mustOK(t, err)
			rng := rand.New(rand.NewPCG(7, 8))
			for range 40 {
				mustOK(t, h.add(j, h.randomRecord(rng)))
			}
			mustOK(t, h.sync(j))
			for i := range 30 {
				mustOK(t, h.add(j, h.randomRecord(rng)))
				if i == 19 {
					mustOK(t, j.Flush())
				}
			}
			if got := h.check(t, m.CrashClone(nil), "worst-case crash"); len(got) != 40 {
				t.Fatalf("worst-case crash kept %d records, want exactly the 40 synced", len(got))
			}
			more, torn := 0, 0
			for seed := range uint64(200) {
				crashed := m.CrashClone(rand.New(rand.NewPCG(seed, 9)))
				if first := replay(crashed, "/j", journal.Position{}, cfg); errors.Is(first.err, journal.ErrTorn) {
					torn++
				}
				if got := h.check(t, crashed, fmt.Sprintf("crash seed %d", seed)); len(got) > 40 {
					more++
				}
			}
			if more == 0 || (version == 7 && torn == 0) {
				t.Errorf("200 crashes: %d kept unsynced records, %d tore one; the test proves little", more, torn)
			}
		})
	}
}
