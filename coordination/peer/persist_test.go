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

// opTransport records what Persist sends, in the same list as the log's
// operations.
type opTransport struct{ l *opLog }

func (t opTransport) Send(ms []zab.Message) {
	for _, m := range ms {
		t.l.ops = append(t.l.ops, "send-"+m.Type.String())
	}
}

func (t opTransport) Disconnect(p zab.PeerID) { t.l.ops = append(t.l.ops, "disconnect") }

// TestPersistSendsAcks: a follower's batch whose messages are only the
// ACKs of its entries has them sent by Persist, once the entries are
// synced; a batch with anything else that must come first (an epoch, a
// role change, another message) leaves its messages to Finish.
func TestPersistSendsAcks(t *testing.T) {
	ack := zab.Message{Type: zab.MsgAck, To: 3, Zxid: zxid.Make(1, 4)}
	ping := zab.Message{Type: zab.MsgPing, To: 3}
	entries := []zab.Entry{sessionTxn(4)}
	tests := []struct {
		name     string
		rd       zab.Ready
		wantOps  string
		wantSent bool
	}{
		{"ACKs alone go once the entries are synced",
			zab.Ready{Entries: entries, Messages: []zab.Message{ack}}, "append sync send-ACK", true},
		{"an ACK with a new epoch waits for Finish",
			zab.Ready{Entries: entries, Messages: []zab.Message{ack}, State: &zab.HardState{AcceptedEpoch: 2, CurrentEpoch: 2}},
			"append sync save-state", false},
		{"an ACK with a role change waits for Finish",
			zab.Ready{Entries: entries, Messages: []zab.Message{ack}, Role: &zab.RoleChange{Role: zab.Following, Leader: 3}},
			"append sync", false},
		{"an ACK beside another message waits for Finish",
			zab.Ready{Entries: entries, Messages: []zab.Message{ack, ping}}, "append sync", false},
		{"an ACK beside a link to close waits for Finish",
			zab.Ready{Entries: entries, Messages: []zab.Message{ack}, Disconnect: []zab.PeerID{2}}, "append sync", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ml := &memLog{hard: zab.HardState{AcceptedEpoch: 1, CurrentEpoch: 1}}
			ml.entries = []zab.Entry{sessionTxn(1), sessionTxn(2), sessionTxn(3)}
			ml.synced = 3
			l := &opLog{memLog: ml}
			p := &Peer{log: l, tr: opTransport{l}, maxBuf: jute.DefaultMaxBuffer + 1024}
			ps, err := p.Persist(tc.rd)
			if err != nil {
				t.Fatalf("Persist: %v", err)
			}
			if got := strings.Join(l.ops, " "); got != tc.wantOps {
				t.Fatalf("operations %q, want %q", got, tc.wantOps)
			}
			if ps.acksSent != tc.wantSent {
				t.Fatalf("acksSent %v, want %v", ps.acksSent, tc.wantSent)
			}
		})
	}
}

// TestFollowerAcksOnce: in an ensemble, each follower acknowledges a write
// exactly once, though Persist sends the ACK and Finish carries out the
// rest of the batch.
func TestFollowerAcksOnce(t *testing.T) {
	e := newEnsemble(t, 3)
	e.until(2000, "serving", func() bool { _, ok := e.serving(); return ok })
	leader, _ := e.serving()
	follower := e.ids[0]
	if follower == leader {
		follower = e.ids[1]
	}
	e.connect(follower, 1)
	for _, id := range e.ids {
		e.until(500, "session replicated", func() bool { return e.peers[id].Core().LastZxid() == e.peers[leader].Core().LastZxid() })
	}
	acks := e.sent[zab.MsgAck]
	e.request(follower, 1, 1, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/a", Data: []byte("v"), ACL: zkproto.OpenACLUnsafe})
	e.until(2000, "create acknowledged", func() bool { _, ok := e.reply(follower, 1, 1); return ok })
	for _, id := range e.ids {
		e.until(500, "replicated", func() bool { return e.peers[id].Core().Tree().Node("/a") != nil })
	}
	if h, _ := e.reply(follower, 1, 1); h.Err != 0 {
		t.Fatalf("create: %v", h.Err)
	}
	if got := e.sent[zab.MsgAck] - acks; got != 2 {
		t.Fatalf("%d ACKs for one write in an ensemble of three, want 2 (one per follower)", got)
	}
}
