package peer

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// opLog records the order in which Persist calls the Log.
type opLog struct {
	*memLog
	ops         []string
	failTrunc   error
	failInstall error
}

func (l *opLog) SaveState(hs zab.HardState) error {
	l.ops = append(l.ops, "save-state")
	return l.memLog.SaveState(hs)
}

func (l *opLog) Append(es []zab.Entry) error {
	l.ops = append(l.ops, "append")
	return l.memLog.Append(es)
}

func (l *opLog) Sync() error {
	l.ops = append(l.ops, "sync")
	return l.memLog.Sync()
}

func (l *opLog) Truncate(z zxid.ID) error {
	l.ops = append(l.ops, "truncate")
	if l.failTrunc != nil {
		return l.failTrunc
	}
	return l.memLog.Truncate(z)
}

func (l *opLog) InstallSnapshot(z zxid.ID, tree *datatree.Tree, sessions []zkcore.SessionState) error {
	l.ops = append(l.ops, "install")
	if l.failInstall != nil {
		return l.failInstall
	}
	return l.memLog.InstallSnapshot(z, tree, sessions)
}

func (l *opLog) Reload() (*datatree.Tree, []zkcore.SessionState, error) {
	l.ops = append(l.ops, "reload")
	return l.memLog.Reload()
}

func sessionTxn(k uint32) zab.Entry {
	z := zxid.Make(1, k)
	return zab.Entry{Zxid: z, Data: txn.Marshal(&txn.Txn{
		Header: txn.Header{ClientID: int64(k), Zxid: z, Type: zkproto.OpCreateSession},
		Record: &txn.CreateSession{TimeoutMs: 30000},
	})}
}

// TestPersistOrder: the epochs are written only once the truncation or
// snapshot and the txns are durable (a learner's NEWLEADER batch must
// never leave a new currentEpoch over an old log: ZOOKEEPER-3911, -4643),
// and a batch whose disk work fails writes no epoch at all.
func TestPersistOrder(t *testing.T) {
	core, err := zkcore.New(zkcore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	snapBody, err := EncodeSnapshot(core)
	if err != nil {
		t.Fatal(err)
	}
	trunc := func(k uint32) *zxid.ID { z := zxid.Make(1, k); return &z }
	state := &zab.HardState{AcceptedEpoch: 2, CurrentEpoch: 2}
	boom := errors.New("disk full")
	tests := []struct {
		name    string
		rd      zab.Ready
		mutate  func(*opLog)
		wantOps string
		wantErr string
	}{
		{
			name:    "TRUNC, txns, then the epoch",
			rd:      zab.Ready{Truncate: trunc(2), Entries: []zab.Entry{sessionTxn(3)}, State: state},
			wantOps: "truncate reload append sync save-state",
		},
		{
			name: "SNAP, txns, then the epoch",
			rd: zab.Ready{InstallSnapshot: true, SnapshotZxid: zxid.Make(1, 5), Snapshot: snapBody,
				Entries: []zab.Entry{sessionTxn(6)}, State: state},
			wantOps: "install append sync save-state",
		},
		{
			name:    "an epoch alone",
			rd:      zab.Ready{State: state},
			wantOps: "save-state",
		},
		{
			name:    "a refused TRUNC writes no epoch",
			rd:      zab.Ready{Truncate: trunc(2), Entries: []zab.Entry{sessionTxn(3)}, State: state},
			mutate:  func(l *opLog) { l.failTrunc = boom },
			wantOps: "truncate",
			wantErr: "disk full",
		},
		{
			name:    "a failed snapshot install writes no epoch",
			rd:      zab.Ready{InstallSnapshot: true, SnapshotZxid: zxid.Make(1, 5), Snapshot: snapBody, State: state},
			mutate:  func(l *opLog) { l.failInstall = boom },
			wantOps: "install",
			wantErr: "disk full",
		},
		{
			name:    "a TRUNC past the log does not give the state asked for",
			rd:      zab.Ready{Truncate: trunc(7), State: state},
			wantOps: "truncate reload",
			wantErr: "ends at 0x100000003",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ml := &memLog{hard: zab.HardState{AcceptedEpoch: 1, CurrentEpoch: 1}}
			ml.entries = []zab.Entry{sessionTxn(1), sessionTxn(2), sessionTxn(3)}
			ml.synced = 3
			l := &opLog{memLog: ml}
			if tc.mutate != nil {
				tc.mutate(l)
			}
			p := &Peer{log: l, maxBuf: jute.DefaultMaxBuffer + 1024}
			_, err := p.Persist(tc.rd)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Persist: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Persist: %v, want an error with %q", err, tc.wantErr)
			}
			if got := strings.Join(l.ops, " "); got != tc.wantOps {
				t.Fatalf("operations %q, want %q", got, tc.wantOps)
			}
			if tc.wantErr != "" && ml.hard.CurrentEpoch != 1 {
				t.Fatalf("currentEpoch %d written by a failed batch", ml.hard.CurrentEpoch)
			}
			if tc.wantErr == "" && !slices.Contains(l.ops, "save-state") {
				t.Fatal("no epoch written")
			}
		})
	}
}
