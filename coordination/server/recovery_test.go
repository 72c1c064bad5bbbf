package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// storedHistory writes a standalone server's data directory into a MemFS,
// file by file, as the server writes it: snapshot.0 first, then txn K
// (zxid K) creates /nK, and the log rolls where a snapshot is taken.
type storedHistory struct {
	t   *testing.T
	mem *vfs.MemFS
	cfg StorageConfig
	log *txnlog.Log
}

func newStoredHistory(t *testing.T) *storedHistory {
	t.Helper()
	mem := vfs.NewMem()
	h := &storedHistory{t: t, mem: mem, cfg: StorageConfig{FS: mem, DataDir: durableDataDir, PreAllocSizeBytes: 64 << 10}}
	if err := vfs.MkdirAllSync(mem, durableSnapDir, 0o755); err != nil {
		t.Fatal(err)
	}
	lg, err := txnlog.Open(mem, durableDataDir, txnlogConfig(&h.cfg, truncMaxRecord, nil))
	if err != nil {
		t.Fatal(err)
	}
	h.log = lg
	h.snapshot(0, 0)
	return h
}

func historyTxn(k uint32) *txn.Txn {
	return &txn.Txn{
		Header: txn.Header{ClientID: 1, Cxid: int32(k), Zxid: zxid.ID(k), Time: 1, Type: zkproto.OpCreate},
		Record: &txn.Create{Path: fmt.Sprintf("/n%d", k), Data: []byte("x"), ACL: zkproto.OpenACLUnsafe, ParentCversion: -1},
	}
}

// txns logs txns from..to, in a new log file if roll.
func (h *storedHistory) txns(from, to uint32, roll bool) {
	h.t.Helper()
	if roll {
		if err := h.log.Roll(); err != nil {
			h.t.Fatal(err)
		}
	}
	for k := from; k <= to; k++ {
		if err := h.log.Append(historyTxn(k)); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := h.log.Sync(); err != nil {
		h.t.Fatal(err)
	}
}

// snapshot writes snapshot.<k> holding txns 1..seen and a digest record at
// seen: a fuzzy snapshot when seen > k, its walk having met later txns.
func (h *storedHistory) snapshot(k, seen uint32) {
	h.t.Helper()
	tree := datatree.New()
	for i := uint32(1); i <= seen; i++ {
		tree.Apply(historyTxn(i))
	}
	d := &snap.Digest{Zxid: zxid.ID(seen), Version: datatree.DigestVersion, TreeDigest: tree.Digest()}
	if _, err := snap.Write(h.mem, durableSnapDir, zxid.ID(k), nil, tree, d, snap.Options{}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *storedHistory) close() {
	h.t.Helper()
	if err := h.log.Close(); err != nil {
		h.t.Fatal(err)
	}
}

// standardHistory is the directory every row of the recovery table starts
// from: snapshot.0, log.1 (txns 1..10), snapshot.a, log.b (11..20),
// snapshot.14 (fuzzy: holds 21..23 too when fuzzy), log.15 (21..25),
// log.1a (26..30).
func standardHistory(t *testing.T, fuzzy bool) *storedHistory {
	h := newStoredHistory(t)
	h.txns(1, 10, false)
	h.snapshot(10, 10)
	h.txns(11, 20, true)
	seen := uint32(20)
	if fuzzy {
		seen = 23
	}
	h.snapshot(20, seen)
	h.txns(21, 25, true)
	h.txns(26, 30, true)
	h.close()
	return h
}

func historyPath(name string) string { return filepath.Join(durableSnapDir, name) }

func (h *storedHistory) remove(names ...string) {
	h.t.Helper()
	for _, name := range names {
		if err := h.mem.Remove(historyPath(name)); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *storedHistory) size(name string) int64 {
	h.t.Helper()
	fi, err := h.mem.Stat(historyPath(name))
	if err != nil {
		h.t.Fatal(err)
	}
	return fi.Size()
}

// flipBytes inverts n bytes from off (from the end when off < 0).
func (h *storedHistory) flipBytes(name string, off int64, n int) {
	h.t.Helper()
	if off < 0 {
		off += h.size(name)
	}
	for i := range int64(n) {
		flipBit(h.t, h.mem, historyPath(name), off+i)
	}
}

// recordAt returns where record i of a log file starts (from the end when
// i < 0), and where its data ends.
func (h *storedHistory) recordAt(name string, i int) (start, end int64) {
	h.t.Helper()
	offs, end := recordOffsets(h.t, h.mem, historyPath(name))
	if i < 0 {
		i += len(offs)
	}
	return offs[i], end
}

// The ends of a plain snapshot written with a digest record, counted from
// the end of the file: seal 2, the digest record before it, seal 1 before
// that.
const (
	snapSealBytes     = 13
	snapDigestFromEnd = snapSealBytes + 20
)

// recoveryCase is a row of the start-up recovery table, also in
// docs/storage-recovery.md.
type recoveryCase struct {
	name   string
	fuzzy  bool // snapshot.14 is fuzzy
	damage func(h *storedHistory)
	// keep is the last txn the server must start with (every /nK up to it
	// and none after), when refuse is empty.
	keep uint32
	// logged is in the server's log when it starts.
	logged string
	// refuse, when not empty, are in the error that refuses the start.
	refuse []string
}

var recoveryCases = []recoveryCase{
	{name: "nothing damaged", keep: 30},
	// Snapshots.
	{name: "newest snapshot: header", damage: func(h *storedHistory) { h.flipBytes("snapshot.14", 1, 1) },
		keep: 30, logged: "skipped unusable snapshot"},
	{name: "newest snapshot: 4 bytes of the body", damage: func(h *storedHistory) { h.flipBytes("snapshot.14", h.size("snapshot.14")/2, 4) },
		keep: 30, logged: "skipped unusable snapshot"},
	{name: "newest snapshot: digest record", damage: func(h *storedHistory) { h.flipBytes("snapshot.14", -snapDigestFromEnd+12, 1) },
		keep: 30, logged: "skipped unusable snapshot"},
	{name: "newest snapshot: seal", damage: func(h *storedHistory) { h.flipBytes("snapshot.14", -1, 1) },
		keep: 30, logged: "skipped unusable snapshot"},
	{name: "newest snapshot damaged, older one's log gone", damage: func(h *storedHistory) {
		h.remove("log.b", "log.15", "log.1a")
		h.flipBytes("snapshot.14", h.size("snapshot.14")/2, 4)
	}, refuse: []string{"snapshot.14", "/data/version-2/snapshot.a", "reaches only zxid 0xa", "txns up to 0x14 are missing"}},
	{name: "only snapshot: 4 bytes of the body, no log", damage: func(h *storedHistory) {
		h.remove("snapshot.0", "snapshot.a", "log.1", "log.b", "log.15", "log.1a")
		h.flipBytes("snapshot.14", h.size("snapshot.14")/2, 4)
	}, refuse: []string{"no usable snapshot", "/data/version-2/snapshot.14", "no log", "txns up to 0x14 are missing"}},
	{name: "every snapshot damaged, log from the first txn", damage: func(h *storedHistory) {
		for _, name := range []string{"snapshot.0", "snapshot.a", "snapshot.14"} {
			h.flipBytes(name, h.size(name)/2, 1)
		}
	}, keep: 30, logged: "skipped unusable snapshot"},
	{name: "every snapshot damaged, the log purged before the newest", damage: func(h *storedHistory) {
		h.remove("snapshot.0", "snapshot.a", "log.1", "log.b")
		h.flipBytes("snapshot.14", h.size("snapshot.14")/2, 4)
	}, refuse: []string{"no usable snapshot", "log begins at zxid 0x15", "/data/version-2/log.15", "missing"}},
	// Logs.
	{name: "log header", damage: func(h *storedHistory) { h.flipBytes("log.15", 1, 1) },
		refuse: []string{"/data/version-2/log.15 at offset 0"}},
	{name: "middle of the log", damage: func(h *storedHistory) {
		start, _ := h.recordAt("log.15", 2)
		h.flipBytes("log.15", start+12+txnlogPayloadPathOffset, 1)
	}, refuse: []string{"corrupt log", "/data/version-2/log.15 at offset"}},
	{name: "last record of the log, whole", damage: func(h *storedHistory) {
		start, _ := h.recordAt("log.1a", -1)
		h.flipBytes("log.1a", start+12+txnlogPayloadPathOffset, 1)
	}, refuse: []string{"corrupt log", "/data/version-2/log.1a at offset"}},
	{name: "torn tail at the very end of the log", damage: func(h *storedHistory) {
		_, end := h.recordAt("log.1a", -1)
		torn := binary.BigEndian.AppendUint64(nil, 0x1234_5678)
		torn = binary.BigEndian.AppendUint32(torn, 40)
		patchFile(h.t, h.mem, historyPath("log.1a"), end, append(torn, 1, 2, 3))
	}, keep: 30, logged: "truncated a torn record"},
	// Missing files.
	{name: "every snapshot missing, log from the first txn", damage: func(h *storedHistory) {
		h.remove("snapshot.0", "snapshot.a", "snapshot.14")
	}, keep: 30},
	{name: "every snapshot missing, log purged before the newest", damage: func(h *storedHistory) {
		h.remove("snapshot.0", "snapshot.a", "snapshot.14", "log.1", "log.b")
	}, refuse: []string{"no snapshot in /data/version-2", "log begins at zxid 0x15", "missing"}},
	{name: "a log file missing after the newest snapshot", damage: func(h *storedHistory) { h.remove("log.15") },
		refuse: []string{"txns missing from the log: 0x1a follows 0x14", "/data/version-2/log.1a at offset 16"}},
	{name: "the logs after a fuzzy snapshot missing", fuzzy: true, damage: func(h *storedHistory) { h.remove("log.15", "log.1a") },
		refuse: []string{"log ends at 0x14, before 0x17 where the snapshot's digest was taken"}},
	{name: "the logs after an exact snapshot missing", damage: func(h *storedHistory) { h.remove("log.15", "log.1a") },
		keep: 20},
	{name: "snapshots and logs missing, epoch files left", damage: func(h *storedHistory) {
		h.remove("snapshot.0", "snapshot.a", "snapshot.14", "log.1", "log.b", "log.15", "log.1a")
		for _, name := range []string{acceptedEpochFile, currentEpochFile} {
			if err := writeEpoch(h.mem, durableSnapDir, name, 3); err != nil {
				h.t.Fatal(err)
			}
		}
	}, refuse: []string{"/data/version-2/acceptedEpoch and /data/version-2/currentEpoch", "took part in an ensemble"}},
	{name: "everything missing: a fresh directory", damage: func(h *storedHistory) {
		h.remove("snapshot.0", "snapshot.a", "snapshot.14", "log.1", "log.b", "log.15", "log.1a")
	}, keep: 0, logged: "wrote the first snapshot"},
}

// TestStartUpRecovery damages a data directory in each way of the table
// (docs/storage-recovery.md has the same one) and starts a server on it:
// it starts with every txn the files account for, repairs only a torn
// tail, and otherwise refuses, saying which files and what to run.
func TestStartUpRecovery(t *testing.T) {
	for _, tc := range recoveryCases {
		t.Run(tc.name, func(t *testing.T) {
			h := standardHistory(t, tc.fuzzy)
			if tc.damage != nil {
				tc.damage(h)
			}
			var logs logBuffer
			s, err := startDurable(t, durableConfig(h.mem, logTo(&logs)))
			if len(tc.refuse) > 0 {
				if err == nil {
					t.Fatalf("started with %d nodes, want a refusal", len(inspectImage(t, s).Nodes))
				}
				if !errors.Is(err, ErrUnaccounted) {
					t.Fatalf("start: %v, want ErrUnaccounted", err)
				}
				t.Log(err)
				for _, want := range append(tc.refuse, "keeper tool recover /data") {
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("the refusal does not say %q:\n%v", want, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			checkKept(t, s, tc.keep)
			if !strings.Contains(logs.String(), tc.logged) {
				t.Fatalf("the log does not say %q:\n%s", tc.logged, logs.String())
			}
		})
	}
}

// checkKept checks that s holds /n1../nK and no later node, at zxid K.
func checkKept(t *testing.T, s *Server, k uint32) {
	t.Helper()
	img := inspectImage(t, s)
	if img.LastZxid != zxid.ID(k) {
		t.Fatalf("started at zxid %s, want %s", img.LastZxid, zxid.ID(k))
	}
	for i := uint32(1); i <= 30; i++ {
		if _, ok := img.Nodes[fmt.Sprintf("/n%d", i)]; ok != (i <= k) {
			t.Fatalf("/n%d present: %v, want the txns up to %d", i, ok, k)
		}
	}
}

// TestOnlySnapshotDamagedRefusesToStart is the reported case: a data
// directory whose only snapshot is damaged and no log. The server
// used to skip the snapshot, start with an empty tree and take writes.
func TestOnlySnapshotDamagedRefusesToStart(t *testing.T) {
	mem, before := snapshotHistory(t)
	infos := snapshots(t, mem)
	files, err := txnlog.Files(mem, durableDataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := mem.Remove(f.Path); err != nil {
			t.Fatal(err)
		}
	}
	for _, info := range infos[1:] {
		if err := mem.Remove(filepath.Join(durableSnapDir, info.Name)); err != nil {
			t.Fatal(err)
		}
	}
	only := filepath.Join(durableSnapDir, infos[0].Name)
	// One flipped bit: Adler-32 sees every single-bit change, while the
	// low bits of four bytes in a row can flip unseen.
	flipBit(t, mem, only, infos[0].Size/2)
	s, err := startDurable(t, durableConfig(mem))
	if err == nil {
		t.Fatalf("started with %d of %d nodes from a damaged snapshot and no log",
			len(inspectImage(t, s).Nodes), len(before.Nodes))
	}
	if !errors.Is(err, ErrUnaccounted) || !strings.Contains(err.Error(), only) {
		t.Fatalf("start: %v, want a refusal naming %s", err, only)
	}
}

// TestTrustEmptySnapshot runs every row of the recovery table with
// snapshot.trust.empty: what start-up accounts for starts as before; what it
// would refuse starts with an empty tree, with every snapshot and log file
// moved into a set-aside directory (the epoch files stay) and a new
// snapshot.0, so that a restart without the setting starts too.
func TestTrustEmptySnapshot(t *testing.T) {
	trust := func(c *Config) { c.Storage.TrustEmptySnapshot = true }
	for _, tc := range recoveryCases {
		t.Run(tc.name, func(t *testing.T) {
			h := standardHistory(t, tc.fuzzy)
			if tc.damage != nil {
				tc.damage(h)
			}
			files := dirNames(t, h.mem, durableSnapDir)
			var logs logBuffer
			s := mustStartDurable(t, durableConfig(h.mem, logTo(&logs), trust))
			if len(tc.refuse) == 0 {
				checkKept(t, s, tc.keep)
				if strings.Contains(logs.String(), "starting with an empty tree") {
					t.Fatalf("data set aside though start-up accounts for it:\n%s", logs.String())
				}
				return
			}
			checkKept(t, s, 0)
			if !strings.Contains(logs.String(), "starting with an empty tree") || !strings.Contains(logs.String(), tc.refuse[0]) {
				t.Fatalf("the log does not say why the tree is empty:\n%s", logs.String())
			}
			var aside []string
			for _, name := range dirNames(t, h.mem, durableDataDir) {
				if strings.HasPrefix(name, "set-aside-") {
					aside = append(aside, name)
				}
			}
			var moved, kept []string
			for _, name := range files {
				if name == acceptedEpochFile || name == currentEpochFile {
					kept = append(kept, name)
				} else {
					moved = append(moved, name)
				}
			}
			switch {
			case len(moved) == 0 && len(aside) != 0:
				t.Fatalf("set aside %v with nothing to set aside", aside)
			case len(moved) > 0 && (len(aside) != 1 || !slicesEqual(dirNames(t, h.mem, filepath.Join(durableDataDir, aside[0])), moved)):
				t.Fatalf("set aside %v, want one directory with %v", aside, moved)
			}
			if got := dirNames(t, h.mem, durableSnapDir); !slicesEqual(got, append(kept, "snapshot.0")) {
				t.Fatalf("version-2 holds %v, want the epoch files %v and snapshot.0", got, kept)
			}
			acks := writeSequentially(t, zkOpen(t, s), "t", 3)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustStartDurable(t, durableConfig(h.mem))
			checkAcked(t, s, acks)
		})
	}
}

// dirNames lists dir's entries, files and directories, sorted.
func dirNames(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func slicesEqual(a, b []string) bool {
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestConfigFromZooStorage: the zoo.cfg keys that decide how the data is
// kept reach StorageConfig, under both spellings.
func TestConfigFromZooStorage(t *testing.T) {
	for _, tt := range []struct {
		cfg                string
		trustEmpty, noSync bool
	}{
		{"", false, false},
		{"snapshot.trust.empty=true\n", true, false},
		{"snapshot.trust.empty=false\n", false, false},
		{"zookeeper.snapshot.trust.empty=true\n", true, false},
		{"forceSync=yes\n", false, false},
		{"forceSync=no\n", false, true},
		{"zookeeper.forceSync=no\n", false, true},
	} {
		zc, _, err := zoocfg.Parse(strings.NewReader("dataDir=/tmp/zk\n" + tt.cfg))
		if err != nil {
			t.Fatal(err)
		}
		st := ConfigFromZoo(zc, nil).Storage
		if st.TrustEmptySnapshot != tt.trustEmpty || st.NoSync != tt.noSync {
			t.Errorf("%q: TrustEmptySnapshot %v, NoSync %v; want %v, %v", tt.cfg, st.TrustEmptySnapshot, st.NoSync, tt.trustEmpty, tt.noSync)
		}
	}
}
