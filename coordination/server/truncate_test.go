package server

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// truncDisk is a quorum member's data directory on the real filesystem:
// txns 1.1, 1.2, ... each create /nK.
type truncDisk struct {
	t   *testing.T
	cfg StorageConfig
	log *txnlog.Log
}

const truncMaxRecord = 1 << 20

func newTruncDisk(t *testing.T) *truncDisk {
	d := &truncDisk{t: t, cfg: StorageConfig{FS: vfs.Default, DataDir: t.TempDir()}}
	for _, dir := range []string{d.cfg.snapDir(), filepath.Join(d.cfg.logDir(), txnlog.DirName)} {
		if err := vfs.MkdirAllSync(d.cfg.FS, dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lg, err := txnlog.Open(d.cfg.FS, d.cfg.logDir(), txnlogConfig(&d.cfg, truncMaxRecord, nil))
	if err != nil {
		t.Fatal(err)
	}
	d.log = lg
	t.Cleanup(func() { _ = d.log.Close() })
	return d
}

func truncTxn(k uint32) *txn.Txn {
	return &txn.Txn{
		Header: txn.Header{ClientID: 1, Cxid: int32(k), Zxid: zxid.Make(1, k), Time: 1, Type: zkproto.OpCreate},
		Record: &txn.Create{Path: fmt.Sprintf("/n%d", k), Data: []byte("x"), ACL: zkproto.OpenACLUnsafe, ParentCversion: -1},
	}
}

// logTxns appends txns from..to, starting a new log file first if roll.
func (d *truncDisk) logTxns(from, to uint32, roll bool) {
	if roll {
		if err := d.log.Roll(); err != nil {
			d.t.Fatal(err)
		}
	}
	for k := from; k <= to; k++ {
		if err := d.log.Append(truncTxn(k)); err != nil {
			d.t.Fatal(err)
		}
	}
	if err := d.log.Sync(); err != nil {
		d.t.Fatal(err)
	}
}

// snapshot writes a snapshot of the tree after txns 1..k; its digest
// record is taken at 1.digestAt (k for an exact snapshot, more for a fuzzy
// one whose walk saw later txns).
func (d *truncDisk) snapshot(k, digestAt uint32) {
	tree := datatree.New()
	for i := uint32(1); i <= k; i++ {
		tree.Apply(truncTxn(i))
	}
	dg := &snap.Digest{Zxid: zxid.Make(1, digestAt), Version: datatree.DigestVersion, TreeDigest: tree.Digest()}
	if _, err := snap.Write(d.cfg.FS, d.cfg.snapDir(), zxid.Make(1, k), nil, tree, dg, snap.Options{}); err != nil {
		d.t.Fatal(err)
	}
}

func (d *truncDisk) diskLog() *MemberLog {
	return &MemberLog{storage: &d.cfg, log: d.log, maxRecord: truncMaxRecord, coreCfg: zkcore.DefaultConfig(),
		logger: slog.New(slog.DiscardHandler), now: func() zkcore.Now { return zkcore.Now{} }, purgeMu: new(sync.Mutex)}
}

// snapshots lists the snapshot zxids, newest first, as "1.K".
func (d *truncDisk) snapshots() []string {
	infos, err := snap.List(d.cfg.FS, d.cfg.snapDir())
	if err != nil {
		d.t.Fatal(err)
	}
	var out []string
	for _, in := range infos {
		out = append(out, fmt.Sprintf("%d.%d", in.Zxid.Epoch(), in.Zxid.Counter()))
	}
	return out
}

// checkState reloads and checks the tree holds exactly /n1../nK.
func checkTreeAt(t *testing.T, dl *MemberLog, k uint32) {
	t.Helper()
	tree, _, err := dl.Reload()
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got := tree.LastZxid(); got != zxid.Make(1, k) {
		t.Fatalf("state at %s, want %s", got, zxid.Make(1, k))
	}
	for i := uint32(1); i <= k+4; i++ {
		if has := tree.Node(fmt.Sprintf("/n%d", i)) != nil; has != (i <= k) {
			t.Fatalf("/n%d present %v at state %d", i, has, k)
		}
	}
}

// TestTruncateBelowSnapshot: a TRUNC below the newest snapshot must leave
// the state at exactly the zxid asked for. The snapshots above it go and
// the state comes from an older snapshot (or the empty tree) and the log;
// when the disk cannot give that state, nothing changes and Truncate says
// so (ZOOKEEPER-1549: ZooKeeper reloads the newer snapshot and keeps txns
// the leader never had).
func TestTruncateBelowSnapshot(t *testing.T) {
	tests := []struct {
		name  string
		setup func(d *truncDisk)
		to    uint32
		want  []string // snapshots left, newest first
		fails bool
	}{
		{
			name:  "snapshot at 10, log to 12, truncate to 8: from the empty tree",
			setup: func(d *truncDisk) { d.logTxns(1, 12, false); d.snapshot(10, 10) },
			to:    8,
			want:  nil,
		},
		{
			name: "an older snapshot is the base",
			setup: func(d *truncDisk) {
				d.logTxns(1, 5, false)
				d.snapshot(5, 5)
				d.logTxns(6, 12, true)
				d.snapshot(10, 10)
			},
			to:   8,
			want: []string{"1.5"},
		},
		{
			name: "a fuzzy snapshot whose digest lies past the point goes too",
			setup: func(d *truncDisk) {
				d.logTxns(1, 12, false)
				d.snapshot(3, 3)
				d.snapshot(6, 9)
				d.snapshot(10, 10)
			},
			to:   8,
			want: []string{"1.3"},
		},
		{
			name:  "truncating above the newest snapshot keeps it",
			setup: func(d *truncDisk) { d.logTxns(1, 12, false); d.snapshot(10, 10) },
			to:    11,
			want:  []string{"1.10"},
		},
		{
			name:  "to the snapshot itself",
			setup: func(d *truncDisk) { d.logTxns(1, 12, false); d.snapshot(10, 10) },
			to:    10,
			want:  []string{"1.10"},
		},
		{
			name: "the log below the snapshot is gone: refused",
			setup: func(d *truncDisk) {
				d.logTxns(1, 8, false)
				d.logTxns(9, 12, true)
				d.snapshot(10, 10)
				first := filepath.Join(d.cfg.logDir(), txnlog.DirName, txnlog.FileName(zxid.Make(1, 1)))
				if err := d.cfg.FS.Remove(first); err != nil {
					d.t.Fatal(err)
				}
			},
			to:    8,
			want:  []string{"1.10"},
			fails: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newTruncDisk(t)
			tc.setup(d)
			dl := d.diskLog()
			lastBefore := d.log.LastZxid()
			err := dl.Truncate(zxid.Make(1, tc.to))
			if tc.fails {
				if !errors.Is(err, ErrNoStateAtTruncation) {
					t.Fatalf("Truncate: %v, want ErrNoStateAtTruncation", err)
				}
				if got := d.log.LastZxid(); got != lastBefore {
					t.Fatalf("a refused truncation moved the log's end from %s to %s", lastBefore, got)
				}
			} else if err != nil {
				t.Fatalf("Truncate: %v", err)
			}
			if got := d.snapshots(); !slices.Equal(got, tc.want) {
				t.Fatalf("snapshots left %v, want %v", got, tc.want)
			}
			if !tc.fails {
				checkTreeAt(t, dl, tc.to)
			}
		})
	}
}

// TestInstallSnapshotRemovesNewer: a snapshot from the leader below one the
// member already has must become the state start-up loads.
func TestInstallSnapshotRemovesNewer(t *testing.T) {
	d := newTruncDisk(t)
	d.logTxns(1, 12, false)
	d.snapshot(10, 10)
	if floor, err := truncateFloor(&d.cfg); err != nil || floor != zxid.Make(1, 10) {
		t.Fatalf("floor %s (%v), want 1.10", floor, err)
	}
	tree := datatree.New()
	for i := uint32(1); i <= 7; i++ {
		tree.Apply(truncTxn(i))
	}
	dl := d.diskLog()
	if err := dl.InstallSnapshot(zxid.Make(1, 7), tree, nil); err != nil {
		t.Fatal(err)
	}
	if got := d.snapshots(); !slices.Equal(got, []string{"1.7"}) {
		t.Fatalf("snapshots %v, want [1.7]", got)
	}
	checkTreeAt(t, dl, 7)
	if floor, err := truncateFloor(&d.cfg); err != nil || floor != zxid.Make(1, 7) {
		t.Fatalf("floor %s (%v), want 1.7", floor, err)
	}
}
