package peer

import (
	"math/rand/v2"
	"slices"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zab"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

const fiveConfig = "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
	"server.2=127.0.0.1:2002:3002:participant;127.0.0.1:4002\n" +
	"server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003\n" +
	"server.4=127.0.0.1:2004:3004:observer;127.0.0.1:4004\n" +
	"server.5=127.0.0.1:2005:3005:participant;127.0.0.1:4005\nversion=100000007"

func reconfigTxn(z zxid.ID, text string) []byte {
	return txn.Marshal(&txn.Txn{Header: txn.Header{ClientID: 9, Cxid: 3, Zxid: z, Time: 1, Type: zkproto.OpReconfig},
		Record: &txn.SetData{Path: "/zookeeper/config", Data: []byte(text), Version: -1}})
}

func TestMembershipCodec(t *testing.T) {
	c := MembershipCodec{MaxBuffer: jute.DefaultMaxBuffer}
	setData := txn.Marshal(&txn.Txn{Header: txn.Header{Zxid: 5, Type: zkproto.OpSetData},
		Record: &txn.SetData{Path: "/a", Data: []byte(fiveConfig), Version: 1}})
	tests := []struct {
		name   string
		data   []byte
		ok     bool
		voters []zab.PeerID
	}{
		{"reconfig", reconfigTxn(zxid.Make(1, 7), fiveConfig), true, []zab.PeerID{1, 2, 3, 5}},
		{"setData with the same text", setData, false, nil},
		{"reconfig with a bad text", reconfigTxn(zxid.Make(1, 7), "server.1=x"), false, nil},
		{"reconfig cut short", reconfigTxn(zxid.Make(1, 7), fiveConfig)[:40], false, nil},
		{"short", []byte{1, 2, 3}, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := c.Reconfig(tc.data)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if !slices.Equal(m.Voters, tc.voters) || !slices.Equal(m.Observers, []zab.PeerID{4}) ||
				m.Version != zxid.Make(1, 7) || string(m.Text) != fiveConfig {
				t.Fatalf("got %+v", m)
			}
		})
	}
	if _, err := c.Parse([]byte("version=1")); err == nil {
		t.Fatal("a configuration without servers parsed")
	}
	stamped, err := c.Stamp([]byte(fiveConfig), zxid.Make(2, 0))
	if want := fiveConfig[:len(fiveConfig)-len("100000007")] + "200000000"; err != nil || string(stamped) != want {
		t.Fatalf("stamped %q (%v), want %q", stamped, err, want)
	}
}

// The core's view of the ensemble comes from the node: its last-seen
// configuration and which voters are in sync with it.
func TestEnsembleView(t *testing.T) {
	text := "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\nversion=100000000"
	n, err := zab.New(zab.Config{ID: 1, Voters: []zab.PeerID{1}, ConfigVersion: zxid.Make(1, 0), ConfigText: []byte(text),
		InitLimitTicks: 5, SyncLimitTicks: 5, Rand: rand.New(rand.NewPCG(1, 1)), Reconfigs: MembershipCodec{MaxBuffer: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	for n.HasReady() {
		n.Advance(n.Ready())
	}
	v := ensembleView{n}
	last, inProgress := v.LastSeen()
	if inProgress || last.Version != int64(zxid.Make(1, 0)) || len(last.Servers) != 1 {
		t.Fatalf("last seen %+v, in progress %v", last, inProgress)
	}
	if !v.QuorumSynced([]int64{1}) || v.QuorumSynced([]int64{1, 2, 3}) {
		t.Fatal("quorum synced")
	}
	if err := n.Propose(n.NextZxid(), reconfigTxn(n.NextZxid(), fiveConfig)); err != nil {
		t.Fatal(err)
	}
	if _, inProgress := v.LastSeen(); !inProgress {
		t.Fatal("a proposed reconfiguration is not in progress")
	}
	// Without a configuration text (no reconfiguration), nothing can be
	// prepared against it.
	plain, err := zab.New(zab.Config{ID: 1, Voters: []zab.PeerID{1}, InitLimitTicks: 5, SyncLimitTicks: 5,
		Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	if _, inProgress := (ensembleView{plain}).LastSeen(); !inProgress {
		t.Fatal("a node without a configuration text lets a reconfig be prepared")
	}
}
