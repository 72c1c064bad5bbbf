package zkproto

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"keeper/coordination/jute"
)

// TestFrameBytes pins exact frames from docs/zookeeper-protocol.md and the rules for reply
// bodies (docs/zookeeper-protocol.md §1.4, §1.5, §3.3, §3.5, §7.5).
func TestFrameBytes(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		want  string
	}{
		{
			name: "notification NodeDataChanged /foo, 3.8 style (docs/zookeeper-protocol.md §3.3)",
			frame: AppendReplyFrame(nil, ReplyHeader{Xid: XidNotification, Zxid: -1},
				&WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/foo"}),
			want: "00 00 00 20  ff ff ff ff  ff ff ff ff ff ff ff ff  00 00 00 00" +
				"  00 00 00 03  00 00 00 03  00 00 00 04 2f 66 6f 6f",
		},
		{
			name: "error reply has no body even if a record is passed",
			frame: AppendReplyFrame(nil, ReplyHeader{Xid: 5, Zxid: 0x100000007, Err: CodeNoNode},
				&GetDataResponse{Data: []byte("x"), Stat: sampleStat}),
			want: "00 00 00 10  00 00 00 05  00 00 00 01 00 00 00 07  ff ff ff 9b",
		},
		{
			name:  "ping request",
			frame: AppendRequestFrame(nil, RequestHeader{Xid: XidPing, Op: OpPing}, nil),
			want:  "00 00 00 08  ff ff ff fe  00 00 00 0b",
		},
		{
			name:  "ping reply",
			frame: AppendReplyFrame(nil, ReplyHeader{Xid: XidPing, Zxid: 2}, nil),
			want:  "00 00 00 10  ff ff ff fe  00 00 00 00 00 00 00 02  00 00 00 00",
		},
		{
			name:  "addWatch reply carries ErrorResponse{0}",
			frame: AppendReplyFrame(nil, ReplyHeader{Xid: 3, Zxid: 2}, &ErrorResponse{Err: CodeOK}),
			want:  "00 00 00 14  00 00 00 03  00 00 00 00 00 00 00 02  00 00 00 00  00 00 00 00",
		},
		{
			name: "auth digest user:pass (docs/zookeeper-protocol.md §7.5)",
			frame: AppendRequestFrame(nil, RequestHeader{Xid: XidAuth, Op: OpAuth},
				&AuthPacket{Scheme: "digest", Auth: []byte("user:pass")}),
			want: "00 00 00 23  ff ff ff fc  00 00 00 64  00 00 00 00  00 00 00 06 'digest  00 00 00 09 'user:pass",
		},
		{
			name: "create with null data and world:anyone",
			frame: AppendRequestFrame(nil, RequestHeader{Xid: 1, Op: OpCreate},
				&CreateRequest{Path: "/a", ACL: OpenACLUnsafe, Flags: FlagEphemeralSequential}),
			want: "00 00 00 31  00 00 00 01  00 00 00 01  00 00 00 02 '/a  ff ff ff ff" +
				"  00 00 00 01  00 00 00 1f  00 00 00 05 'world  00 00 00 06 'anyone  00 00 00 03",
		},
		{
			name: "getData reply with null data",
			frame: AppendReplyFrame(nil, ReplyHeader{Xid: 2, Zxid: 1},
				&GetDataResponse{Stat: Stat{Czxid: 1, Mzxid: 1, Pzxid: 1}}),
			want: "00 00 00 58  00 00 00 02  00 00 00 00 00 00 00 01  00 00 00 00  ff ff ff ff" +
				"  00 00 00 00 00 00 00 01  00 00 00 00 00 00 00 01  00 00 00 00 00 00 00 00" +
				"  00 00 00 00 00 00 00 00  00 00 00 00  00 00 00 00  00 00 00 00" +
				"  00 00 00 00 00 00 00 00  00 00 00 00  00 00 00 00  00 00 00 00 00 00 00 01",
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

// TestNewRequestContract checks NewRequest for every named opcode and a
// few unnamed ones.
func TestNewRequestContract(t *testing.T) {
	samples := sampleRequests()
	ops := []Op{0, 10, 23, 99, 108, 999, -2}
	for op := range opNames {
		ops = append(ops, op)
	}
	for _, op := range ops {
		rec, ok := NewRequest(op)
		sample, known := samples[op]
		if ok != known {
			t.Errorf("NewRequest(%v) known=%v, want %v", op, ok, known)
			continue
		}
		if reflect.TypeOf(rec) != reflect.TypeOf(sample) {
			t.Errorf("NewRequest(%v) = %T, want %T", op, rec, sample)
		}
	}
	for _, op := range []Op{OpPing, OpWhoAmI, OpCloseSession} {
		if rec, ok := NewRequest(op); rec != nil || !ok {
			t.Errorf("NewRequest(%v) = %v, %v; want nil, true", op, rec, ok)
		}
	}
	if a, _ := NewRequest(OpCreate); a == jute.Record(nil) {
		t.Fatal("nil create record")
	} else if b, _ := NewRequest(OpCreate); a == b {
		t.Error("NewRequest returned a shared record")
	}
}

// TestNewResponseContract checks NewResponse against the docs/zookeeper-protocol.md §2.1 table.
func TestNewResponseContract(t *testing.T) {
	samples := sampleResponses()
	empty := []Op{OpDelete, OpPing, OpCheckWatches, OpRemoveWatches, OpDeleteContainer,
		OpAuth, OpSetWatches, OpSetWatches2, OpCloseSession}
	for _, op := range empty {
		if rec, ok := NewResponse(op); rec != nil || !ok {
			t.Errorf("NewResponse(%v) = %v, %v; want nil, true", op, rec, ok)
		}
	}
	for _, op := range []Op{OpNotification, OpCheck, OpCreateSession, OpError, 10, 999} {
		if rec, ok := NewResponse(op); rec != nil || ok {
			t.Errorf("NewResponse(%v) = %v, %v; want nil, false", op, rec, ok)
		}
	}
	for op, sample := range samples {
		rec, ok := NewResponse(op)
		if !ok || reflect.TypeOf(rec) != reflect.TypeOf(sample) {
			t.Errorf("NewResponse(%v) = %T, %v; want %T", op, rec, ok, sample)
		}
	}
	if got, want := len(samples)+len(empty), len(responseRecords); got != want {
		t.Errorf("tests cover %d response ops, table has %d", got, want)
	}
}

// TestRequestRoundTrip encodes a populated request for every opcode and
// decodes it back.
func TestRequestRoundTrip(t *testing.T) {
	for op, rec := range sampleRequests() {
		t.Run(op.String(), func(t *testing.T) {
			h := RequestHeader{Xid: 42, Op: op}
			payload := EncodeRequest(h, rec)
			if framed := AppendRequestFrame([]byte("prefix"), h, rec); !bytes.Equal(framed, AppendFrame([]byte("prefix"), payload)) {
				t.Fatalf("AppendRequestFrame differs from AppendFrame(EncodeRequest)")
			}
			gotH, gotRec, err := DecodeRequest(payload, 0)
			if err != nil {
				t.Fatal(err)
			}
			if gotH != h || !reflect.DeepEqual(gotRec, rec) {
				t.Fatalf("decoded %+v %#v, want %+v %#v", gotH, gotRec, h, rec)
			}
		})
	}
}

// TestReplyRoundTrip encodes a populated success reply for every opcode with
// a reply body and decodes it with DecodeReply.
func TestReplyRoundTrip(t *testing.T) {
	for op, rec := range sampleResponses() {
		t.Run(op.String(), func(t *testing.T) {
			h := ReplyHeader{Xid: 42, Zxid: 0x100000009}
			payload := EncodeReply(h, rec)
			if framed := AppendReplyFrame(nil, h, rec); !bytes.Equal(framed, AppendFrame(nil, payload)) {
				t.Fatalf("AppendReplyFrame differs from AppendFrame(EncodeReply)")
			}
			gotH, gotRec, err := DecodeReply(payload, op, 0)
			if err != nil {
				t.Fatal(err)
			}
			if gotH != h || !reflect.DeepEqual(gotRec, rec) {
				t.Fatalf("decoded %+v %#v, want %+v %#v", gotH, gotRec, h, rec)
			}
		})
	}
}

// TestDecodeReplySpecialCases covers notifications, error replies, empty
// bodies and unknown ops on the client side.
func TestDecodeReplySpecialCases(t *testing.T) {
	ev := &WatcherEvent{Type: EventNodeCreated, State: StateSyncConnected, Path: "/x"}
	h, rec, err := DecodeReply(EncodeReply(ReplyHeader{Xid: XidNotification, Zxid: 3}, ev), OpPing, 0)
	if err != nil || h.Xid != XidNotification || !reflect.DeepEqual(rec, ev) {
		t.Errorf("notification: %+v %#v %v", h, rec, err)
	}
	bad := append(EncodeReply(ReplyHeader{Xid: XidNotification, Err: CodeNoNode}, nil), jute.Marshal(ev)...)
	if _, _, err = DecodeReply(bad, OpPing, 0); !errors.Is(err, ErrMarshallingError) {
		t.Errorf("notification with err: %v, want MarshallingError", err)
	}
	h, rec, err = DecodeReply(EncodeReply(ReplyHeader{Xid: 1, Err: CodeNoNode}, nil), OpGetData, 0)
	if err != nil || h.Err != CodeNoNode || rec != nil {
		t.Errorf("error reply: %+v %#v %v", h, rec, err)
	}
	if _, rec, err = DecodeReply(EncodeReply(ReplyHeader{Xid: 1}, nil), OpDelete, 0); err != nil || rec != nil {
		t.Errorf("delete reply: %#v %v", rec, err)
	}
	if _, _, err = DecodeReply(EncodeReply(ReplyHeader{Xid: 1}, nil), OpGetData, 0); !errors.Is(err, jute.ErrShort) {
		t.Errorf("getData reply without body: %v", err)
	}
	if _, _, err = DecodeReply(EncodeReply(ReplyHeader{Xid: 1}, nil), 999, 0); !errors.Is(err, ErrUnimplemented) {
		t.Errorf("unknown op: %v", err)
	}
	if _, _, err = DecodeReplyHeader(make([]byte, 15)); !errors.Is(err, jute.ErrShort) {
		t.Errorf("short header: %v", err)
	}
	h, body, err := DecodeReplyHeader(hx(t, "00 00 00 01  00 00 00 00 00 00 00 02  ff ff ff f8  aa bb"))
	if err != nil || h != (ReplyHeader{Xid: 1, Zxid: 2, Err: CodeBadArguments}) || !bytes.Equal(body, []byte{0xaa, 0xbb}) {
		t.Errorf("DecodeReplyHeader: %+v % x %v", h, body, err)
	}
}

// TestDecodeRequestErrors checks that each kind of bad request yields the
// error class the server branches on (see DecodeRequest).
func TestDecodeRequestErrors(t *testing.T) {
	tests := []struct {
		name     string
		frame    []byte
		maxLen   int
		wantIs   []error
		wantCode Code
		wantXid  int32
	}{
		{
			name: "short header", frame: hx(t, "00 00 00 01  00 00 00"),
			wantIs: []error{jute.ErrShort}, wantCode: CodeSystemError,
		},
		{
			name: "unknown opcode", frame: hx(t, "00 00 00 07  00 00 03 e7"),
			wantIs: []error{ErrUnimplemented}, wantCode: CodeUnimplemented, wantXid: 7,
		},
		{
			name: "opcode 10", frame: hx(t, "00 00 00 07  00 00 00 0a"),
			wantIs: []error{ErrUnimplemented}, wantCode: CodeUnimplemented, wantXid: 7,
		},
		{
			name: "createSession from a client", frame: hx(t, "00 00 00 07  ff ff ff f6"),
			wantIs: []error{ErrUnimplemented}, wantCode: CodeUnimplemented, wantXid: 7,
		},
		{
			name: "truncated body", frame: hx(t, "00 00 00 08  00 00 00 04  00 00 00 02 '/a"),
			wantIs: []error{ErrMarshallingError, jute.ErrShort}, wantCode: CodeMarshallingError, wantXid: 8,
		},
		{
			name: "path over maxLen", frame: hx(t, "00 00 00 09  00 00 00 03  00 00 00 05 '/abcd 00"), maxLen: 4,
			wantIs: []error{ErrMarshallingError, jute.ErrLength}, wantCode: CodeMarshallingError, wantXid: 9,
		},
		{
			name:   "ping inside multi",
			frame:  hx(t, "00 00 00 0a  00 00 00 0e  00 00 00 0b 00 ff ff ff ff  ff ff ff ff 01 ff ff ff ff"),
			wantIs: []error{ErrMarshallingError, ErrMultiBadOp}, wantCode: CodeMarshallingError, wantXid: 10,
		},
		{
			name:   "multi without terminator",
			frame:  hx(t, "00 00 00 0b  00 00 00 0e  00 00 00 0d 00 ff ff ff ff  00 00 00 02 '/a 00 00 00 01"),
			wantIs: []error{ErrMarshallingError, jute.ErrShort}, wantCode: CodeMarshallingError, wantXid: 11,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, rec, err := DecodeRequest(tt.frame, tt.maxLen)
			if err == nil {
				t.Fatalf("decoded %+v %#v without error", h, rec)
			}
			for _, target := range tt.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("error %q does not wrap %v", err, target)
				}
			}
			if got := CodeOf(err); got != tt.wantCode {
				t.Errorf("CodeOf = %v, want %v", got, tt.wantCode)
			}
			if h.Xid != tt.wantXid || rec != nil {
				t.Errorf("got header %+v record %#v, want xid %d and no record", h, rec, tt.wantXid)
			}
		})
	}
}

// TestDecodeRequestIgnoresTrailingBytes mirrors the Java server, which reads
// the record it expects and ignores anything after it.
func TestDecodeRequestIgnoresTrailingBytes(t *testing.T) {
	frame := append(EncodeRequest(RequestHeader{Xid: 1, Op: OpSync}, &SyncRequest{Path: "/a"}), 1, 2, 3)
	_, rec, err := DecodeRequest(frame, 0)
	if err != nil || !reflect.DeepEqual(rec, &SyncRequest{Path: "/a"}) {
		t.Fatalf("got %#v, %v", rec, err)
	}
	_, rec, err = DecodeRequest(hx(t, "ff ff ff fe  00 00 00 0b  ff"), 0)
	if err != nil || rec != nil {
		t.Fatalf("ping with a trailing byte: %#v, %v", rec, err)
	}
}
