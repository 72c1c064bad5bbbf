package ledger

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
)

// roundTrip marshals a request and decodes it as a bookie would.
func roundTrip(t *testing.T, req *bkproto.Request) *bkproto.Request {
	t.Helper()
	frame, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bkproto.DecodeRequest(frame)
	if err != nil {
		t.Fatalf("bookie rejects %v: %v", req, err)
	}
	return got
}

func TestAddRequestProto(t *testing.T) {
	key := bkproto.MasterKey([]byte("pw"))
	body := bkproto.EncodeEntry(3, 9, 8, 100, bkproto.DigestCRC32C, nil, []byte("x"))
	for _, recovery := range []bool{false, true} {
		req := roundTrip(t, AddRequest{Bookie: "b", LedgerID: 3, EntryID: 9, MasterKey: key, Body: body, Recovery: recovery}.Request(77))
		a := req.AddRequest
		if req.Header.GetTxnId() != 77 || a.GetLedgerId() != 3 || a.GetEntryId() != 9 ||
			!bytes.Equal(a.MasterKey, key[:]) || !bytes.Equal(a.Body, body) {
			t.Fatalf("add request %v", req)
		}
		if (a.Flag != nil && a.GetFlag() == bkproto.AddRequest_RECOVERY_ADD) != recovery {
			t.Fatalf("recovery %v: flag %v", recovery, a.Flag)
		}
		if (req.Header.GetPriority() == HighPriority) != recovery {
			t.Fatalf("recovery %v: priority %d", recovery, req.Header.GetPriority())
		}
	}
}

func TestReadRequestProto(t *testing.T) {
	key := bkproto.MasterKey([]byte("pw"))
	fence := roundTrip(t, ReadRequest{Bookie: "b", LedgerID: 3, EntryID: 5, Fence: true, MasterKey: key}.Request(1))
	if r := fence.ReadRequest; r.GetFlag() != bkproto.ReadRequest_FENCE_LEDGER || !bytes.Equal(r.MasterKey, key[:]) ||
		r.GetEntryId() != 5 || fence.Header.GetPriority() != HighPriority {
		t.Fatalf("fencing read %v", fence)
	}
	plain := roundTrip(t, ReadRequest{LedgerID: 3, EntryID: 5}.Request(2))
	if r := plain.ReadRequest; r.Flag != nil || r.MasterKey != nil || r.PreviousLAC != nil {
		t.Fatalf("plain read %v", plain)
	}
	poll := roundTrip(t, ReadRequest{LedgerID: 3, EntryID: -1, LongPoll: true, PreviousLAC: 4, TimeoutMillis: 500,
		Piggyback: true}.Request(3))
	if r := poll.ReadRequest; r.GetFlag() != bkproto.ReadRequest_ENTRY_PIGGYBACK || r.GetPreviousLAC() != 4 ||
		r.GetTimeOut() != 500 || r.GetEntryId() != -1 {
		t.Fatalf("long poll %v", poll)
	}
	lac := roundTrip(t, ReadRequest{Kind: ReadLAC, LedgerID: 3}.Request(4))
	if lac.Header.GetOperation() != bkproto.OperationType_READ_LAC || lac.ReadLacRequest.GetLedgerId() != 3 {
		t.Fatalf("READ_LAC %v", lac)
	}
}

func TestReadReplyOf(t *testing.T) {
	if got := ReadReplyOf(nil); got.Status != NoResponse {
		t.Fatalf("nil response: %+v", got)
	}
	ok := bkproto.StatusCode_EOK
	resp := &bkproto.Response{
		Header: bkproto.NewHeader(bkproto.OperationType_READ_ENTRY, 1),
		Status: ok.Enum(),
		ReadResponse: &bkproto.ReadResponse{Status: ok.Enum(), LedgerId: ptr[int64](3), EntryId: ptr[int64](5),
			Body: []byte("body"), MaxLAC: ptr[int64](4)},
	}
	got := ReadReplyOf(resp)
	if got.Status != ok || got.EntryID != 5 || string(got.Body) != "body" || !got.HasMaxLAC || got.MaxLAC != 4 {
		t.Fatalf("read reply %+v", got)
	}
	noEntry := bkproto.StatusCode_ENOENTRY
	resp.ReadResponse.Status, resp.ReadResponse.MaxLAC = noEntry.Enum(), nil
	if got := ReadReplyOf(resp); got.Status != noEntry || got.HasMaxLAC {
		t.Fatalf("negative reply %+v", got)
	}
	lacResp := &bkproto.Response{
		Header: bkproto.NewHeader(bkproto.OperationType_READ_LAC, 2),
		Status: ok.Enum(),
		ReadLacResponse: &bkproto.ReadLacResponse{Status: ok.Enum(), LedgerId: ptr[int64](3),
			LacBody: []byte("lac"), LastEntryBody: []byte("last")},
	}
	if got := ReadReplyOf(lacResp); got.EntryID != -1 || string(got.LACBody) != "lac" || string(got.Body) != "last" {
		t.Fatalf("READ_LAC reply %+v", got)
	}
}

// TestRequestsMatchProto checks the requests built in one allocation
// against the same requests built field by field with protobuf's helpers.
func TestRequestsMatchProto(t *testing.T) {
	key := bkproto.MasterKey([]byte("pw"))
	body := bkproto.EncodeEntry(3, 9, 8, 100, bkproto.DigestCRC32C, nil, []byte("x"))
	header := func(op bkproto.OperationType, txn uint64, prio bool) *bkproto.BKPacketHeader {
		h := &bkproto.BKPacketHeader{Version: bkproto.ProtocolVersionV3.Enum(), Operation: op.Enum(), TxnId: proto.Uint64(txn)}
		if prio {
			h.Priority = proto.Uint32(HighPriority)
		}
		return h
	}
	tests := []struct {
		name string
		got  *bkproto.Request
		want *bkproto.Request
	}{
		{"add", AddRequest{LedgerID: 3, EntryID: 9, MasterKey: key, Body: body}.Request(7),
			&bkproto.Request{Header: header(bkproto.OperationType_ADD_ENTRY, 7, false), AddRequest: &bkproto.AddRequest{
				LedgerId: proto.Int64(3), EntryId: proto.Int64(9), MasterKey: key[:], Body: body}}},
		{"recovery add", AddRequest{LedgerID: 3, EntryID: -2, MasterKey: key, Body: body, Recovery: true}.Request(1 << 40),
			&bkproto.Request{Header: header(bkproto.OperationType_ADD_ENTRY, 1<<40, true), AddRequest: &bkproto.AddRequest{
				LedgerId: proto.Int64(3), EntryId: proto.Int64(-2), MasterKey: key[:], Body: body,
				Flag: bkproto.AddRequest_RECOVERY_ADD.Enum()}}},
		{"read", ReadRequest{LedgerID: 3, EntryID: 5}.Request(2),
			&bkproto.Request{Header: header(bkproto.OperationType_READ_ENTRY, 2, false), ReadRequest: &bkproto.ReadRequest{
				LedgerId: proto.Int64(3), EntryId: proto.Int64(5)}}},
		{"fence", ReadRequest{LedgerID: 3, EntryID: -1, Fence: true, MasterKey: key}.Request(3),
			&bkproto.Request{Header: header(bkproto.OperationType_READ_ENTRY, 3, true), ReadRequest: &bkproto.ReadRequest{
				LedgerId: proto.Int64(3), EntryId: proto.Int64(-1), MasterKey: key[:],
				Flag: bkproto.ReadRequest_FENCE_LEDGER.Enum()}}},
		{"long poll", ReadRequest{LedgerID: 3, EntryID: -1, LongPoll: true, PreviousLAC: 4, TimeoutMillis: 500}.Request(4),
			&bkproto.Request{Header: header(bkproto.OperationType_READ_ENTRY, 4, false), ReadRequest: &bkproto.ReadRequest{
				LedgerId: proto.Int64(3), EntryId: proto.Int64(-1), PreviousLAC: proto.Int64(4), TimeOut: proto.Int64(500)}}},
		{"piggyback", ReadRequest{LedgerID: 3, EntryID: -1, LongPoll: true, Piggyback: true, PreviousLAC: 4,
			TimeoutMillis: 500}.Request(5),
			&bkproto.Request{Header: header(bkproto.OperationType_READ_ENTRY, 5, false), ReadRequest: &bkproto.ReadRequest{
				LedgerId: proto.Int64(3), EntryId: proto.Int64(-1), PreviousLAC: proto.Int64(4), TimeOut: proto.Int64(500),
				Flag: bkproto.ReadRequest_ENTRY_PIGGYBACK.Enum()}}},
		{"piggyback without long poll", ReadRequest{LedgerID: 3, EntryID: 6, Piggyback: true}.Request(6),
			&bkproto.Request{Header: header(bkproto.OperationType_READ_ENTRY, 6, false), ReadRequest: &bkproto.ReadRequest{
				LedgerId: proto.Int64(3), EntryId: proto.Int64(6)}}},
	}
	for _, tt := range tests {
		if !proto.Equal(tt.got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func BenchmarkReadRequest(b *testing.B) {
	r := ReadRequest{Bookie: "b", LedgerID: 3, EntryID: 5, Fence: true, MasterKey: bkproto.MasterKey([]byte("pw"))}
	b.ReportAllocs()
	for b.Loop() {
		if r.Request(1).ReadRequest == nil {
			b.Fatal("no read")
		}
	}
}
