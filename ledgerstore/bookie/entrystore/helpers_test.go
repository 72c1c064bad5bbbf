package entrystore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"keeper/internal/vfs"
)

// makeEntry returns an entry in stored form (docs/bookkeeper-protocol.md §6.4) with a CRC32C
// digest and a payload derived from the ids, size bytes long in all.
func makeEntry(ledgerID, entryID, lac int64, size int) []byte {
	size = max(size, 36)
	b := make([]byte, 0, size)
	b = binary.BigEndian.AppendUint64(b, uint64(ledgerID))
	b = binary.BigEndian.AppendUint64(b, uint64(entryID))
	b = binary.BigEndian.AppendUint64(b, uint64(lac))
	b = binary.BigEndian.AppendUint64(b, uint64(size))
	payload := make([]byte, size-36)
	r := rand.New(rand.NewPCG(uint64(ledgerID), uint64(entryID)))
	for i := range payload {
		payload[i] = byte(r.Uint32())
	}
	digest := crc32.Update(crc32.Checksum(b, castagnoli), castagnoli, payload)
	b = binary.BigEndian.AppendUint32(b, digest)
	return append(b, payload...)
}

// env is a pair of crashable filesystems: keeper's for entry logs and
// pebble's for the index. crash clones both at the same moment.
type env struct {
	fs  *vfs.MemFS
	pfs *pvfs.MemFS
}

func newEnv() *env { return &env{fs: vfs.NewMem(), pfs: pvfs.NewCrashableMem()} }

var testDirs = []string{"/bk/ledgers0", "/bk/ledgers1"}

// config is a small store: two ledger directories, 64 KiB logs.
func (e *env) config() Config {
	return Config{
		FS:               e.fs,
		IndexFS:          e.pfs,
		Dirs:             testDirs,
		IndexDir:         "/bk/index",
		WriteCacheBytes:  1 << 20,
		ReadCacheBytes:   1 << 20,
		EntryLogMaxBytes: 64 << 10,
	}
}

func (e *env) open(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// crash returns what a power loss now would leave: rng nil keeps exactly
// the synced state; otherwise some unsynced writes survive too.
func (e *env) crash(rng *rand.Rand) *env {
	pcfg := pvfs.CrashCloneCfg{}
	if rng != nil {
		pcfg = pvfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(rng.Uint64(), 0))}
	}
	return &env{fs: e.fs.CrashClone(rng), pfs: e.pfs.CrashClone(pcfg)}
}

// logFiles returns the paths of the entry logs under testDirs, sorted.
func logFiles(t testing.TB, fsys vfs.FS) []string {
	t.Helper()
	var out []string
	for _, d := range testDirs {
		cur := filepath.Join(d, "current")
		names, err := fsys.List(cur)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a directory the test does not use
		}
		if err != nil {
			t.Fatalf("list %s: %v", cur, err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, ".log") {
				out = append(out, filepath.Join(cur, n))
			}
		}
	}
	return out
}

// logBytes sums the sizes of the entry log files.
func logBytes(t testing.TB, fsys vfs.FS) int64 {
	t.Helper()
	var total int64
	for _, p := range logFiles(t, fsys) {
		info, err := fsys.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		total += info.Size()
	}
	return total
}

// mustAdd adds an entry and returns it.
func mustAdd(t testing.TB, s *Store, ledgerID, entryID, lac int64, size int) []byte {
	t.Helper()
	e := makeEntry(ledgerID, entryID, lac, size)
	if err := s.Add(ledgerID, entryID, e); err != nil {
		t.Fatalf("Add(%d, %d): %v", ledgerID, entryID, err)
	}
	return e
}

// mustGet checks that Get returns want byte for byte.
func mustGet(t testing.TB, s *Store, ledgerID, entryID int64, want []byte) {
	t.Helper()
	got, err := s.Get(ledgerID, entryID)
	if err != nil {
		t.Fatalf("Get(%d, %d): %v", ledgerID, entryID, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%d, %d): got %d bytes %x..., want %d bytes %x...",
			ledgerID, entryID, len(got), got[:min(40, len(got))], len(want), want[:min(40, len(want))])
	}
}

// mustAbsent checks that Get answers exactly sentinel.
func mustAbsent(t testing.TB, s *Store, ledgerID, entryID int64, sentinel error) {
	t.Helper()
	_, err := s.Get(ledgerID, entryID)
	if !errors.Is(err, sentinel) {
		t.Fatalf("Get(%d, %d) = %v, want %v", ledgerID, entryID, err, sentinel)
	}
}

func mustFlush(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// model is what a store should hold: ledger -> entry -> bytes.
type model map[int64]map[int64][]byte

func (m model) put(ledgerID, entryID int64, e []byte) {
	if m[ledgerID] == nil {
		m[ledgerID] = make(map[int64][]byte)
	}
	m[ledgerID][entryID] = e
}

// check verifies every entry of m reads back byte for byte.
func (m model) check(t testing.TB, s *Store) {
	t.Helper()
	for l, entries := range m {
		for e, want := range entries {
			mustGet(t, s, l, e, want)
		}
	}
}
