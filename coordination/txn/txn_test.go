package txn

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// hx turns the notation of docs/zookeeper-protocol.md into bytes: hex groups, quoted ASCII
// ("/e") and '|' separators, which are ignored.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	var out []byte
	for _, tok := range strings.Fields(s) {
		switch {
		case tok == "|":
		case strings.HasPrefix(tok, `"`):
			out = append(out, strings.Trim(tok, `"`)...)
		default:
			b, err := hex.DecodeString(tok)
			if err != nil {
				t.Fatalf("bad hex %q: %v", tok, err)
			}
			out = append(out, b...)
		}
	}
	return out
}

// hdr is the header hex for session 0x0100000000000001, cxid 5,
// zxid 0x100000002, time 0x18a0b0c0d0e and the given type.
func hdr(typ string) string {
	return "0100000000000001 00000005 0000000100000002 0000018a0b0c0d0e " + typ
}

func header(op zkproto.Op) Header {
	return Header{ClientID: 0x0100000000000001, Cxid: 5, Zxid: zxid.Make(1, 2), Time: 0x18a0b0c0d0e, Type: op}
}

var (
	worldAll  = []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: "world", ID: "anyone"}}}
	worldAllX = `00000001 0000001f 00000005 "world" 00000006 "anyone"`
	digest    = &Digest{Version: 2, TreeDigest: 46958630889}
	digestX   = "00000002 0000000aeef3d7e9"
)

func TestPayloadBytes(t *testing.T) {
	tests := []struct {
		name string
		txn  Txn
		want string
	}{
		{
			name: "createSession with digest (documented: 48 bytes)",
			txn:  Txn{Header: header(zkproto.OpCreateSession), Record: &CreateSession{TimeoutMs: 30000}, Digest: digest},
			want: hdr("fffffff6") + " | 00007530 | " + digestX,
		},
		{
			name: "closeSession with paths (documented example body)",
			txn: Txn{Header: header(zkproto.OpCloseSession),
				Record: &CloseSession{Paths: []string{"/e", "/e20000000003"}}, Digest: digest},
			want: hdr("fffffff5") + ` | 00000002 | 00000002 "/e" | 0000000d "/e20000000003" | ` + digestX,
		},
		{
			name: "closeSession without body (pre-3.6)",
			txn:  Txn{Header: header(zkproto.OpCloseSession), Record: &CloseSession{NoBody: true}},
			want: hdr("fffffff5"),
		},
		{
			name: "closeSession without body but with digest",
			txn:  Txn{Header: header(zkproto.OpCloseSession), Record: &CloseSession{NoBody: true}, Digest: digest},
			want: hdr("fffffff5") + " | " + digestX,
		},
		{
			name: "closeSession with empty path list",
			txn:  Txn{Header: header(zkproto.OpCloseSession), Record: &CloseSession{Paths: []string{}}, Digest: digest},
			want: hdr("fffffff5") + " | 00000000 | " + digestX,
		},
		{
			name: "error txn has no digest",
			txn:  Txn{Header: header(zkproto.OpError), Record: &Error{Err: int32(zkproto.CodeNodeExists)}},
			want: hdr("ffffffff") + " | ffffff92",
		},
		{
			name: "create with null data",
			txn: Txn{Header: header(zkproto.OpCreate), Record: &Create{Path: "/a", Data: nil,
				ACL: worldAll, Ephemeral: true, ParentCversion: 3}, Digest: digest},
			want: hdr("00000001") + ` | 00000002 "/a" ffffffff ` + worldAllX + " 01 00000003 | " + digestX,
		},
		{
			name: "create2 with empty data and empty ACL list",
			txn: Txn{Header: header(zkproto.OpCreate2), Record: &Create{Path: "/b", Data: []byte{},
				ACL: []zkproto.ACL{}, ParentCversion: 1}},
			want: hdr("0000000f") + ` | 00000002 "/b" 00000000 00000000 00 00000001`,
		},
		{
			name: "pre-3.3 CreateTxnV0",
			txn: Txn{Header: header(zkproto.OpCreate), Record: &Create{Path: "/v", Data: []byte("x"),
				ACL: worldAll, ParentCversion: -1, V0: true}},
			want: hdr("00000001") + ` | 00000002 "/v" 00000001 "x" ` + worldAllX + " 00",
		},
		{
			name: "createContainer",
			txn: Txn{Header: header(zkproto.OpCreateContainer), Record: &CreateContainer{Path: "/c",
				Data: []byte("d"), ACL: worldAll, ParentCversion: 7}, Digest: digest},
			want: hdr("00000013") + ` | 00000002 "/c" 00000001 "d" ` + worldAllX + " 00000007 | " + digestX,
		},
		{
			name: "createTTL",
			txn: Txn{Header: header(zkproto.OpCreateTTL), Record: &CreateTTL{Path: "/t",
				Data: nil, ACL: worldAll, ParentCversion: 2, TTL: 60000}},
			want: hdr("00000015") + ` | 00000002 "/t" ffffffff ` + worldAllX + " 00000002 000000000000ea60",
		},
		{
			name: "deleteContainer",
			txn:  Txn{Header: header(zkproto.OpDeleteContainer), Record: &Delete{Path: "/c"}, Digest: digest},
			want: hdr("00000014") + ` | 00000002 "/c" | ` + digestX,
		},
		{
			name: "reconfig is a setData record",
			txn: Txn{Header: header(zkproto.OpReconfig), Record: &SetData{Path: "/zookeeper/config",
				Data: []byte("v"), Version: 4}},
			want: hdr("00000010") + ` | 00000011 "/zookeeper/config" 00000001 "v" 00000004`,
		},
		{
			name: "setACL",
			txn:  Txn{Header: header(zkproto.OpSetACL), Record: &SetACL{Path: "/a", ACL: worldAll, Version: 1}},
			want: hdr("00000007") + ` | 00000002 "/a" ` + worldAllX + " 00000001",
		},
		{
			name: "failed multi: error sub-txns 0, -103, -2, -2",
			txn: Txn{Header: header(zkproto.OpMulti), Record: &Multi{Ops: []Op{
				{Type: zkproto.OpError, Record: &Error{Err: 0}},
				{Type: zkproto.OpError, Record: &Error{Err: int32(zkproto.CodeBadVersion)}},
				{Type: zkproto.OpError, Record: &Error{Err: int32(zkproto.CodeRuntimeInconsistency)}},
				{Type: zkproto.OpError, Record: &Error{Err: int32(zkproto.CodeRuntimeInconsistency)}},
			}}},
			want: hdr("0000000e") + " | 00000004 | ffffffff 00000004 00000000 | ffffffff 00000004 ffffff99" +
				" | ffffffff 00000004 fffffffe | ffffffff 00000004 fffffffe",
		},
		{
			name: "multi with create, check and delete",
			txn: Txn{Header: header(zkproto.OpMulti), Record: &Multi{Ops: []Op{
				{Type: zkproto.OpCreate, Record: &Create{Path: "/m", ACL: worldAll, ParentCversion: 9}},
				{Type: zkproto.OpCheck, Record: &CheckVersion{Path: "/m", Version: 1}},
				{Type: zkproto.OpDelete, Record: &Delete{Path: "/m"}},
			}}, Digest: digest},
			want: hdr("0000000e") + ` | 00000003 | 00000001 0000002a 00000002 "/m" ffffffff ` + worldAllX +
				` 00 00000009 | 0000000d 0000000a 00000002 "/m" 00000001 | 00000002 00000006 00000002 "/m" | ` + digestX,
		},
		{
			name: "empty multi",
			txn:  Txn{Header: header(zkproto.OpMulti), Record: &Multi{Ops: []Op{}}, Digest: digest},
			want: hdr("0000000e") + " | 00000000 | " + digestX,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := hx(t, tc.want)
			got := Marshal(&tc.txn)
			if !bytes.Equal(got, want) {
				t.Fatalf("Marshal:\n got % x\nwant % x", got, want)
			}
			back, err := Unmarshal(want, 0)
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(back, &tc.txn) {
				t.Fatalf("Unmarshal = %+v, want %+v", back, &tc.txn)
			}
		})
	}
}

func TestCreateSessionIs48Bytes(t *testing.T) {
	p := Marshal(&Txn{Header: header(zkproto.OpCreateSession), Record: &CreateSession{TimeoutMs: 4000},
		Digest: &Digest{Version: DigestVersion}})
	if len(p) != 48 {
		t.Fatalf("createSession payload is %d bytes, want 48", len(p))
	}
}

func TestUnmarshalErrors(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		want    error
	}{
		{"short header", "0100000000000001 00000005", jute.ErrShort},
		{"check outside multi", hdr("0000000d") + ` 00000002 "/a" 00000001`, ErrUnknownType},
		{"getData is not a txn", hdr("00000004") + ` 00000002 "/a" 00`, ErrUnknownType},
		{"setACL inside multi", hdr("0000000e") + ` 00000001 00000007 0000000a 00000002 "/a" ffffffff 00000001`, ErrUnknownType},
		{"trailing bytes after digest", hdr("ffffffff") + " 00000000 " + digestX + " 00", jute.ErrTrailing},
		{"partial digest", hdr("fffffff6") + " 00007530 00000002 0000", jute.ErrShort},
		{"V1 create with 8 stray bytes", hdr("00000001") + ` 00000002 "/a" ffffffff ffffffff 00 00000001 0000000000000000`, jute.ErrShort},
		{"null multi vector", hdr("0000000e") + " ffffffff", errNullMulti},
		{"null sub-txn buffer", hdr("0000000e") + " 00000001 ffffffff ffffffff", errNullMulti},
		{"sub-record with trailing bytes", hdr("0000000e") + " 00000001 ffffffff 00000005 00000000 00", jute.ErrTrailing},
		{"huge string length", hdr("00000002") + " 7fffffff", jute.ErrLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Unmarshal(hx(t, tc.payload), 0)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCloseSessionBareDigestAmbiguity(t *testing.T) {
	// 12 bytes that parse completely as a body (two empty paths) are a body,
	// not a digest: a parseable record always wins.
	p := hx(t, hdr("fffffff5")+" 00000002 00000000 00000000")
	got, err := Unmarshal(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := &CloseSession{Paths: []string{"", ""}}
	if !reflect.DeepEqual(got.Record, want) || got.Digest != nil {
		t.Fatalf("got %+v digest %v, want %+v and no digest", got.Record, got.Digest, want)
	}
}

func TestMaxLenBoundsSubRecords(t *testing.T) {
	p := Marshal(&Txn{Header: header(zkproto.OpMulti), Record: &Multi{Ops: []Op{
		{Type: zkproto.OpSetData, Record: &SetData{Path: "/a", Data: make([]byte, 100)}},
	}}})
	if _, err := Unmarshal(p, 64); !errors.Is(err, jute.ErrLength) {
		t.Fatalf("maxLen 64: err = %v, want ErrLength", err)
	}
	if _, err := Unmarshal(p, 200); err != nil {
		t.Fatalf("maxLen 200: %v", err)
	}
}
