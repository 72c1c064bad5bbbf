package txn

import (
	"bytes"
	"reflect"
	"testing"

	"keeper/coordination/zkproto"
)

// FuzzUnmarshal feeds arbitrary payloads to the decoder. Whatever decodes
// must re-encode to bytes that decode to the same Txn, and re-encoding is
// then a fixed point.
func FuzzUnmarshal(f *testing.F) {
	seeds := []*Txn{
		{Header: header(zkproto.OpCreateSession), Record: &CreateSession{TimeoutMs: 30000}, Digest: digest},
		{Header: header(zkproto.OpCloseSession), Record: &CloseSession{Paths: []string{"/e"}}, Digest: digest},
		{Header: header(zkproto.OpCloseSession), Record: &CloseSession{NoBody: true}},
		{Header: header(zkproto.OpError), Record: &Error{Err: -110}},
		{Header: header(zkproto.OpCreate), Record: &Create{Path: "/v", ACL: worldAll, V0: true, ParentCversion: -1}},
		{Header: header(zkproto.OpCreateTTL), Record: &CreateTTL{Path: "/t", TTL: 5}, Digest: digest},
		{Header: header(zkproto.OpSetACL), Record: &SetACL{Path: "/a", ACL: worldAll}},
		{Header: header(zkproto.OpMulti), Record: &Multi{Ops: []Op{
			{Type: zkproto.OpCreate2, Record: &Create{Path: "/m", Data: []byte{}, ParentCversion: 1}},
			{Type: zkproto.OpCheck, Record: &CheckVersion{Path: "/m"}},
			{Type: zkproto.OpSetData, Record: &SetData{Path: "/m", Data: []byte("x"), Version: 1}},
			{Type: zkproto.OpError, Record: &Error{Err: -2}},
		}}, Digest: digest},
	}
	for _, s := range seeds {
		f.Add(Marshal(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		t1, err := Unmarshal(payload, 1<<16)
		if err != nil {
			return
		}
		b1 := Marshal(t1)
		t2, err := Unmarshal(b1, 1<<16)
		if err != nil {
			t.Fatalf("re-decode of % x failed: %v (first decode %+v)", b1, err, t1)
		}
		if !reflect.DeepEqual(t1, t2) {
			t.Fatalf("round trip changed %+v into %+v", t1, t2)
		}
		if b2 := Marshal(t2); !bytes.Equal(b1, b2) {
			t.Fatalf("re-encoding is not stable:\n% x\n% x", b1, b2)
		}
	})
}
