package server

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"testing"

	"keeper/coordination/peer"
	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

type nopTransport struct{}

func (nopTransport) Send([]zab.Message)    {}
func (nopTransport) Disconnect(zab.PeerID) {}

type nopClients struct{}

func (nopClients) Send(zkcore.Send) {}

// memberRig is a lone voter, or a standalone server, driven through a
// Member, its hand-offs made by the test: batches to disk as soon as the
// member hands them over, one snapshot hand-off per step.
type memberRig struct {
	t          *testing.T
	standalone bool
	fs         vfs.FS
	st         StorageConfig
	core       *zkcore.Server
	log        *MemberLog
	m          *Member
	nowMs      int64
	pending    []zab.Ready
	handed     int // batches the member handed to disk (ToDisk)
	started    int // snapshots the member started
}

func (r *memberRig) now() zkcore.Now {
	return zkcore.Now{WallMs: 1_700_000_000_000 + r.nowMs, MonoMs: r.nowMs}
}

// open recovers the member from r.fs, as a start does.
func (r *memberRig) open(snapCount, stepNodes int) {
	r.t.Helper()
	r.st = StorageConfig{FS: r.fs, DataDir: "/data", PreAllocSizeBytes: 4096}
	cfg := zkcore.DefaultConfig()
	cfg.ServerID, cfg.TickMs = 1, 100
	core, err := zkcore.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	if r.standalone {
		ml, err := OpenStandaloneLog(&r.st, core, cfg.MaxBuffer+1024, r.now(), nil)
		if err != nil {
			r.t.Fatal(err)
		}
		r.core, r.log = core, ml
		r.m = NewMember(MemberConfig{ID: 1, Core: core, Log: ml, Clients: nopClients{}, TickMs: cfg.TickMs, Now: r.now,
			SnapCount: snapCount, SnapshotStepNodes: stepNodes, Rand: rand.New(rand.NewPCG(2, 2)),
			SnapshotStarted: func(zxid.ID) { r.started++ },
		})
		return
	}
	ml, rec, err := OpenMemberLog(MemberLogConfig{Storage: &r.st, Core: cfg, MaxRecordBytes: cfg.MaxBuffer + 1024,
		MaxRecentEntries: 100, Now: r.now}, core)
	if err != nil {
		r.t.Fatal(err)
	}
	core.SetMode(zkcore.NotServing, 0, r.now())
	zcfg := zab.Config{ID: 1, Voters: []zab.PeerID{1}, HardState: rec.HardState, LastZxid: core.LastZxid(),
		Recent: rec.Recent, MaxRecentEntries: 100, TruncateFloor: rec.TruncateFloor, Rand: rand.New(rand.NewPCG(1, 1))}
	zab.TimingFor(cfg.TickMs, 10, 5).Apply(&zcfg)
	node, err := zab.New(zcfg)
	if err != nil {
		r.t.Fatal(err)
	}
	p := peer.New(node, core, ml, nopTransport{}, nopClients{}, nil)
	r.core, r.log = core, ml
	r.m = NewMember(MemberConfig{ID: 1, Core: core, Peer: p, Log: ml, TickMs: cfg.TickMs, Now: r.now,
		SnapCount: snapCount, SnapshotStepNodes: stepNodes, Rand: rand.New(rand.NewPCG(2, 2)),
		ToDisk:          func(rd zab.Ready) { r.pending = append(r.pending, rd); r.handed++ },
		SnapshotStarted: func(zxid.ID) { r.started++ },
	})
}

// elect ticks a lone voter until it elects itself, within a few ticks.
func (r *memberRig) elect() {
	r.t.Helper()
	for range 200 {
		if r.m.s.quorum.peer.Node().Serving() {
			return
		}
		r.nowMs += 50
		r.m.s.quorum.peer.Tick(r.now())
		r.settle()
	}
	r.t.Fatalf("the lone voter is not serving (%v)", r.core.Mode())
}

// settle drives the member and writes what it hands to disk until it
// hands nothing more.
func (r *memberRig) settle() {
	r.t.Helper()
	r.m.Drive()
	for r.m.Queued() { // standalone: what the persister would take
		b := r.m.PersistQueued()
		if err := b.Err(); err != nil {
			r.t.Fatalf("persist: %v", err)
		}
		r.m.Finish(b)
		r.m.Drive()
	}
	for len(r.pending) > 0 {
		rd := r.pending[0]
		r.pending = r.pending[1:]
		b := r.m.Persist(rd)
		if err := b.Err(); err != nil {
			r.t.Fatalf("persist: %v", err)
		}
		r.m.Finish(b)
	}
}

// snapshotStep makes the snapshot job's next hand-off, if it has one.
func (r *memberRig) snapshotStep() {
	switch {
	case r.m.SnapshotWritten():
		r.m.FinishSnapshot()
	case r.m.SnapshotWriterReady():
		r.m.WriteSnapshot()
	case r.m.SnapshotStepReady():
		r.m.StepSnapshot()
	default:
		return
	}
	r.settle()
}

// A member driven through its hand-offs alone takes fuzzy snapshots while
// sessions are created between the steps of each walk, rolls its log at
// each, purges down to the snapshots it must keep, and a start from what
// it left rebuilds the same tree: the loop's work runs without the loop,
// for an ensemble member (a lone voter) and a standalone server alike.
func TestMemberSnapshotsRollsAndPurges(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		standalone           bool
		snapCount, stepNodes int
		wantSnapshots        bool
	}{
		{"no snapshots", false, 0, 1, false},
		{"a snapshot every few txns, one node a step", false, 4, 1, true},
		{"a snapshot every few txns, whole walk at once", false, 6, 1000, true},
		{"standalone, no snapshots", true, 0, 1, false},
		{"standalone, a snapshot every few txns, one node a step", true, 4, 1, true},
		{"standalone, a snapshot every few txns, whole walk at once", true, 6, 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &memberRig{t: t, fs: vfs.NewMem(), standalone: tc.standalone}
			r.open(tc.snapCount, tc.stepNodes)
			if !tc.standalone { // a standalone server serves at once
				r.elect()
			}
			for i := range 40 {
				id := zkcore.ConnID(i + 1)
				r.core.NewConn(id, netip.MustParseAddrPort(fmt.Sprintf("10.0.0.1:%d", 10000+i)), r.now())
				r.core.Connect(id, &zkproto.ConnectRequest{TimeoutMs: 30000, Passwd: make([]byte, 16)}, r.now())
				r.settle()
				r.snapshotStep()
				if i%10 == 9 { // a pass in steps, a snapshot hand-off between them
					r.m.BeginPurge()
					for r.m.StepPurge() {
						r.snapshotStep()
					}
					r.m.EndPurge()
				}
			}
			for range 1000 { // let the last job end
				r.snapshotStep()
			}
			r.m.Purge()
			snapDir := filepath.Join(r.st.DataDir, txnlog.DirName)
			infos, err := snap.List(r.fs, snapDir)
			if err != nil {
				t.Fatal(err)
			}
			files, err := txnlog.Files(r.fs, r.st.DataDir)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.started > 0; got != tc.wantSnapshots {
				t.Fatalf("%d snapshots started, want some: %v", r.started, tc.wantSnapshots)
			}
			if tc.wantSnapshots {
				if r.started < 5 || len(infos) == 0 || len(infos) > MinSnapRetainCount {
					t.Fatalf("%d snapshots started, %d on disk after the purge (want 1 to %d)", r.started, len(infos), MinSnapRetainCount)
				}
				if len(files) < 2 {
					t.Fatalf("%d log files: the log never rolled", len(files))
				}
			}
			t.Logf("%d snapshots started; %d snapshots and %d log files left; state at %s", r.started, len(infos), len(files), r.core.LastZxid())
			want, wantDigest := r.core.LastZxid(), r.core.Tree().Digest()
			if err := r.log.Close(); err != nil {
				t.Fatal(err)
			}
			r.open(tc.snapCount, tc.stepNodes)
			if tc.standalone {
				if _, err := r.fs.Stat(filepath.Join(snapDir, currentEpochFile)); err == nil {
					t.Fatal("a standalone server wrote an epoch file; ZooKeeper's standalone has none")
				}
				if got := want.Epoch(); got != 0 {
					t.Fatalf("a standalone server's zxids are in epoch %d; they keep the log's (0 for a new one)", got)
				}
			}
			if got := r.core.LastZxid(); got != want {
				t.Fatalf("restart recovered up to %s, want %s", got, want)
			}
			if got := r.core.Tree().Digest(); got != wantDigest {
				t.Fatalf("restart rebuilt a tree with digest %x, want %x", got, wantDigest)
			}
		})
	}
}

// TestMemberAppliesCommitsOnTheLoop: a batch with nothing to persist or
// send (the commit of a txn already durable) is finished on the loop, not
// handed to the persister: a lone voter's write takes one batch to disk,
// and it is applied as soon as that batch is back.
func TestMemberAppliesCommitsOnTheLoop(t *testing.T) {
	r := &memberRig{t: t, fs: vfs.NewMem()}
	r.open(0, 1)
	r.elect()
	for range 10 { // the batches that establish its epoch
		r.nowMs += 50
		r.m.s.quorum.peer.Tick(r.now())
		r.settle()
	}
	for i := range 5 {
		before, handed := r.core.LastZxid(), r.handed
		id := zkcore.ConnID(i + 1)
		r.core.NewConn(id, netip.MustParseAddrPort(fmt.Sprintf("10.0.0.1:%d", 10000+i)), r.now())
		r.core.Connect(id, &zkproto.ConnectRequest{TimeoutMs: 30000, Passwd: make([]byte, 16)}, r.now())
		r.m.Drive()
		if got := r.handed - handed; got != 1 || len(r.pending) != 1 {
			t.Fatalf("session %d: %d batches handed to disk, %d pending; want the txn's one", i, got, len(r.pending))
		}
		b := r.m.Persist(r.pending[0])
		r.pending = r.pending[1:]
		if err := b.Err(); err != nil {
			t.Fatalf("persist: %v", err)
		}
		r.m.Finish(b)
		if got := r.handed - handed; got != 1 || len(r.pending) != 0 {
			t.Fatalf("session %d: %d batches handed to disk after the txn's came back, want 1", i, got)
		}
		if got, logged := r.core.LastZxid(), r.m.s.quorum.peer.Node().LastZxid(); got == before || got != logged {
			t.Fatalf("session %d: applied up to %s once its batch was durable (before %s), want %s", i, got, before, logged)
		}
	}
}

// An autopurge pass driven in steps holds the storage lock from its plan
// to its end: a batch that replaces the state (TRUNC, SNAP) waits for it,
// any other batch does not, and the pass removes what a whole pass at
// once would have.
func TestMemberPurgePassHoldsTheStorageLock(t *testing.T) {
	r := &memberRig{t: t, fs: vfs.NewMem()}
	r.open(4, 1000)
	r.elect()
	for i := range 30 {
		id := zkcore.ConnID(i + 1)
		r.core.NewConn(id, netip.MustParseAddrPort(fmt.Sprintf("10.0.0.1:%d", 10000+i)), r.now())
		r.core.Connect(id, &zkproto.ConnectRequest{TimeoutMs: 30000, Passwd: make([]byte, 16)}, r.now())
		r.settle()
		for range 10 {
			r.snapshotStep()
		}
	}
	snapDir := filepath.Join(r.st.DataDir, txnlog.DirName)
	infos, err := snap.List(r.fs, snapDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) <= MinSnapRetainCount {
		t.Fatalf("%d snapshots on disk: the pass would have nothing to remove", len(infos))
	}
	z := infos[0].Zxid
	trunc, install, appendOnly := zab.Ready{Truncate: &z}, zab.Ready{InstallSnapshot: true}, zab.Ready{}
	r.m.BeginPurge()
	if !r.m.Purging() {
		t.Fatal("no pass runs after BeginPurge")
	}
	steps := 0
	for {
		if !r.m.PersistWaits(trunc) || !r.m.PersistWaits(install) {
			t.Fatalf("step %d: a TRUNC or SNAP batch does not wait for the pass", steps)
		}
		if r.m.PersistWaits(appendOnly) {
			t.Fatalf("step %d: a batch that only appends waits for the pass", steps)
		}
		if !r.m.StepPurge() {
			break
		}
		steps++
	}
	res := r.m.EndPurge()
	if r.m.Purging() || r.m.PersistWaits(trunc) || r.m.PersistWaits(install) {
		t.Fatal("the pass ended, but it still holds the storage lock")
	}
	if got := len(res.Snapshots) + len(res.Logs); got != steps || len(res.Snapshots) != len(infos)-MinSnapRetainCount {
		t.Fatalf("%d steps removed %+v; want one file a step and all but %d of %d snapshots", steps, res,
			MinSnapRetainCount, len(infos))
	}
	if again := r.m.Purge(); len(again.Snapshots)+len(again.Logs) != 0 {
		t.Fatalf("a second pass removed %+v; the stepped one left it nothing", again)
	}
}
