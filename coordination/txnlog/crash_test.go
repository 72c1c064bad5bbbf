package txnlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"

	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
)

// history records what a workload did to a log: every zxid appended, and
// how many of them a successful Sync had covered.
type history struct {
	appended []zxid.ID
	synced   int
	cfg      txnlog.Config // for reopening; testConfig if zero
}

// check reopens the log on a crashed filesystem and checks the durability
// promise: every synced txn is there, in order, and anything after it is a
// prefix of what was appended but not synced.
func (h *history) check(t *testing.T, fsys vfs.FS, what string) []zxid.ID {
	t.Helper()
	cfg := h.cfg
	if cfg == (txnlog.Config{}) {
		cfg = testConfig
	}
	l, err := txnlog.Open(fsys, "/d", cfg)
	if err != nil {
		t.Fatalf("%s: reopen: %v", what, err)
	}
	last := l.LastZxid()
	mustOK(t, l.Close())
	got, err := readZxids(t, fsys, "/d", 0)
	if err != nil {
		t.Fatalf("%s: read after reopen: %v", what, err)
	}
	if len(got) < h.synced || !slices.Equal(got, h.appended[:len(got)]) {
		t.Fatalf("%s: read %v\nwant the %d synced of %v, then a prefix of the rest", what, got, h.synced, h.appended)
	}
	if want := zxid.ID(0); len(got) > 0 && last != got[len(got)-1] || len(got) == 0 && last != want {
		t.Fatalf("%s: LastZxid %v after reading %v", what, last, got)
	}
	return got
}

// randomWorkload appends, syncs and rolls at random, ending with some
// unsynced appends. It stops at the first error and returns it.
func randomWorkload(rng *rand.Rand, l *txnlog.Log, h *history, next *zxid.ID, steps int) error {
	for range steps {
		switch r := rng.IntN(10); {
		case r < 6:
			for range 1 + rng.IntN(20) {
				*next += zxid.ID(1 + rng.IntN(2)) // gaps are allowed
				if err := l.Append(mkTxn(*next)); err != nil {
					return err
				}
				h.appended = append(h.appended, *next)
			}
		case r < 9:
			if err := l.Sync(); err != nil {
				return err
			}
			h.synced = len(h.appended)
		default:
			if err := l.Roll(); err != nil {
				return err
			}
			h.synced = len(h.appended)
		}
	}
	for range rng.IntN(30) {
		*next++
		if err := l.Append(mkTxn(*next)); err != nil {
			return err
		}
		h.appended = append(h.appended, *next)
	}
	return nil
}

// TestCrashRecovery crashes random workloads at random moments, with and
// without torn writes, and checks the durability promise after each of
// several restarts.
func TestCrashRecovery(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 30
	}
	var warnings bytes.Buffer // Open's reports of what it repaired
	cfg := testConfig
	cfg.Logger = slog.New(slog.NewTextHandler(&warnings, nil))
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x7a))
			m := vfs.NewMem()
			h := &history{cfg: cfg}
			next := zxid.ID(0)
			for restart := range 3 {
				l, err := txnlog.Open(m, "/d", testConfig)
				mustOK(t, err)
				next = max(next, l.LastZxid())
				mustOK(t, randomWorkload(rng, l, h, &next, 5+rng.IntN(20)))
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
	if n := strings.Count(warnings.String(), "cut torn tail"); n == 0 {
		t.Error("no crash left a torn tail")
	} else {
		t.Logf("%d restarts repaired a torn tail", n)
	}
}

// TestCorruptionIsReported flips a byte in the middle of each record of a
// closed log in turn; reading must stop at that record with ErrCorrupt
// naming its file and offset, never skip it or end early without an error.
func TestCorruptionIsReported(t *testing.T) {
	base := threeFiles(t)
	type rec struct {
		path string
		off  int64
		z    zxid.ID
	}
	var recs []rec
	it, err := txnlog.Read(base, "/d", 0, testConfig)
	mustOK(t, err)
	for {
		tx, err := it.Next()
		if err != nil {
			break
		}
		p, off := it.Position()
		recs = append(recs, rec{p, off, tx.Header.Zxid})
	}
	mustOK(t, it.Close())
	if len(recs) != 30 {
		t.Fatalf("read %d records", len(recs))
	}
	for i, r := range recs {
		for _, at := range []int64{4, 10, 40} { // checksum, length, payload
			m := base.CrashClone(nil)
			data, err := vfs.ReadFile(m, r.path)
			mustOK(t, err)
			data[r.off+at] ^= 0x01
			writeRaw(t, m, "/d", txnlog.FileName(fileStart(r.path)), data)
			got, err := readZxids(t, m, "/d", 0)
			if !errors.Is(err, txnlog.ErrCorrupt) || !slices.Equal(got, seq(1, r.z-1)) {
				t.Fatalf("record %d, byte %d flipped: read %v then %v", i, at, got, err)
			}
			if re := recordErr(t, err); re.File != r.path || re.Offset != r.off {
				t.Errorf("record %d: error at %s:%d, want %s:%d", i, re.File, re.Offset, r.path, r.off)
			}
		}
	}
}

func fileStart(path string) zxid.ID {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			z, _ := txnlog.ParseFileName(path[i+1:])
			return z
		}
	}
	return 0
}

// TestFullDisk fills the disk part way through a batch: the log reports
// ENOSPC, stays poisoned, and a restart finds every synced txn intact.
func TestFullDisk(t *testing.T) {
	for _, space := range []int64{0, 1, 50, 500, 5000, 20000} {
		t.Run(fmt.Sprintf("space=%d", space), func(t *testing.T) {
			m := vfs.NewMem()
			efs := errorfs.Wrap(m)
			l, err := txnlog.Open(efs, "/d", testConfig)
			mustOK(t, err)
			h := &history{}
			appendSync(t, l, 1, 50)
			h.appended, h.synced = seq(1, 50), 50
			efs.LimitSpace(space)
			var failure error
			for z := zxid.ID(51); failure == nil && z < 2000; z++ {
				if failure = l.Append(mkTxn(z)); failure == nil {
					h.appended = append(h.appended, z)
					if z%10 == 0 {
						if failure = l.Sync(); failure == nil {
							h.synced = len(h.appended)
						}
					}
				}
			}
			if !errors.Is(failure, syscall.ENOSPC) {
				t.Fatalf("got %v, want ENOSPC", failure)
			}
			checkPoisoned(t, l, failure)
			efs.LimitSpace(-1) // the disk is freed, but the log stays poisoned
			checkPoisoned(t, l, failure)
			h.check(t, m.CrashClone(nil), "after ENOSPC")
			h.check(t, m.CrashClone(rand.New(rand.NewPCG(uint64(space), 2))), "after ENOSPC, torn")
		})
	}
}

// checkPoisoned checks that every call on l returns the first failure.
func checkPoisoned(t *testing.T, l *txnlog.Log, first error) {
	t.Helper()
	if l.Err() != first {
		t.Errorf("Err() = %v, want %v", l.Err(), first)
	}
	calls := map[string]error{
		"Append":   l.Append(mkTxn(1 << 40)),
		"Sync":     l.Sync(),
		"Roll":     l.Roll(),
		"Truncate": l.Truncate(1),
	}
	for name, err := range calls {
		if err != first {
			t.Errorf("%s on a poisoned log = %v, want %v", name, err, first)
		}
	}
}

// TestSyncFailure makes an fsync fail: the log is poisoned, never retries,
// and a crash afterwards loses nothing that an earlier Sync covered.
func TestSyncFailure(t *testing.T) {
	for _, op := range []errorfs.Op{errorfs.OpSyncData, errorfs.OpSync, errorfs.OpSyncDir} {
		t.Run(op.String(), func(t *testing.T) {
			m := vfs.NewMem()
			efs := errorfs.Wrap(m)
			l, err := txnlog.Open(efs, "/d", testConfig)
			mustOK(t, err)
			h := &history{}
			appendSync(t, l, 1, 10)
			h.appended, h.synced = seq(1, 10), 10
			if op == errorfs.OpSyncDir || op == errorfs.OpSync {
				mustOK(t, l.Roll()) // the next file's first sync is an fsync plus a directory sync
			}
			efs.Add(errorfs.Rule{Ops: op, Times: 1})
			for z := zxid.ID(11); z <= 20; z++ {
				mustOK(t, l.Append(mkTxn(z)))
				h.appended = append(h.appended, z)
			}
			syncsBefore := efs.Count(errorfs.OpAnySync)
			failure := l.Sync()
			if !errors.Is(failure, errorfs.ErrInjected) {
				t.Fatalf("Sync = %v, want the injected failure", failure)
			}
			checkPoisoned(t, l, failure)
			if n := efs.Count(errorfs.OpAnySync) - syncsBefore; n > 2 {
				t.Errorf("%d syncs attempted: a failed sync was retried", n)
			}
			if err := l.Close(); err != failure {
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
	workload := func(fsys vfs.FS, h *history) error {
		l, err := txnlog.Open(fsys, "/d", testConfig)
		if err != nil {
			return err
		}
		next := l.LastZxid()
		for round := range 6 {
			for range 40 {
				next++
				if err := l.Append(mkTxn(next)); err != nil {
					return err
				}
				h.appended = append(h.appended, next)
			}
			if err := l.Sync(); err != nil {
				return err
			}
			h.synced = len(h.appended)
			if round == 2 {
				if err := l.Roll(); err != nil {
					return err
				}
			}
			if round == 4 {
				// If Truncate fails, the txns above next-5 may or may
				// not be gone; those up to it must stay.
				h.synced = len(h.appended) - 5
				if err := l.Truncate(next - 5); err != nil {
					return err
				}
				h.appended = h.appended[:h.synced]
				next -= 5
			}
		}
		return l.Close()
	}
	// Count the operations of a clean run.
	probe := errorfs.Wrap(vfs.NewMem())
	mustOK(t, workload(probe, &history{}))
	total := probe.Count(errorfs.OpAll)
	for n := range total {
		m := vfs.NewMem()
		efs := errorfs.Wrap(m)
		efs.Add(errorfs.Rule{Ops: errorfs.OpAll, After: n, Times: 1})
		h := &history{}
		err := workload(efs, h)
		if err == nil {
			continue // the failed operation was a read whose failure was handled
		}
		h.check(t, m.CrashClone(nil), fmt.Sprintf("operation %d failed (%v)", n, err))
		h.check(t, m.CrashClone(rand.New(rand.NewPCG(uint64(n), 3))), fmt.Sprintf("operation %d failed, torn", n))
	}
}
