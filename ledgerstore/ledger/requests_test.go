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
