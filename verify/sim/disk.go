package sim

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path"
	"slices"

	"keeper/coordination/datatree"
	coordserver "keeper/coordination/server"
	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// errCrash is what a disk returns when a failpoint fires: the server dies
// at that exact point of its storage work.
var errCrash = errors.New("sim: crashed at a failpoint")

// failpoint is a storage operation a server can be made to crash at.
type failpoint uint8

const (
	fpNone         failpoint = iota
	fpSaveState              // before the epochs are written
	fpAppend                 // before txns are appended
	fpSync                   // after the append, before the sync: the txns are not durable
	fpTruncate               // before a TRUNC is carried out
	fpSnapshot               // before a snapshot from the leader is installed
	fpStorageOp              // at one of the next few changing file operations (crashFS)
	failpointCount           // number of failpoints, for drawing one
	fpFirst        = fpSaveState
)

func (f failpoint) String() string {
	return [...]string{"none", "save-state", "append", "sync", "truncate", "snapshot", "storage-op"}[f]
}

// Where a simulated server keeps its data, on its own MemFS.
const (
	dataDir = "/data"
	// preAllocBytes is the log's preallocation step: small, so that runs
	// cross it often and recovery's scan past the zeros of a preallocated
	// tail is exercised.
	preAllocBytes = 4096
)

// disk is one server's durable state: an in-memory filesystem (vfs.MemFS, behind crashFS)
// that the production member log (coordination/server's MemberLog:
// Apache ZooKeeper's txnlog, snapshots and epoch files) writes through, as
// a real member's does. A crash keeps what MemFS.CrashClone leaves — the
// synced bytes and directory entries, and a random prefix of what was not
// synced, the last write perhaps torn — and the next start recovers from
// it with the production recovery code. It implements peer.Log by
// delegating to the MemberLog, after the simulator's failpoints and the
// oracle's bookkeeping.
//
// Alongside the files it keeps what the simulator must know and the files
// do not say: the history (list of zxids) each snapshot file reflects, and
// the zxids appended since the replica's history was last set.
type disk struct {
	srv *server
	fs  *crashFS
	st  coordserver.StorageConfig
	log *coordserver.MemberLog // nil while the server is down

	// snapHist is the history each snapshot file reflects, by its zxid:
	// the empty one at 0, the leader's up to z for one installed at z.
	snapHist map[zxid.ID][]zxid.ID
	// tail holds the zxids appended after the replica's history was last
	// set (start, TRUNC, SNAP), in order: what account adds to it as the
	// core applies them.
	tail []zxid.ID
	// synced holds the zxids appended and synced after the replica's
	// history was last set, and pending those appended and not yet
	// synced: what the server holds durably beyond its history
	// (server.holds). A crash keeps synced.
	synced, pending []zxid.ID
	hard            zab.HardState // the epochs the last start read, for traces

	armed failpoint // crash at the next operation of this kind
}

func newDisk(s *server) *disk {
	return &disk{srv: s, fs: &crashFS{mem: vfs.NewMem()}, snapHist: map[zxid.ID][]zxid.ID{0: nil}}
}

// maxStorageOps bounds how far ahead fpStorageOp crashes: within the next
// batch or two of a busy server.
const maxStorageOps = 40

// arm makes the server crash at failpoint fp.
func (d *disk) arm(fp failpoint, rng *rand.Rand) {
	d.armed = fp
	if fp == fpStorageOp {
		d.fs.arm(1 + rng.IntN(maxStorageOps))
	}
}

// disarm cancels an armed failpoint.
func (d *disk) disarm() {
	d.armed = fpNone
	d.fs.disarm()
}

// crashed reports whether an armed failpoint fired: the process is dead,
// whatever error the storage code made of it.
func (d *disk) crashed() bool { return d.fs.dead }

func (d *disk) hit(fp failpoint) error {
	if d.armed != fp {
		return nil
	}
	d.armed = fpNone
	return fmt.Errorf("server %d at %s: %w", d.srv.id, fp, errCrash)
}

// open recovers the server's state from its files into core, as a member
// does at start (coordserver.OpenMemberLog), and sets the replica's
// history to what the files hold.
func (d *disk) open(core *zkcore.Server, cfg zkcore.Config, maxRecent int) (coordserver.Recovered, error) {
	d.st = coordserver.StorageConfig{FS: d.fs, DataDir: dataDir, PreAllocSizeBytes: preAllocBytes}
	ml, rec, err := coordserver.OpenMemberLog(coordserver.MemberLogConfig{
		Storage: &d.st, Core: cfg, MaxRecordBytes: cfg.MaxBuffer + 1024, MaxRecentEntries: maxRecent,
		FromLeader: true, Now: d.srv.now, Logger: cfg.Logger,
	}, core)
	if err != nil {
		return rec, err
	}
	d.log, d.hard = ml, rec.HardState
	if err := d.resetHistory(core.LastZxid()); err != nil {
		return rec, err
	}
	return rec, nil
}

// resetHistory sets the replica's history to what its files hold up to
// last, the zxid the state rebuilt from them ends at: the history of the
// newest snapshot at or below last (the one recovery starts from), then
// the zxids of the log after it.
func (d *disk) resetHistory(last zxid.ID) error {
	infos, err := snap.List(d.fs.mem, path.Join(dataDir, txnlog.DirName))
	if err != nil {
		return err
	}
	base := zxid.ID(0)
	for _, info := range infos {
		if info.Zxid <= last {
			base = info.Zxid
			break
		}
	}
	hist, ok := d.snapHist[base]
	if !ok {
		return fmt.Errorf("sim: server %d recovered from a snapshot at %s the simulator did not see written", d.srv.id, base)
	}
	hist = slices.Clone(hist)
	it, err := txnlog.Read(d.fs.mem, dataDir, base+1, txnlog.Config{PreAllocSizeBytes: preAllocBytes})
	if err != nil {
		return err
	}
	defer it.Close()
	prev := base
	for prev < last {
		t, err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		z := t.Header.Zxid
		if z <= prev {
			continue
		}
		if z > last {
			break
		}
		hist = append(hist, z)
		prev = z
	}
	if prev != last {
		return fmt.Errorf("sim: server %d's state ends at %s, but its snapshot at %s and log reach only %s", d.srv.id, last, base, prev)
	}
	d.srv.setHistory(hist, last)
	d.tail, d.synced, d.pending = nil, nil, nil
	return nil
}

// SaveState writes the epochs durably.
func (d *disk) SaveState(hs zab.HardState) error {
	if err := d.hit(fpSaveState); err != nil {
		return err
	}
	return d.log.SaveState(hs)
}

// Append writes txns; they are durable after Sync.
func (d *disk) Append(es []zab.Entry) error {
	if err := d.hit(fpAppend); err != nil {
		return err
	}
	for _, e := range es {
		d.srv.c.oracle.logged(d.srv.c, d.srv.id, e)
	}
	if err := d.log.Append(es); err != nil {
		return err
	}
	for _, e := range es {
		d.tail = append(d.tail, e.Zxid)
		d.pending = append(d.pending, e.Zxid)
	}
	return d.hit(fpSync)
}

// Sync makes every appended txn durable.
func (d *disk) Sync() error {
	if err := d.log.Sync(); err != nil {
		return err
	}
	d.synced = append(d.synced, d.pending...)
	d.pending = d.pending[:0]
	return nil
}

// Truncate removes every txn after z, durably.
func (d *disk) Truncate(z zxid.ID) error {
	if err := d.hit(fpTruncate); err != nil {
		return err
	}
	d.srv.account()
	d.srv.c.oracle.truncating(d.srv.c, d.srv.id, z, d.logged())
	d.srv.c.stats.Truncates++
	d.srv.c.tracef("server %d truncates its log after %s", d.srv.id, z)
	if err := d.log.Truncate(z); err != nil {
		return err
	}
	d.synced = slices.DeleteFunc(d.synced, func(l zxid.ID) bool { return l > z })
	return nil
}

// InstallSnapshot makes the leader's snapshot, taken at z, the durable
// state; the log restarts after z.
func (d *disk) InstallSnapshot(z zxid.ID, tree *datatree.Tree, sessions []zkcore.SessionState) error {
	if err := d.hit(fpSnapshot); err != nil {
		return err
	}
	d.srv.account()
	hist := d.srv.c.leaderHistory(d.srv, z)
	d.snapHist[z] = hist // before the file exists: a crash may leave it
	if err := d.log.InstallSnapshot(z, tree, sessions); err != nil {
		return err
	}
	d.srv.setHistory(slices.Clone(hist), z)
	d.tail, d.synced = nil, nil
	d.srv.c.stats.Snapshots++
	d.srv.c.tracef("server %d installs a snapshot at %s", d.srv.id, z)
	return nil
}

// Reload rebuilds the tree and sessions from the files, as at start-up,
// and the replica's history with them.
func (d *disk) Reload() (*datatree.Tree, []zkcore.SessionState, error) {
	tree, sessions, err := d.log.Reload()
	if err != nil {
		return nil, nil, err
	}
	if err := d.resetHistory(tree.LastZxid()); err != nil {
		return nil, nil, err
	}
	return tree, sessions, nil
}

// crash drops what a power cut would: the filesystem becomes what
// CrashClone leaves of it, and the open log is abandoned with the process.
func (d *disk) crash(rng *rand.Rand) {
	d.fs = &crashFS{mem: d.fs.mem.CrashClone(rng)}
	d.log = nil
	d.tail, d.pending = nil, nil
	d.armed = fpNone
}

// logged returns the zxids in the replica's log as far as the simulator
// knows: its history, then what was appended after it.
func (d *disk) logged() []zxid.ID {
	h := d.srv.hist
	out := slices.Clone(h)
	for _, z := range d.tail {
		if z > d.srv.histZxid {
			out = append(out, z)
		}
	}
	return out
}

// takeApplied returns the zxids appended in (from, to] and forgets every
// one up to to: the core applied them, and they are in the history now.
func (d *disk) takeApplied(from, to zxid.ID) []zxid.ID {
	var out []zxid.ID
	i := 0
	for ; i < len(d.tail) && d.tail[i] <= to; i++ {
		if d.tail[i] > from {
			out = append(out, d.tail[i])
		}
	}
	d.tail = d.tail[i:]
	d.synced = slices.DeleteFunc(d.synced, func(z zxid.ID) bool { return z <= to }) // in the history now
	return out
}
