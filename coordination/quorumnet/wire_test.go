package quorumnet

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"keeper/coordination/zab"
	"keeper/coordination/zxid"
)

// hexBytes decodes hex written with spaces between fields.
func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// str returns a ustring/buffer encoding of s as hex.
func str(s string) string {
	return hex.EncodeToString([]byte{0, 0, 0, byte(len(s))}) + " " + hex.EncodeToString([]byte(s))
}

// testSnapshotBody is a small snapshot body in ZooKeeper's layout: one
// session, one ACL list (world:anyone:31), the root and /a, the end marker.
func testSnapshotBody(t testing.TB) []byte {
	stat := strings.Repeat("00", statPersistedBytes)
	return hexBytes(t, "00000001 0000000000000abc 00007530"+
		" 00000001 0000000000000001 00000001 0000001f "+str("world")+" "+str("anyone")+
		" 00000000 ffffffff ffffffffffffffff "+stat+
		" "+str("/a")+" "+str("xyz")+" 0000000000000001 "+stat+
		" "+str("/"))
}

// zk38 marks wire bytes produced by Apache ZooKeeper 3.8.0's own classes
// (QuorumPacket, LearnerInfo, FastLeaderElection.buildMsg, built the way
// Learner, LearnerHandler and Leader build them), as a cross-check of the
// layouts in docs/zookeeper-protocol.md.
const zk38 = true

func TestQuorumPacketCodec(t *testing.T) {
	body := testSnapshotBody(t)
	tests := []struct {
		name string
		msg  zab.Message // encoded
		wire string
		zk   bool         // wire checked against ZooKeeper 3.8 (zk38)
		want *zab.Message // decoded, if not msg without From/To
	}{
		{name: "request", msg: zab.Message{Type: zab.MsgRequest, Zxid: zxid.None, Data: hexBytes(t, "0000000000000055 00000007 00000001 78")},
			wire: "00000001 ffffffffffffffff 00000011 0000000000000055 00000007 00000001 78 00000000"},
		{name: "request with the client's identities", msg: zab.Message{Type: zab.MsgRequest, Zxid: zxid.None,
			Data:     hexBytes(t, "0000000000000055 00000007 00000002 "+str("/a")+" 00000000"),
			AuthInfo: hexBytes(t, "00000002 "+str("ip")+" "+str("127.0.0.1")+" "+str("digest")+" "+str("u:x"))},
			wire: "00000001 ffffffffffffffff 0000001a 0000000000000055 00000007 00000002 " + str("/a") + " 00000000 " +
				"00000002 " + str("ip") + " " + str("127.0.0.1") + " " + str("digest") + " " + str("u:x")},
		{name: "request zxid fixed", msg: zab.Message{Type: zab.MsgRequest, Zxid: 7, Data: []byte{}},
			wire: "00000001 ffffffffffffffff 00000000 00000000",
			want: &zab.Message{Type: zab.MsgRequest, Zxid: zxid.None, Data: []byte{}}},
		{name: "proposal", msg: zab.Message{Type: zab.MsgProposal, Zxid: 0x100000001, Data: []byte("txn")},
			wire: "00000002 0000000100000001 00000003 74786e ffffffff"},
		{name: "ack", msg: zab.Message{Type: zab.MsgAck, From: 2, To: 1, Zxid: 0x100000001},
			wire: "00000003 0000000100000001 ffffffff ffffffff"},
		{name: "commit", msg: zab.Message{Type: zab.MsgCommit, Zxid: 0x100000002},
			wire: "00000004 0000000100000002 ffffffff ffffffff"},
		{name: "ping from leader", msg: zab.Message{Type: zab.MsgPing, Zxid: 0x100000005},
			wire: "00000005 0000000100000005 ffffffff ffffffff", zk: zk38},
		{name: "ping from learner", msg: zab.Message{Type: zab.MsgPing, Zxid: 0x100000005, Data: hexBytes(t, "0000000000001234 00007530")},
			wire: "00000005 0000000100000005 0000000c 0000000000001234 00007530 ffffffff", zk: zk38},
		{name: "revalidate from learner", msg: zab.Message{Type: zab.MsgRevalidate, Zxid: zxid.None, Data: hexBytes(t, "0000000000001234 000007d0")},
			wire: "00000006 ffffffffffffffff 0000000c 0000000000001234 000007d0 ffffffff"},
		{name: "revalidate answer", msg: zab.Message{Type: zab.MsgRevalidate, Zxid: 7, Data: hexBytes(t, "0000000000001234 01")},
			wire: "00000006 ffffffffffffffff 00000009 0000000000001234 01 ffffffff",
			want: &zab.Message{Type: zab.MsgRevalidate, Zxid: zxid.None, Data: hexBytes(t, "0000000000001234 01")}},
		{name: "sync", msg: zab.Message{Type: zab.MsgSync, Zxid: 0x100000002},
			wire: "00000007 0000000000000000 ffffffff ffffffff", zk: zk38,
			want: &zab.Message{Type: zab.MsgSync}},
		{name: "inform", msg: zab.Message{Type: zab.MsgInform, Zxid: 0x100000003, Data: []byte("t")},
			wire: "00000008 0000000100000003 00000001 74 ffffffff"},
		{name: "newleader", msg: zab.Message{Type: zab.MsgNewLeader, Zxid: 0x200000000},
			wire: "0000000a 0000000200000000 00000000 ffffffff", zk: zk38},
		{name: "newleader with a configuration", msg: zab.Message{Type: zab.MsgNewLeader, Zxid: 0x200000000, Data: []byte("v=1")},
			wire: "0000000a 0000000200000000 00000003 763d31 ffffffff"},
		{name: "commitandactivate", msg: zab.Message{Type: zab.MsgCommitAndActivate, Zxid: 0x100000004, Designated: 3},
			wire: "00000009 0000000100000004 00000008 0000000000000003 ffffffff"},
		{name: "informandactivate", msg: zab.Message{Type: zab.MsgInformAndActivate, Zxid: 0x100000004, Designated: 2, Data: []byte("t")},
			wire: "00000013 0000000100000004 00000009 0000000000000002 74 ffffffff"},
		{name: "informandactivate of an empty txn", msg: zab.Message{Type: zab.MsgInformAndActivate, Zxid: 0x100000004, Designated: 2},
			wire: "00000013 0000000100000004 00000008 0000000000000002 ffffffff",
			want: &zab.Message{Type: zab.MsgInformAndActivate, Zxid: 0x100000004, Designated: 2, Data: []byte{}}},
		{name: "followerinfo with a configuration", msg: zab.Message{Type: zab.MsgFollowerInfo, From: 3, Zxid: 0x100000000, Epoch: 1,
			ConfigVersion: 0x100000004},
			wire: "0000000b 0000000100000000 00000014 0000000000000003 00010000 0000000100000004 ffffffff",
			want: &zab.Message{Type: zab.MsgFollowerInfo, From: 3, Zxid: 0x100000000, Epoch: 1, ConfigVersion: 0x100000004}},
		{name: "followerinfo", msg: zab.Message{Type: zab.MsgFollowerInfo, From: 3, To: 1, Zxid: 0x100000000, Epoch: 1, LastZxid: 0x100000007},
			wire: "0000000b 0000000100000000 00000014 0000000000000003 00010000 0000000000000000 ffffffff", zk: zk38,
			want: &zab.Message{Type: zab.MsgFollowerInfo, From: 3, Zxid: 0x100000000, Epoch: 1}},
		{name: "followerinfo of keeper", msg: zab.Message{Type: zab.MsgFollowerInfo, From: 3, Zxid: 0x100000000, Epoch: 1, Dialect: zab.DialectKeeper},
			wire: "0000000b 0000000100000000 00000014 0000000000000003 00014b50 0000000000000000 ffffffff",
			want: &zab.Message{Type: zab.MsgFollowerInfo, From: 3, Zxid: 0x100000000, Epoch: 1, Dialect: zab.DialectKeeper}},
		{name: "uptodate", msg: zab.Message{Type: zab.MsgUpToDate},
			wire: "0000000c ffffffffffffffff ffffffff ffffffff", zk: zk38,
			want: &zab.Message{Type: zab.MsgUpToDate, Zxid: zxid.None}},
		{name: "diff", msg: zab.Message{Type: zab.MsgDiff, Zxid: 0x100000009},
			wire: "0000000d 0000000100000009 ffffffff ffffffff"},
		{name: "trunc", msg: zab.Message{Type: zab.MsgTrunc, Zxid: 0x100000004},
			wire: "0000000e 0000000100000004 ffffffff ffffffff"},
		{name: "snap", msg: zab.Message{Type: zab.MsgSnap, Zxid: 0x100000009, Data: body},
			wire: "0000000f 0000000100000009 ffffffff ffffffff " + hex.EncodeToString(body) + " " + str("BenWasHere")},
		{name: "observerinfo", msg: zab.Message{Type: zab.MsgObserverInfo, From: 4, Epoch: 0},
			wire: "00000010 0000000000000000 00000014 0000000000000004 00010000 0000000000000000 ffffffff",
			want: &zab.Message{Type: zab.MsgObserverInfo, From: 4}},
		{name: "leaderinfo", msg: zab.Message{Type: zab.MsgLeaderInfo, Zxid: 0x200000000},
			wire: "00000011 0000000200000000 00000004 00010000 ffffffff", zk: zk38},
		{name: "leaderinfo of keeper", msg: zab.Message{Type: zab.MsgLeaderInfo, Zxid: 0x200000000, Dialect: zab.DialectKeeper},
			wire: "00000011 0000000200000000 00000004 00014b50 ffffffff"},
		{name: "ackepoch", msg: zab.Message{Type: zab.MsgAckEpoch, Zxid: 0x100000003, Epoch: 1},
			wire: "00000012 0000000100000003 00000004 00000001 ffffffff", zk: zk38},
		{name: "ackepoch already accepted", msg: zab.Message{Type: zab.MsgAckEpoch, Zxid: 0x100000003, Epoch: -1},
			wire: "00000012 0000000100000003 00000004 ffffffff ffffffff"},
		{name: "sync request", msg: zab.Message{Type: zab.MsgSyncRequest, From: 2, To: 1},
			wire: "00000001 ffffffffffffffff 00000015 0000000000000000 00000000 00000009 " + str("/") + " 00000000",
			want: &zab.Message{Type: zab.MsgSyncRequest, Zxid: zxid.None}},
		{name: "forwarded client sync", msg: zab.Message{Type: zab.MsgSyncRequest, Zxid: zxid.None, Data: hexBytes(t, "0000000000000055 00000007 00000009 "+str("/a"))},
			wire: "00000001 ffffffffffffffff 00000016 0000000000000055 00000007 00000009 " + str("/a") + " 00000000", zk: zk38},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wire := hexBytes(t, tc.wire)
			got, err := EncodeQuorumPacket(tc.msg)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !bytes.Equal(got, wire) {
				t.Fatalf("encode:\n got %x\nwant %x", got, wire)
			}
			want := tc.msg
			want.From, want.To, want.LastZxid = 0, 0, 0
			if tc.want != nil {
				want = *tc.want
			}
			m, err := DecodeQuorumPacket(wire)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(m, want) {
				t.Fatalf("decode:\n got %#v\nwant %#v", m, want)
			}
		})
	}
}

// TestDecodeQuorumPacketForms covers inputs that only a decoder meets:
// older LearnerInfo sizes, data on data-less types, authinfo.
func TestDecodeQuorumPacketForms(t *testing.T) {
	tests := []struct {
		name string
		wire string
		want zab.Message
	}{
		{"learnerinfo of 3.3", "0000000b 0000000200000005 00000008 0000000000000007 ffffffff",
			zab.Message{Type: zab.MsgFollowerInfo, From: 7, Zxid: 0x200000000, Epoch: 2}},
		{"learnerinfo of 3.4", "00000010 0000000200000000 0000000c 0000000000000007 00010000 ffffffff",
			zab.Message{Type: zab.MsgObserverInfo, From: 7, Zxid: 0x200000000, Epoch: 2}},
		{"commit with data and authinfo", "00000004 0000000100000002 00000002 abcd 00000001 " + str("ip") + " " + str("10.0.0.1"),
			zab.Message{Type: zab.MsgCommit, Zxid: 0x100000002}},
		{"newleader with config", "0000000a 0000000200000000 00000003 613d62 ffffffff",
			zab.Message{Type: zab.MsgNewLeader, Zxid: 0x200000000, Data: []byte("a=b")}},
		{"null newleader config", "0000000a 0000000200000000 ffffffff ffffffff",
			zab.Message{Type: zab.MsgNewLeader, Zxid: 0x200000000}},
		{"leaderinfo of another version", "00000011 0000000200000000 00000004 00020000 ffffffff",
			zab.Message{Type: zab.MsgLeaderInfo, Zxid: 0x200000000}},
		{"short request", "00000001 ffffffffffffffff 00000002 0102 00000000",
			zab.Message{Type: zab.MsgRequest, Zxid: zxid.None, Data: []byte{1, 2}}},
		{"request with null authinfo", "00000001 ffffffffffffffff 00000002 0102 ffffffff",
			zab.Message{Type: zab.MsgRequest, Zxid: zxid.None, Data: []byte{1, 2}}},
		{"sync request with authinfo", "00000001 ffffffffffffffff 00000016 0000000000000055 00000007 00000009 " + str("/a") +
			" 00000001 " + str("ip") + " " + str("127.0.0.1"),
			zab.Message{Type: zab.MsgSyncRequest, Zxid: zxid.None, Data: hexBytes(t, "0000000000000055 00000007 00000009 "+str("/a")),
				AuthInfo: hexBytes(t, "00000001 "+str("ip")+" "+str("127.0.0.1"))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeQuorumPacket(hexBytes(t, tc.wire))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m, tc.want) {
				t.Fatalf("got %#v\nwant %#v", m, tc.want)
			}
		})
	}
}

func TestDecodeQuorumPacketErrors(t *testing.T) {
	body := hex.EncodeToString(testSnapshotBody(t))
	tests := []struct {
		name string
		wire string
		want error
	}{
		{"empty", "", ErrMalformed},
		{"truncated header", "00000003 00000001", ErrMalformed},
		{"truncated data", "00000002 0000000100000001 00000003 7478", ErrMalformed},
		{"negative length", "00000002 0000000100000001 fffffffe ffffffff", ErrMalformed},
		{"data over limit", "00000002 0000000100000001 00400001 ffffffff", ErrTooLarge},
		{"trailing bytes", "00000003 0000000100000001 ffffffff ffffffff 00", ErrMalformed},
		{"revalidate of 10 bytes", "00000006 ffffffffffffffff 0000000a 0000000000000001 0000 ffffffff", ErrMalformed},
		{"null revalidate", "00000006 ffffffffffffffff ffffffff ffffffff", ErrMalformed},
		{"commitandactivate of 9 bytes", "00000009 0000000100000001 00000009 000000000000000100 ffffffff", ErrMalformed},
		{"null commitandactivate", "00000009 0000000100000001 ffffffff ffffffff", ErrMalformed},
		{"informandactivate of 7 bytes", "00000013 0000000100000001 00000007 00000000000000 ffffffff", ErrMalformed},
		{"unknown type", "00000064 0000000000000000 ffffffff ffffffff", ErrUnsupported},
		{"learnerinfo of 9 bytes", "0000000b 0000000100000000 00000009 000000000000000300 ffffffff", ErrMalformed},
		{"learnerinfo sid 0", "0000000b 0000000100000000 00000008 0000000000000000 ffffffff", ErrMalformed},
		{"null learnerinfo", "0000000b 0000000100000000 ffffffff ffffffff", ErrMalformed},
		{"leaderinfo of 3 bytes", "00000011 0000000200000000 00000003 000100 ffffffff", ErrMalformed},
		{"ackepoch -2", "00000012 0000000100000003 00000004 fffffffe ffffffff", ErrMalformed},
		{"authinfo count negative", "00000003 0000000100000001 ffffffff fffffff0", ErrMalformed},
		{"snap without body", "0000000f 0000000100000009 ffffffff ffffffff", ErrMalformed},
		{"snap without signature", "0000000f 0000000100000009 ffffffff ffffffff " + body, ErrMalformed},
		{"snap with wrong signature", "0000000f 0000000100000009 ffffffff ffffffff " + body + " " + str("BenWasNotHere"), ErrMalformed},
		{"snap with negative session count", "0000000f 0000000100000009 ffffffff ffffffff ffffffff", ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeQuorumPacket(hexBytes(t, tc.wire))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, %v; want %v", m, err, tc.want)
			}
		})
	}
}

func TestEncodeQuorumPacketErrors(t *testing.T) {
	tests := []struct {
		name string
		msg  zab.Message
		want error
	}{
		{"notification", zab.Message{Type: zab.MsgNotification}, ErrUnsupported},
		{"disconnected", zab.Message{Type: zab.MsgDisconnected}, ErrUnsupported},
		{"sync as request", zab.Message{Type: zab.MsgRequest, Data: canonicalSyncRequest}, ErrMalformed},
		{"revalidate of 3 bytes", zab.Message{Type: zab.MsgRevalidate, Data: []byte("abc")}, ErrMalformed},
		{"sync request that is not a sync", zab.Message{Type: zab.MsgSyncRequest, Data: []byte("abc")}, ErrMalformed},
		{"ackepoch beyond int", zab.Message{Type: zab.MsgAckEpoch, Epoch: 1 << 31}, ErrMalformed},
		{"ackepoch -2", zab.Message{Type: zab.MsgAckEpoch, Epoch: -2}, ErrMalformed},
		{"request with authinfo that is no vector", zab.Message{Type: zab.MsgRequest, Data: []byte{1}, AuthInfo: []byte{0, 0, 0, 1}}, ErrMalformed},
		{"request with bytes after its authinfo", zab.Message{Type: zab.MsgRequest, Data: []byte{1}, AuthInfo: []byte{0, 0, 0, 0, 9}}, ErrMalformed},
		{"followerinfo epoch beyond 32 bits", zab.Message{Type: zab.MsgFollowerInfo, From: 1, Epoch: 1 << 32}, ErrMalformed},
		{"followerinfo without sender", zab.Message{Type: zab.MsgFollowerInfo, Epoch: 1}, ErrMalformed},
		{"snap without body", zab.Message{Type: zab.MsgSnap, Zxid: 1}, ErrMalformed},
		{"snap with a body that is not a snapshot", zab.Message{Type: zab.MsgSnap, Zxid: 1, Data: []byte("gob")}, ErrMalformed},
		{"snap body with trailing bytes", zab.Message{Type: zab.MsgSnap, Zxid: 1, Data: append(testSnapshotBody(t), 0)}, ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := EncodeQuorumPacket(tc.msg)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %x, %v; want %v", b, err, tc.want)
			}
		})
	}
}

func TestNotificationCodec(t *testing.T) {
	m := zab.Message{Type: zab.MsgNotification, From: 1, To: 2, State: zab.Looking, Round: 5,
		Vote: zab.Vote{Leader: 3, Zxid: 0x100000002, Epoch: 1}}
	// The same bytes as FastLeaderElection.buildMsg(0, 3, 0x100000002, 5, 1, new byte[0]) in ZooKeeper 3.8.
	wire := hexBytes(t, "00000000 0000000000000003 0000000100000002 0000000000000005 0000000000000001 00000002 00000000")
	got, err := EncodeNotification(m)
	if err != nil || !bytes.Equal(got, wire) {
		t.Fatalf("encode: %x, %v\nwant %x", got, err, wire)
	}
	observer := zab.Message{Type: zab.MsgNotification, State: zab.Observing, Round: 1<<63 + 1, Vote: zab.Vote{Zxid: zxid.None}}
	withConf := m
	withConf.Data = []byte("server.1=a:1:2:participant\nversion=100000000")
	for _, want := range []zab.Message{m, observer, withConf} {
		b, err := EncodeNotification(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeNotification(b)
		want.From, want.To = 0, 0
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip: %#v, %v\nwant %#v", got, err, want)
		}
	}
}

func withConfig(m zab.Message, text string) zab.Message {
	m.Data = []byte(text)
	return m
}

func TestDecodeNotificationForms(t *testing.T) {
	vote := func(state zab.Role, leader zab.PeerID, z zxid.ID, round uint64, epoch zxid.Epoch) zab.Message {
		return zab.Message{Type: zab.MsgNotification, State: state, Round: round, Vote: zab.Vote{Leader: leader, Zxid: z, Epoch: epoch}}
	}
	tests := []struct {
		name string
		wire string
		want zab.Message
		err  error
	}{
		{"28 bytes: epoch from zxid", "00000001 0000000000000002 0000000300000004 0000000000000007",
			vote(zab.Following, 2, 0x300000004, 7, 3), nil},
		{"40 bytes", "00000002 0000000000000002 0000000300000004 0000000000000007 0000000000000002 00000001",
			vote(zab.Leading, 2, 0x300000004, 7, 2), nil},
		{"with configuration", "00000003 0000000000000002 0000000300000004 0000000000000007 0000000000000002 00000002 00000005 6162636465",
			withConfig(vote(zab.Observing, 2, 0x300000004, 7, 2), "abcde"), nil},
		{"27 bytes", "00000001 0000000000000002 0000000300000004 00000000000000", zab.Message{}, ErrMalformed},
		{"36 bytes", "00000001 0000000000000002 0000000300000004 0000000000000007 00000000", zab.Message{}, ErrMalformed},
		{"state 4", "00000004 0000000000000002 0000000300000004 0000000000000007", zab.Message{}, ErrMalformed},
		{"version 1 with 44 bytes", "00000000 0000000000000002 0000000300000004 0000000000000007 0000000000000002 00000001 00000000", zab.Message{}, ErrMalformed},
		{"config longer than frame", "00000000 0000000000000002 0000000300000004 0000000000000007 0000000000000002 00000002 00000006 6162636465", zab.Message{}, ErrMalformed},
		{"config shorter than frame", "00000000 0000000000000002 0000000300000004 0000000000000007 0000000000000002 00000002 00000004 6162636465", zab.Message{}, ErrMalformed},
		{"null config", "00000000 0000000000000002 0000000300000004 0000000000000007 0000000000000002 00000002 ffffffff", zab.Message{}, ErrMalformed},
		{"a Java observer's: no leader, zxid or epoch", "00000000 8000000000000000 8000000000000000 0000000000000007 8000000000000000 00000002 00000000",
			vote(zab.Looking, math.MinInt64, math.MinInt64, 7, 0), nil},
		{"another negative peer epoch", "00000000 0000000000000002 0000000300000004 0000000000000007 ffffffffffffffff 00000002 00000000", zab.Message{}, ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeNotification(hexBytes(t, tc.wire))
			if !errors.Is(err, tc.err) || (tc.err == nil && !reflect.DeepEqual(got, tc.want)) {
				t.Fatalf("got %#v, %v\nwant %#v, %v", got, err, tc.want, tc.err)
			}
		})
	}
	if _, err := EncodeNotification(zab.Message{Type: zab.MsgNotification, State: 4}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("state 4 encoded: %v", err)
	}
	if _, err := EncodeNotification(zab.Message{Type: zab.MsgAck}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("ACK encoded as a notification: %v", err)
	}
}

func TestElectionHandshake(t *testing.T) {
	wire := hexBytes(t, "ffffffffffff0000 0000000000000002 0000000e "+hex.EncodeToString([]byte("127.0.0.1:3888")))
	got, err := EncodeElectionHandshake(2, "127.0.0.1:3888")
	if err != nil || !bytes.Equal(got, wire) {
		t.Fatalf("encode: %x, %v\nwant %x", got, err, wire)
	}
	tests := []struct {
		name string
		wire string
		sid  zab.PeerID
		addr string
		err  error
	}{
		{"v1", hex.EncodeToString(wire), 2, "127.0.0.1:3888", nil},
		{"v2 with two addresses", "ffffffffffff0001 0000000000000003 00000007 613a317c623a32", 3, "a:1|b:2", nil},
		{"pre-3.5: the sid alone", "0000000000000005", 5, "", nil},
		{"unknown version", "fffffffffffffffd 0000000000000003 00000003 613a31", 0, "", ErrMalformed},
		{"empty address", "ffffffffffff0000 0000000000000003 00000000", 0, "", ErrMalformed},
		{"address over 2048 bytes", "ffffffffffff0000 0000000000000003 00000801", 0, "", ErrMalformed},
		{"truncated address", "ffffffffffff0000 0000000000000003 00000004 613a31", 0, "", ErrMalformed},
		{"trailing bytes", hex.EncodeToString(wire) + "00", 0, "", ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sid, addr, err := DecodeElectionHandshake(hexBytes(t, tc.wire))
			if !errors.Is(err, tc.err) || (tc.err == nil && (sid != tc.sid || addr != tc.addr)) {
				t.Fatalf("got %d %q %v, want %d %q %v", sid, addr, err, tc.sid, tc.addr, tc.err)
			}
		})
	}
	for _, addr := range []string{"", strings.Repeat("a", 2049)} {
		if _, err := EncodeElectionHandshake(1, addr); !errors.Is(err, ErrMalformed) {
			t.Fatalf("address of %d bytes encoded: %v", len(addr), err)
		}
	}
}

func TestElectionFrame(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire string
		want error
	}{
		{"zero length", "00000000", ErrMalformed},
		{"negative length", "ffffffff", ErrMalformed},
		{"over 512 KB", "00080001", ErrTooLarge},
		{"truncated", "00000004 0102", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readElectionFrame(bytes.NewReader(hexBytes(t, tc.wire)), nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	p, err := readElectionFrame(bytes.NewReader(appendElectionFrame(nil, []byte("abc"))), nil)
	if err != nil || string(p) != "abc" {
		t.Fatalf("got %q, %v", p, err)
	}
}
