package zkproto

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"keeper/coordination/jute"
)

// The ops of the docs/zookeeper-protocol.md §2.3 example: [create, check, create, delete].
func exampleMulti() *MultiRequest {
	return &MultiRequest{Ops: []MultiOp{
		{Op: OpCreate, Record: &CreateRequest{Path: "/a", Data: []byte("x"), ACL: OpenACLUnsafe}},
		{Op: OpCheck, Record: &CheckVersionRequest{Path: "/a", Version: 5}},
		{Op: OpCreate2, Record: &CreateRequest{Path: "/b", ACL: []ACL{}, Flags: FlagEphemeral}},
		{Op: OpDelete, Record: &DeleteRequest{Path: "/a", Version: -1}},
	}}
}

// TestMultiBytes pins the multi request and response layouts (docs/zookeeper-protocol.md §2.3).
func TestMultiBytes(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		want  string
	}{
		{
			name:  "multi request",
			frame: EncodeRequest(RequestHeader{Xid: 4, Op: OpMulti}, exampleMulti()),
			want: "00 00 00 04  00 00 00 0e" +
				// create /a "x" world:anyone persistent
				"  00 00 00 01 00 ff ff ff ff  00 00 00 02 '/a  00 00 00 01 'x" +
				"  00 00 00 01  00 00 00 1f  00 00 00 05 'world  00 00 00 06 'anyone  00 00 00 00" +
				// check /a version 5
				"  00 00 00 0d 00 ff ff ff ff  00 00 00 02 '/a  00 00 00 05" +
				// create2 /b null data, empty ACL, ephemeral
				"  00 00 00 0f 00 ff ff ff ff  00 00 00 02 '/b  ff ff ff ff  00 00 00 00  00 00 00 01" +
				// delete /a any version
				"  00 00 00 02 00 ff ff ff ff  00 00 00 02 '/a  ff ff ff ff" +
				"  ff ff ff ff 01 ff ff ff ff",
		},
		{
			name:  "empty multi",
			frame: EncodeRequest(RequestHeader{Xid: 5, Op: OpMulti}, &MultiRequest{}),
			want:  "00 00 00 05  00 00 00 0e  ff ff ff ff 01 ff ff ff ff",
		},
		{
			name:  "failed multi: [error 0, error -103, error -2, error -2]",
			frame: EncodeReply(ReplyHeader{Xid: 4, Zxid: 0x100000005}, FailedMultiResponse(4, 1, CodeBadVersion)),
			want: "00 00 00 04  00 00 00 01 00 00 00 05  00 00 00 00" +
				"  ff ff ff ff 00 00 00 00 00  00 00 00 00" +
				"  ff ff ff ff 00 ff ff ff 99  ff ff ff 99" +
				"  ff ff ff ff 00 ff ff ff fe  ff ff ff fe" +
				"  ff ff ff ff 00 ff ff ff fe  ff ff ff fe" +
				"  ff ff ff ff 01 ff ff ff ff",
		},
		{
			name: "successful multi response",
			frame: jute.Marshal(&MultiResponse{Results: []MultiResult{
				{Op: OpCreate, Record: &CreateResponse{Path: "/q-0000000000"}},
				{Op: OpCheck},
				{Op: OpDelete},
				{Op: OpSetData, Record: &SetDataResponse{Stat: Stat{Version: 1}}},
			}}),
			want: "00 00 00 01 00 00 00 00 00  00 00 00 0d '/q-0000000000" +
				"  00 00 00 0d 00 00 00 00 00" +
				"  00 00 00 02 00 00 00 00 00" +
				"  00 00 00 05 00 00 00 00 00" +
				"  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00" +
				"  00 00 00 00 00 00 00 00  00 00 00 01  00 00 00 00  00 00 00 00" +
				"  00 00 00 00 00 00 00 00  00 00 00 00  00 00 00 00  00 00 00 00 00 00 00 00" +
				"  ff ff ff ff 01 ff ff ff ff",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if want := hx(t, tt.want); !bytes.Equal(tt.frame, want) {
				t.Fatalf("got\n% x\nwant\n% x", tt.frame, want)
			}
		})
	}
}

// TestMultiRoundTrip decodes what it encodes, including an empty multi.
func TestMultiRoundTrip(t *testing.T) {
	for _, m := range []*MultiRequest{exampleMulti(), {}} {
		var got MultiRequest
		if err := jute.Unmarshal(jute.Marshal(m), &got, 0); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&got, m) {
			t.Errorf("got %#v, want %#v", got, m)
		}
	}
	failed := FailedMultiResponse(4, 1, CodeBadVersion)
	var got MultiResponse
	if err := jute.Unmarshal(jute.Marshal(failed), &got, 0); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, failed) {
		t.Errorf("got %#v, want %#v", got, failed)
	}
	wantCodes := []Code{CodeOK, CodeBadVersion, CodeRuntimeInconsistency, CodeRuntimeInconsistency}
	for i, r := range got.Results {
		if r.Op != OpError || r.Err != wantCodes[i] || r.Record.(*ErrorResponse).Err != wantCodes[i] {
			t.Errorf("result %d = %+v, want error %v", i, r, wantCodes[i])
		}
	}
}

// multiEndBytes is the encoded multi terminator.
var multiEndBytes = []byte{0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff}

// TestMultiDecodeBadOp checks that op types outside the §2.3 tables fail
// with ErrMultiBadOp, in requests and in responses.
func TestMultiDecodeBadOp(t *testing.T) {
	for _, op := range []Op{OpExists, OpSetACL, OpGetChildren2, OpMulti, OpPing, OpSync, 0, 999} {
		b := jute.Marshal(&MultiHeader{Type: op, Err: -1})
		b = append(b, jute.Marshal(&GetDataRequest{Path: "/a"})...)
		b = append(b, multiEndBytes...)
		if err := jute.Unmarshal(b, &MultiRequest{}, 0); !errors.Is(err, ErrMultiBadOp) {
			t.Errorf("request op %v: err %v, want ErrMultiBadOp", op, err)
		}
	}
	for _, op := range []Op{OpCreateTTL, OpCreateContainer, OpExists, OpMulti, 0, 999} {
		b := jute.Marshal(&MultiHeader{Type: op})
		b = append(b, multiEndBytes...)
		if err := jute.Unmarshal(b, &MultiResponse{}, 0); !errors.Is(err, ErrMultiBadOp) {
			t.Errorf("result type %v: err %v, want ErrMultiBadOp", op, err)
		}
	}
}

// TestMultiValidate checks the read/write classification the server uses to
// answer MarshallingError.
func TestMultiValidate(t *testing.T) {
	reads := &MultiRequest{Ops: []MultiOp{
		{Op: OpGetData, Record: &GetDataRequest{Path: "/a"}},
		{Op: OpGetChildren, Record: &GetChildrenRequest{Path: "/"}},
	}}
	mixed := &MultiRequest{Ops: append(append([]MultiOp{}, exampleMulti().Ops...), reads.Ops[0])}
	ttl := &MultiRequest{Ops: []MultiOp{{Op: OpCreateTTL, Record: &CreateTTLRequest{Path: "/t"}}}}
	tests := []struct {
		name string
		m    *MultiRequest
		kind Op
		ok   bool
	}{
		{"writes in multi", exampleMulti(), OpMulti, true},
		{"createTTL in multi", ttl, OpMulti, true},
		{"reads in multiRead", reads, OpMultiRead, true},
		{"empty multi", &MultiRequest{}, OpMulti, true},
		{"empty multiRead", &MultiRequest{}, OpMultiRead, true},
		{"reads in multi", reads, OpMulti, false},
		{"writes in multiRead", exampleMulti(), OpMultiRead, false},
		{"mixed in multi", mixed, OpMulti, false},
		{"mixed in multiRead", mixed, OpMultiRead, false},
		{"not a multi opcode", &MultiRequest{}, OpCreate, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.Validate(tt.kind)
			if (err == nil) != tt.ok {
				t.Fatalf("Validate(%v) = %v, want ok=%v", tt.kind, err, tt.ok)
			}
			if err != nil && (CodeOf(err) != CodeMarshallingError || !errors.Is(err, ErrMultiBadOp)) {
				t.Fatalf("error %v: code %v, want MarshallingError wrapping ErrMultiBadOp", err, CodeOf(err))
			}
		})
	}
	for op := range opNames {
		if IsMultiReadOp(op) && IsMultiWriteOp(op) {
			t.Errorf("%v is both a multi read and a multi write op", op)
		}
		if (IsMultiReadOp(op) || IsMultiWriteOp(op)) != (newMultiOpRecord(op) != nil) {
			t.Errorf("%v: classification and decode table disagree", op)
		}
	}
}
