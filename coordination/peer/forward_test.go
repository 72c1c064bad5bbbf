package peer

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
)

const testMaxBuf = jute.DefaultMaxBuffer + 1024

// clientWrite is what a learner's core forwards for a client's request:
// the frame decoded as clientconn decodes it.
func clientWrite(t *testing.T, sid int64, xid int32, op zkproto.Op, body jute.Record, ids []zkproto.ID) zkcore.Forward {
	t.Helper()
	e := jute.Encoder{}
	e.Int(xid)
	e.Int(int32(op))
	if body != nil {
		body.Encode(&e)
	}
	r, err := zkcore.DecodeRequest(e.B, testMaxBuf)
	if err != nil {
		t.Fatal(err)
	}
	return zkcore.Forward{SessionID: sid, Cxid: xid, Op: op, Body: r.Body, Raw: r.Raw, Bad: r.Bad, IDs: ids}
}

// Every write a client can send through a follower goes to the leader in
// Apache ZooKeeper's REQUEST layout — the client's body, unprefixed, after
// session, cxid and op — with the client's identities as authinfo, and
// decodes on the leader to the same request (docs/zookeeper-protocol.md
// §10.3).
func TestForwardEveryWrite(t *testing.T) {
	acl := zkproto.OpenACLUnsafe
	ids := []zkproto.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "digest", ID: "u:x"}}
	tests := []struct {
		name string
		op   zkproto.Op
		body jute.Record
	}{
		{"create", zkproto.OpCreate, &zkproto.CreateRequest{Path: "/a", Data: []byte("x"), ACL: acl, Flags: zkproto.FlagEphemeralSequential}},
		{"create null data", zkproto.OpCreate, &zkproto.CreateRequest{Path: "/a", ACL: acl}},
		{"create2", zkproto.OpCreate2, &zkproto.CreateRequest{Path: "/b", Data: []byte{}, ACL: acl}},
		{"createContainer", zkproto.OpCreateContainer, &zkproto.CreateRequest{Path: "/c", ACL: acl, Flags: zkproto.FlagContainer}},
		{"createTTL", zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{Path: "/t", Data: []byte("y"), ACL: acl,
			Flags: zkproto.FlagPersistentWithTTL, TTLMs: 5000}},
		{"delete", zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/a", Version: 3}},
		{"setData", zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/a", Data: []byte("z"), Version: -1}},
		{"setACL", zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/a", ACL: acl, Version: 0}},
		{"multi with check", zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpCheck, Record: &zkproto.CheckVersionRequest{Path: "/a", Version: 1}},
			{Op: zkproto.OpCreate, Record: &zkproto.CreateRequest{Path: "/a/b", ACL: acl}},
			{Op: zkproto.OpSetData, Record: &zkproto.SetDataRequest{Path: "/a", Data: []byte("d"), Version: -1}},
			{Op: zkproto.OpDelete, Record: &zkproto.DeleteRequest{Path: "/x", Version: -1}},
		}}},
		{"closeSession", zkproto.OpCloseSession, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := clientWrite(t, 0x1000000abc, 7, tc.op, tc.body, ids)
			if f.Bad {
				t.Fatal("the client's request did not decode")
			}
			data, auth := EncodeForward(f)
			// Java's layout: 16 header bytes, then the client's body.
			var want jute.Encoder
			want.Long(0x1000000abc)
			want.Int(7)
			want.Int(int32(tc.op))
			if tc.body != nil {
				tc.body.Encode(&want)
			}
			if !bytes.Equal(data, want.B) {
				t.Fatalf("REQUEST data\n got %x\nwant %x", data, want.B)
			}
			wantAuth := "00000002 " + jstr("ip") + jstr("127.0.0.1") + jstr("digest") + jstr("u:x")
			if got := hex.EncodeToString(auth); got != strings.ReplaceAll(wantAuth, " ", "") {
				t.Fatalf("authinfo %s, want %s", got, wantAuth)
			}
			got, err := DecodeForward(data, auth, testMaxBuf)
			if err != nil {
				t.Fatal(err)
			}
			f.Raw, got.Raw = nil, nil
			if !reflect.DeepEqual(got, f) {
				t.Fatalf("decoded\n got %#v\nwant %#v", got, f)
			}
		})
	}
}

// jstr is a jute ustring in hex.
func jstr(s string) string {
	e := jute.Encoder{}
	e.String(s)
	return hex.EncodeToString(e.B)
}

// A createSession goes as Apache ZooKeeper's learner sends it: a 4-byte
// timeout body and no identities.
func TestForwardCreateSession(t *testing.T) {
	f := zkcore.Forward{SessionID: 0x200000001, Op: zkproto.OpCreateSession, Body: &txn.CreateSession{TimeoutMs: 30000}}
	data, auth := EncodeForward(f)
	if want := "0000000200000001 00000000 fffffff6 00007530"; hex.EncodeToString(data) != strings.ReplaceAll(want, " ", "") {
		t.Fatalf("data %x, want %s", data, want)
	}
	if hex.EncodeToString(auth) != "00000000" {
		t.Fatalf("authinfo %x", auth)
	}
	got, err := DecodeForward(data, nil, testMaxBuf)
	if err != nil || !reflect.DeepEqual(got, f) {
		t.Fatalf("decoded %#v, %v", got, err)
	}
}

// A body the learner could not decode reaches the leader as the client
// sent it, and fails there too: MarshallingError, as on a Java leader.
func TestForwardBadBody(t *testing.T) {
	e := jute.Encoder{}
	e.Int(9)
	e.Int(int32(zkproto.OpCreate))
	e.Int(100) // a path length with nothing behind it
	r, err := zkcore.DecodeRequest(e.B, testMaxBuf)
	if err != nil || !r.Bad {
		t.Fatalf("the learner decoded %+v, %v", r, err)
	}
	f := zkcore.Forward{SessionID: 5, Cxid: 9, Op: zkproto.OpCreate, Raw: r.Raw, Bad: true}
	data, auth := EncodeForward(f)
	got, err := DecodeForward(data, auth, testMaxBuf)
	if err != nil || !got.Bad || got.Body != nil {
		t.Fatalf("the leader decoded %#v, %v", got, err)
	}
}

func TestDecodeForwardErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		data, auth string
	}{
		{"short header", "0000000000000005 00000001", ""},
		{"op a client may not send", "0000000000000005 00000001 ffffffff", ""},
		{"createSession without timeout", "0000000000000005 00000000 fffffff6 0000", ""},
		{"authinfo cut short", "0000000000000005 00000001 fffffff5", "00000001 00000002 6970"},
		{"bytes after the authinfo", "0000000000000005 00000001 fffffff5", "00000000 00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := hex.DecodeString(strings.ReplaceAll(tc.data, " ", ""))
			auth, _ := hex.DecodeString(strings.ReplaceAll(tc.auth, " ", ""))
			if tc.auth == "" {
				auth = nil
			}
			if f, err := DecodeForward(data, auth, testMaxBuf); !errors.Is(err, ErrBadForward) {
				t.Fatalf("got %#v, %v", f, err)
			}
		})
	}
}

// FuzzDecodeForward feeds arbitrary REQUEST data and authinfo to the
// leader's decoder: an error is fine, a panic is not, and what decodes
// must encode back to a request that decodes the same.
func FuzzDecodeForward(f *testing.F) {
	e := jute.Encoder{}
	e.Long(5)
	e.Int(1)
	e.Int(int32(zkproto.OpCreate))
	(&zkproto.CreateRequest{Path: "/a", ACL: zkproto.OpenACLUnsafe}).Encode(&e)
	f.Add(e.B, []byte{0, 0, 0, 1, 0, 0, 0, 2, 'i', 'p', 0, 0, 0, 1, '1'})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xf6, 0, 0, 0x75, 0x30}, []byte(nil))
	f.Fuzz(func(t *testing.T, data, auth []byte) {
		got, err := DecodeForward(data, auth, testMaxBuf)
		if err != nil {
			return
		}
		d2, a2 := EncodeForward(got)
		again, err := DecodeForward(d2, a2, testMaxBuf)
		if err != nil {
			t.Fatalf("re-encoded forward does not decode: %v", err)
		}
		got.Raw, again.Raw = nil, nil
		if len(got.IDs) == 0 {
			got.IDs = nil
		}
		if len(again.IDs) == 0 {
			again.IDs = nil
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("round trip\n got %#v\nwant %#v", again, got)
		}
	})
}
