package bkproto

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
)

func TestAddReplyEncodesAsTheResponse(t *testing.T) {
	headers := []*BKPacketHeader{
		NewHeader(OperationType_ADD_ENTRY, 7),
		{Version: ProtocolVersionV3.Enum(), Operation: OperationType_ADD_ENTRY.Enum(), TxnId: proto.Uint64(1 << 40),
			Priority: proto.Uint32(100)},
		{Version: ProtocolVersion(9).Enum(), Operation: OperationType_ADD_ENTRY.Enum(), TxnId: proto.Uint64(3)},
		// Without a txnId or an operation the response is built as a
		// message, which fails to encode (both are required), as
		// AppendAddResponseFrame fails.
		{Operation: OperationType_ADD_ENTRY.Enum()},
		{TxnId: proto.Uint64(5), Priority: proto.Uint32(0)},
	}
	statuses := []StatusCode{StatusCode_EOK, StatusCode_EFENCED, StatusCode_ETOOMANYREQUESTS}
	for _, h := range headers {
		for _, st := range statuses {
			want, wantErr := AppendAddResponseFrame([]byte{1}, h, st, 12, -3)
			r := AddReplyOf(h)
			got, err := r.AppendFrame([]byte{1}, st, 12, -3)
			if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("header %v status %v: AppendFrame gave %x, %v; want %x, %v", h, st, got, err, want, wantErr)
			}
			if resp := r.Response(st, 12, -3); !proto.Equal(resp, NewAddResponse(h, st, 12, -3)) {
				t.Fatalf("header %v status %v: Response gave %v, want %v", h, st, resp, NewAddResponse(h, st, 12, -3))
			}
		}
	}
}

func TestAppendV2AddResponse(t *testing.T) {
	for _, v := range []int8{0, 1, 2} {
		for _, st := range []StatusCode{StatusCode_EOK, StatusCode_EFENCED, StatusCode_EUNKNOWNLEDGERSTATE, StatusCode(-1)} {
			v2 := V2Request{Header: V2Header{Version: v, OpCode: V2AddEntry, Flags: V2FlagRecoveryAdd}, LedgerID: 4, EntryID: 9}
			want, err := AppendV2Response([]byte{7}, v2, NewAddResponse(NewHeader(OperationType_ADD_ENTRY, 0), st, 4, 9))
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendV2AddResponse([]byte{7}, v2, st); !bytes.Equal(got, want) {
				t.Fatalf("version %d status %v: %x, want %x", v, st, got, want)
			}
		}
	}
}
