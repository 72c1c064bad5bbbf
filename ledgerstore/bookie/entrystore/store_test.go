package entrystore

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"keeper/internal/vfs"
)

// TestAddGetRoundTrip adds entries of many ledgers interleaved, with
// flushes between, and reads every one back from the write cache, from
// the logs, and after a reopen. The logs are small, so many rolls happen.
func TestAddGetRoundTrip(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	rng := rand.New(rand.NewPCG(1, 2))
	m := model{}
	const ledgers, entries = 40, 30
	for entryID := range int64(entries) {
		for l := range int64(ledgers) {
			ledgerID := l*7 + 3
			want := mustAdd(t, s, ledgerID, entryID, entryID-1, 36+rng.IntN(3000))
			m.put(ledgerID, entryID, want)
			mustGet(t, s, ledgerID, entryID, want) // from the write cache
		}
		if entryID%7 == 6 {
			mustFlush(t, s)
		}
	}
	m.check(t, s)
	mustFlush(t, s)
	m.check(t, s)
	if n := len(logFiles(t, e.fs)); n < 10 {
		t.Fatalf("only %d entry logs for ~1.8 MB of 64 KiB logs", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = e.open(t, e.config())
	m.check(t, s)
	if got := len(s.Ledgers()); got != ledgers {
		t.Fatalf("Ledgers() has %d, want %d", got, ledgers)
	}
}

// TestLedgerPlacement checks that ledger L's entries go to Dirs[L mod n]
// and that log ids are unique across directories and never reused.
func TestLedgerPlacement(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	mustAdd(t, s, 2, 0, -1, 100)
	mustAdd(t, s, 5, 0, -1, 100)
	mustFlush(t, s)
	for dir, ledgerID := range []int64{2, 5} {
		logID, _ := splitLocation(mustLocation(t, s, ledgerID, 0))
		want := filepath.Join(testDirs[dir], "current", logFileName(logID))
		if _, err := e.fs.Stat(want); err != nil {
			t.Fatalf("ledger %d: log %s: %v", ledgerID, want, err)
		}
	}
	before := highestLogID(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = e.open(t, e.config())
	mustAdd(t, s, 2, 1, 0, 100)
	mustFlush(t, s)
	if logID, _ := splitLocation(mustLocation(t, s, 2, 1)); logID <= before {
		t.Fatalf("new log id %d not above the previous run's %d", logID, before)
	}
}

func mustLocation(t *testing.T, s *Store, ledgerID, entryID int64) uint64 {
	t.Helper()
	loc, ok, err := lookupLocation(s.db, ledgerID, entryID)
	if err != nil || !ok {
		t.Fatalf("index has no location for ledger %d entry %d (err %v)", ledgerID, entryID, err)
	}
	return loc
}

func highestLogID(t *testing.T, s *Store) int64 {
	t.Helper()
	var m int64 = -1
	for _, u := range s.LogUsage() {
		m = max(m, u.LogID)
	}
	return m
}

// TestHonestAbsence checks that NoSuchLedger and NoSuchEntry are answered
// exactly when nothing was stored, in every place an entry can be.
func TestHonestAbsence(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	mustAbsent(t, s, 1, 0, ErrNoLedger)
	mustAbsent(t, s, 1, LastEntry, ErrNoLedger)
	mustAdd(t, s, 1, 0, -1, 100)
	mustAdd(t, s, 1, 2, -1, 100)
	if err := s.SetMasterKey(9, []byte("key")); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		mustAbsent(t, s, 1, 1, ErrNoEntry)
		mustAbsent(t, s, 1, 3, ErrNoEntry)
		mustAbsent(t, s, 1, -5, ErrNoEntry)
		mustAbsent(t, s, 2, 0, ErrNoLedger)
		mustAbsent(t, s, 9, 0, ErrNoEntry)         // known ledger, no entries
		mustAbsent(t, s, 9, LastEntry, ErrNoEntry) // ditto
	}
	check()
	mustFlush(t, s)
	check()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = e.open(t, e.config())
	check()
}

// TestLastEntry checks the -1 lookup against the write cache, the index
// and both at once.
func TestLastEntry(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	mustAdd(t, s, 4, 0, -1, 100)
	want := mustAdd(t, s, 4, 5, 3, 100)
	mustAdd(t, s, 4, 2, 1, 100)
	mustAdd(t, s, 5, 9, 1, 100) // a neighbour with a higher id
	mustGet(t, s, 4, LastEntry, want)
	mustFlush(t, s)
	mustGet(t, s, 4, LastEntry, want)
	mustAdd(t, s, 4, 3, 2, 100) // lower than the indexed last
	mustGet(t, s, 4, LastEntry, want)
	want = mustAdd(t, s, 4, 7, 5, 100) // higher, only in the cache
	mustGet(t, s, 4, LastEntry, want)
	mustFlush(t, s)
	mustGet(t, s, 4, LastEntry, want)
}

// TestLAC checks the bookie-known LAC: the greatest piggybacked LAC while
// running, the last entry's LAC field after a restart.
func TestLAC(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	if _, err := s.LAC(3); !errors.Is(err, ErrNoLedger) {
		t.Fatalf("LAC of unknown ledger: %v", err)
	}
	if err := s.Fence(3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LAC(3); !errors.Is(err, ErrNoEntry) {
		t.Fatalf("LAC of a ledger without entries: %v", err)
	}
	for i := range int64(10) {
		mustAdd(t, s, 3, i, i-1, 64)
	}
	if lac, err := s.LAC(3); err != nil || lac != 8 {
		t.Fatalf("LAC = %d, %v; want 8", lac, err)
	}
	mustAdd(t, s, 3, 10, 9, 64)
	if lac, _ := s.LAC(3); lac != 9 {
		t.Fatalf("LAC after add = %d, want 9", lac)
	}
	mustFlush(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = e.open(t, e.config())
	if lac, err := s.LAC(3); err != nil || lac != 9 {
		t.Fatalf("LAC on cold start = %d, %v; want 9", lac, err)
	}
	mustAdd(t, s, 3, 11, 10, 64)
	if lac, _ := s.LAC(3); lac != 10 {
		t.Fatalf("LAC after add = %d, want 10", lac)
	}
}

// TestLedgerMetadata checks master key binding, fencing and the explicit
// LAC, and that Flush persists them.
func TestLedgerMetadata(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	key := []byte("0123456789abcdefghij")
	if err := s.SetMasterKey(7, key); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMasterKey(7, key); err != nil {
		t.Fatalf("same key again: %v", err)
	}
	if err := s.SetMasterKey(7, []byte("other")); !errors.Is(err, ErrMasterKeyMismatch) {
		t.Fatalf("other key: %v", err)
	}
	if err := s.SetMasterKey(8, []byte{}); err != nil { // an empty key binds too
		t.Fatal(err)
	}
	if err := s.SetMasterKey(8, []byte("x")); !errors.Is(err, ErrMasterKeyMismatch) {
		t.Fatalf("key after empty key: %v", err)
	}
	if s.IsFenced(7) || s.IsFenced(99) {
		t.Fatal("fenced before Fence")
	}
	if err := s.Fence(7); err != nil {
		t.Fatal(err)
	}
	lacBody := []byte("ledger-lac-digest-bytes")
	if err := s.SetExplicitLAC(7, lacBody); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		if !s.IsFenced(7) || s.IsFenced(8) {
			t.Fatalf("fenced: 7=%v 8=%v", s.IsFenced(7), s.IsFenced(8))
		}
		if body, err := s.ExplicitLAC(7); err != nil || !bytes.Equal(body, lacBody) {
			t.Fatalf("ExplicitLAC = %q, %v", body, err)
		}
		if body, err := s.ExplicitLAC(8); err != nil || body != nil {
			t.Fatalf("ExplicitLAC of ledger without one = %q, %v", body, err)
		}
		if _, err := s.ExplicitLAC(99); !errors.Is(err, ErrNoLedger) {
			t.Fatalf("ExplicitLAC of unknown ledger: %v", err)
		}
		if err := s.SetMasterKey(7, []byte("other")); !errors.Is(err, ErrMasterKeyMismatch) {
			t.Fatalf("other key: %v", err)
		}
		if got := s.Ledgers(); !slices.Equal(got, []int64{7, 8}) {
			t.Fatalf("Ledgers() = %v", got)
		}
	}
	check(s)
	mustFlush(t, s)
	crashed := e.crash(nil)
	check(crashed.open(t, crashed.config()))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(e.open(t, e.config()))
}

// TestMetadataLostWithoutFlush shows the journal's part: changes made
// after the last Flush are gone after a crash until replay redoes them.
func TestMetadataLostWithoutFlush(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	if err := s.Fence(4); err != nil {
		t.Fatal(err)
	}
	c := e.crash(nil)
	s2 := c.open(t, c.config())
	if s2.HasLedger(4) || s2.IsFenced(4) {
		t.Fatal("unflushed fence survived a crash")
	}
	if err := s2.Fence(4); err != nil { // journal replay
		t.Fatal(err)
	}
	if !s2.IsFenced(4) {
		t.Fatal("replayed fence not applied")
	}
}

// TestCacheFull fills both write cache halves and checks the throttle.
func TestCacheFull(t *testing.T) {
	e := newEnv()
	cfg := e.config()
	cfg.WriteCacheBytes = 64 << 10
	s := e.open(t, cfg)
	var added []int64
	var err error
	for i := int64(0); ; i++ {
		if err = s.Add(1, i, makeEntry(1, i, -1, 1000)); err != nil {
			break
		}
		added = append(added, i)
		if i == 40 && !s.NeedsFlush() {
			t.Fatal("NeedsFlush false with the first half full")
		}
	}
	if !errors.Is(err, ErrCacheFull) {
		t.Fatalf("Add = %v, want ErrCacheFull", err)
	}
	if len(added) < 60 || len(added) > 66 {
		t.Fatalf("%d entries of 1000 bytes fit in 64 KiB", len(added))
	}
	mustFlush(t, s)
	if s.NeedsFlush() {
		t.Fatal("NeedsFlush after Flush")
	}
	for _, id := range added {
		mustGet(t, s, 1, id, makeEntry(1, id, -1, 1000))
	}
	mustAdd(t, s, 1, int64(len(added)), -1, 1000)
	// An entry larger than a half still goes into an empty half.
	big := mustAdd(t, s, 2, 0, -1, 100<<10)
	mustFlush(t, s)
	mustGet(t, s, 2, 0, big)
}

// TestAddRejects checks Add's argument checks.
func TestAddRejects(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	for name, tc := range map[string]struct {
		ledgerID, entryID int64
		entry             []byte
	}{
		"short":           {1, 0, make([]byte, 23)},
		"ledger mismatch": {2, 0, makeEntry(1, 0, -1, 40)},
		"entry mismatch":  {1, 1, makeEntry(1, 0, -1, 40)},
		"negative entry":  {1, -1, makeEntry(1, -1, -1, 40)},
		"too big":         {1, 0, make([]byte, MaxEntryBytes+1)},
	} {
		if err := s.Add(tc.ledgerID, tc.entryID, tc.entry); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%s: Add = %v, want ErrBadEntry", name, err)
		}
	}
}

// TestAddEntry checks the bookie's one-step add: the key bound on first
// contact (and reported, once), checked afterwards, the fence refusing
// normal adds but not recovery adds, and NeedsFlush reported.
func TestAddEntry(t *testing.T) {
	e := newEnv()
	cfg := e.config()
	cfg.WriteCacheBytes = 64 << 10
	s := e.open(t, cfg)
	key := []byte("0123456789abcdefghij")
	out, err := s.AddEntry(3, 0, makeEntry(3, 0, -1, 100), key, false)
	if err != nil || !out.KeyBound || out.NeedsFlush {
		t.Fatalf("first add = %+v, %v; want the key bound", out, err)
	}
	out, err = s.AddEntry(3, 1, makeEntry(3, 1, 0, 100), key, false)
	if err != nil || out.KeyBound {
		t.Fatalf("second add = %+v, %v; want the key already bound", out, err)
	}
	if _, err := s.AddEntry(3, 2, makeEntry(3, 2, 1, 100), []byte("other"), false); !errors.Is(err, ErrMasterKeyMismatch) {
		t.Fatalf("add with another key: %v", err)
	}
	if _, err := s.AddEntry(3, 2, makeEntry(3, 1, 1, 100), key, false); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("add of an entry naming another id: %v", err)
	}
	if _, err := s.AddEntry(-1, 0, makeEntry(-1, 0, -1, 100), key, false); err == nil {
		t.Fatal("add to a negative ledger id accepted")
	}
	mustGet(t, s, 3, 1, makeEntry(3, 1, 0, 100))
	if lac, err := s.LAC(3); err != nil || lac != 0 {
		t.Fatalf("LAC = %d, %v; want 0", lac, err)
	}

	// A fence before any entry: the add binds the key and is refused.
	if err := s.Fence(4); err != nil {
		t.Fatal(err)
	}
	out, err = s.AddEntry(4, 0, makeEntry(4, 0, -1, 100), key, false)
	if !errors.Is(err, ErrFenced) || !out.KeyBound {
		t.Fatalf("add to a fenced ledger = %+v, %v; want ErrFenced with the key bound", out, err)
	}
	if _, err := s.Get(4, 0); !errors.Is(err, ErrNoEntry) {
		t.Fatalf("refused entry readable: %v", err)
	}
	if _, err := s.AddEntry(4, 0, makeEntry(4, 0, -1, 100), []byte("other"), true); !errors.Is(err, ErrMasterKeyMismatch) {
		t.Fatalf("recovery add with another key: %v", err)
	}
	if out, err := s.AddEntry(4, 0, makeEntry(4, 0, -1, 100), key, true); err != nil || out.KeyBound {
		t.Fatalf("recovery add to a fenced ledger = %+v, %v", out, err)
	}
	mustGet(t, s, 4, 0, makeEntry(4, 0, -1, 100))

	// Fill the first half: NeedsFlush is reported with the add.
	for i := int64(2); ; i++ {
		out, err := s.AddEntry(3, i, makeEntry(3, i, i-1, 1000), key, false)
		if err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
		if out.NeedsFlush {
			if !s.NeedsFlush() {
				t.Fatal("AddEntry reported NeedsFlush, NeedsFlush is false")
			}
			break
		}
	}
}

// TestReplaceEntry checks that adding an entry again replaces it, also
// when an older copy sits in the read cache.
func TestReplaceEntry(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	for i := range int64(5) {
		mustAdd(t, s, 1, i, -1, 200)
	}
	mustFlush(t, s)
	mustGet(t, s, 1, 0, makeEntry(1, 0, -1, 200)) // read-ahead caches 1..4
	newer := makeEntry(1, 3, 2, 300)              // re-stamped LAC, new size
	if err := s.Add(1, 3, newer); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, 1, 3, newer)
	mustFlush(t, s)
	mustGet(t, s, 1, 3, newer)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = e.open(t, e.config())
	mustGet(t, s, 1, 3, newer)
}

// TestConfigValidate lists configurations Open must refuse.
func TestConfigValidate(t *testing.T) {
	e := newEnv()
	good := e.config()
	for name, mod := range map[string]func(*Config){
		"no FS":           func(c *Config) { c.FS = nil },
		"no dirs":         func(c *Config) { c.Dirs = nil },
		"repeated dir":    func(c *Config) { c.Dirs = []string{"/a", "/a"} },
		"no IndexFS":      func(c *Config) { c.IndexFS = nil },
		"huge logs":       func(c *Config) { c.EntryLogMaxBytes = 2 << 30 },
		"tiny logs":       func(c *Config) { c.EntryLogMaxBytes = 100 },
		"negative wcache": func(c *Config) { c.WriteCacheBytes = -1 },
	} {
		cfg := good
		mod(&cfg)
		if _, err := Open(cfg); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
	cfg := good
	cfg.FS = vfs.Default
	cfg.IndexFS = nil
	if err := cfg.Validate(); err != nil {
		t.Errorf("vfs.Default without IndexFS: %v", err)
	}
}

// TestUsage checks the disk usage report, with statfs and with an override.
func TestUsage(t *testing.T) {
	e := newEnv()
	cfg := e.config()
	cfg.DiskUsage = func(dir string) (DirUsage, error) {
		return DirUsage{UsedBytes: 96, TotalBytes: 100}, nil
	}
	s := e.open(t, cfg)
	u, err := s.Usage()
	if err != nil || len(u) != 2 || u[1].Dir != testDirs[1] || u[0].Fraction() != 0.96 {
		t.Fatalf("Usage = %+v, %v", u, err)
	}
	real, err := statfsUsage(t.TempDir())
	if err != nil {
		t.Skipf("statfs: %v", err)
	}
	if real.TotalBytes == 0 || real.UsedBytes > real.TotalBytes {
		t.Fatalf("statfs usage %+v", real)
	}
}

// TestClosed checks that calls after Close fail with ErrClosed.
func TestClosed(t *testing.T) {
	e := newEnv()
	s := e.open(t, e.config())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(1, 0, makeEntry(1, 0, -1, 40)); !errors.Is(err, ErrClosed) {
		t.Errorf("Add: %v", err)
	}
	if _, err := s.Get(1, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Get: %v", err)
	}
	if err := s.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestConcurrentAddFlush races Adds that fill the write cache against
// Flushes that often have only ledger records to write: no entry may be
// lost when a half fills while a flush holds the other, empty one.
func TestConcurrentAddFlush(t *testing.T) {
	e := newEnv()
	cfg := e.config()
	cfg.WriteCacheBytes = 16 << 10
	s := e.open(t, cfg)
	const n = 3000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.SetExplicitLAC(1_000_000, []byte{byte(i)}); err != nil {
				t.Error(err)
				return
			}
			if err := s.Flush(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for i := range int64(n) {
		b := makeEntry(i%5, i, i-1, 100)
		for {
			err := s.Add(i%5, i, b)
			if err == nil {
				break
			}
			if !errors.Is(err, ErrCacheFull) {
				t.Fatal(err)
			}
			runtime.Gosched()
		}
	}
	close(stop)
	wg.Wait()
	mustFlush(t, s)
	for i := range int64(n) {
		mustGet(t, s, i%5, i, makeEntry(i%5, i, i-1, 100))
	}
}
