package bkproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
)

// The tests below build v2 packets byte by byte from the layout of
// docs/bookkeeper-protocol.md §6.2, independently of the codec.

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func be64(v int64) []byte  { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var v2Key = bytes.Repeat([]byte{0xab}, MasterKeyBytes)

// v2Entry is a stored form with an arbitrary digest (the bookie checks none).
func v2Entry(ledger, entry int64, payload string) []byte {
	return cat(be64(ledger), be64(entry), be64(entry-1), be64(int64(len(payload))), []byte{1, 2, 3, 4}, []byte(payload))
}

func TestV2Header(t *testing.T) {
	cases := []struct {
		raw  uint32
		want V2Header
	}{
		{0x02010000, V2Header{Version: 2, OpCode: V2AddEntry}},
		{0x02020005, V2Header{Version: 2, OpCode: V2ReadEntry, Flags: V2FlagDoFencing | V2FlagHighPriority}},
		{0x02010006, V2Header{Version: 2, OpCode: V2AddEntry, Flags: V2FlagRecoveryAdd | V2FlagHighPriority}},
		{0x01030000, V2Header{Version: 1, OpCode: V2Auth}},
		{0x00000002, V2Header{OpCode: V2ReadEntry}},                // version 0: the int is the opcode
		{0x00ff0102, V2Header{OpCode: V2ReadEntry}},                // version 0 ignores the middle bytes
		{0x83020001, V2Header{Version: -125, OpCode: 2, Flags: 1}}, // a signed byte, as Java reads it
	}
	for _, tc := range cases {
		if got := ParseV2Header(tc.raw); got != tc.want {
			t.Errorf("ParseV2Header(%#08x) = %+v, want %+v", tc.raw, got, tc.want)
		}
	}
	for _, h := range []V2Header{{Version: 2, OpCode: V2ReadEntry, Flags: 7}, {OpCode: V2AddEntry}, {Version: 1, OpCode: V2Auth}} {
		if got := ParseV2Header(h.Uint32()); got != h {
			t.Errorf("%+v round-trips to %+v", h, got)
		}
	}
}

func TestV2Codes(t *testing.T) {
	want := map[StatusCode]int32{
		StatusCode_EOK: 0, StatusCode_ENOLEDGER: 1, StatusCode_ENOENTRY: 2, StatusCode_EBADREQ: 100,
		StatusCode_EIO: 101, StatusCode_EUA: 102, StatusCode_EBADVERSION: 103, StatusCode_EFENCED: 104,
		StatusCode_EREADONLY: 105, StatusCode_ETOOMANYREQUESTS: 106, StatusCode_EUNKNOWNLEDGERSTATE: 107,
	}
	for s, rc := range want {
		if got := V2Code(s); got != rc {
			t.Errorf("V2Code(%v) = %d, want %d", s, got, rc)
		}
		if got, ok := StatusOfV2Code(rc); !ok || got != s {
			t.Errorf("StatusOfV2Code(%d) = %v %v, want %v", rc, got, ok, s)
		}
	}
	if got := V2Code(StatusCode(999)); got != 101 {
		t.Errorf("an unknown status is v2 code %d, want EIO 101", got)
	}
	for _, rc := range []int32{3, 99, 108, 402, -1} {
		if _, ok := StatusOfV2Code(rc); ok {
			t.Errorf("v2 code %d decoded as a status", rc)
		}
	}
}

func TestDecodeV2Request(t *testing.T) {
	ent := v2Entry(7, 3, "hello")
	addV3 := func(recovery bool, prio bool) *Request {
		r := &Request{Header: NewHeader(OperationType_ADD_ENTRY, 0), AddRequest: &AddRequest{
			LedgerId: proto.Int64(7), EntryId: proto.Int64(3), MasterKey: v2Key, Body: ent}}
		if recovery {
			r.AddRequest.Flag = AddRequest_RECOVERY_ADD.Enum()
		}
		if prio {
			r.Header.Priority = proto.Uint32(100)
		}
		return r
	}
	readV3 := func(entry int64, fence bool, key []byte) *Request {
		r := &Request{Header: NewHeader(OperationType_READ_ENTRY, 0), ReadRequest: &ReadRequest{
			LedgerId: proto.Int64(7), EntryId: proto.Int64(entry), MasterKey: key}}
		if fence {
			r.ReadRequest.Flag = ReadRequest_FENCE_LEDGER.Enum()
			r.Header.Priority = proto.Uint32(100)
		}
		return r
	}
	auth := &AuthMessage{AuthPluginName: proto.String("AuthDisabledPlugin"), Payload: []byte{}}
	authBytes, _ := proto.Marshal(auth)
	cases := []struct {
		name      string
		frame     []byte
		want      *Request // nil: malformed
		wantV2    V2Request
		wantError StatusCode // EOK: none
	}{
		{"add", cat(be32(0x02010000), v2Key, ent), addV3(false, false),
			V2Request{Header: V2Header{2, V2AddEntry, 0}, LedgerID: 7, EntryID: 3}, StatusCode_EOK},
		{"recovery add", cat(be32(0x02010006), v2Key, ent), addV3(true, true),
			V2Request{Header: V2Header{2, V2AddEntry, 6}, LedgerID: 7, EntryID: 3}, StatusCode_EOK},
		{"add ignores the fencing flag", cat(be32(0x02010001), v2Key, ent), addV3(false, false),
			V2Request{Header: V2Header{2, V2AddEntry, 1}, LedgerID: 7, EntryID: 3}, StatusCode_EOK},
		{"read", cat(be32(0x02020000), be64(7), be64(4)), readV3(4, false, nil),
			V2Request{Header: V2Header{2, V2ReadEntry, 0}, LedgerID: 7, EntryID: 4}, StatusCode_EOK},
		{"read of the last entry", cat(be32(0x02020000), be64(7), be64(-1)), readV3(-1, false, nil),
			V2Request{Header: V2Header{2, V2ReadEntry, 0}, LedgerID: 7, EntryID: -1}, StatusCode_EOK},
		{"read ignores trailing bytes", cat(be32(0x02020000), be64(7), be64(4), []byte{9, 9}), readV3(4, false, nil),
			V2Request{Header: V2Header{2, V2ReadEntry, 0}, LedgerID: 7, EntryID: 4}, StatusCode_EOK},
		{"fencing read", cat(be32(0x02020005), be64(7), be64(-1), v2Key), readV3(-1, true, v2Key),
			V2Request{Header: V2Header{2, V2ReadEntry, 5}, LedgerID: 7, EntryID: -1}, StatusCode_EOK},
		{"version 1 fencing read carries no key", cat(be32(0x01020001), be64(7), be64(-1)),
			func() *Request { r := readV3(-1, true, nil); r.Header.Priority = nil; return r }(),
			V2Request{Header: V2Header{1, V2ReadEntry, 1}, LedgerID: 7, EntryID: -1}, StatusCode_EUA},
		{"version 0 read", cat(be32(0x00000002), be64(7), be64(4)), readV3(4, false, nil),
			V2Request{Header: V2Header{0, V2ReadEntry, 0}, LedgerID: 7, EntryID: 4}, StatusCode_EOK},
		{"version 3 add", cat(be32(0x03010000), v2Key, ent), addV3(false, false),
			V2Request{Header: V2Header{3, V2AddEntry, 0}, LedgerID: 7, EntryID: 3}, StatusCode_EBADVERSION},
		{"negative version read", cat(be32(0x83020000), be64(7), be64(4)), readV3(4, false, nil),
			V2Request{Header: V2Header{-125, V2ReadEntry, 0}, LedgerID: 7, EntryID: 4}, StatusCode_EBADVERSION},
		{"add of an entry shorter than its header", cat(be32(0x02010000), v2Key, be64(7), be64(3)),
			&Request{Header: NewHeader(OperationType_ADD_ENTRY, 0), AddRequest: &AddRequest{LedgerId: proto.Int64(7),
				EntryId: proto.Int64(3), MasterKey: v2Key, Body: cat(be64(7), be64(3))}},
			V2Request{Header: V2Header{2, V2AddEntry, 0}, LedgerID: 7, EntryID: 3}, StatusCode_EBADREQ},
		{"read of a negative ledger", cat(be32(0x02020000), be64(-2), be64(0)),
			&Request{Header: NewHeader(OperationType_READ_ENTRY, 0), ReadRequest: &ReadRequest{
				LedgerId: proto.Int64(-2), EntryId: proto.Int64(0)}},
			V2Request{Header: V2Header{2, V2ReadEntry, 0}, LedgerID: -2, EntryID: 0}, StatusCode_EBADREQ},
		{"batch read", cat(be32(0x02070000), be64(7), be64(2), be64(99), be32(10), be64(4096)), readV3(2, false, nil),
			V2Request{Header: V2Header{2, V2BatchReadEntry, 0}, LedgerID: 7, EntryID: 2, RequestID: 99, MaxCount: 10,
				MaxSize: 4096}, StatusCode_EOK},
		{"fencing batch read", cat(be32(0x02070005), be64(7), be64(0), be64(5), be32(0xffffffff), be64(0), v2Key),
			readV3(0, true, v2Key),
			V2Request{Header: V2Header{2, V2BatchReadEntry, 5}, LedgerID: 7, EntryID: 0, RequestID: 5, MaxCount: -1},
			StatusCode_EOK},
		{"auth", cat(be32(0x02030000), authBytes),
			&Request{Header: NewHeader(OperationType_AUTH, 0), AuthRequest: auth},
			V2Request{Header: V2Header{2, V2Auth, 0}, LedgerID: -1, EntryID: -1}, StatusCode_EOK},
		{"auth at version 7 is still answered", cat(be32(0x07030000), authBytes),
			&Request{Header: NewHeader(OperationType_AUTH, 0), AuthRequest: auth},
			V2Request{Header: V2Header{7, V2Auth, 0}, LedgerID: -1, EntryID: -1}, StatusCode_EOK},
		// Malformed: BookKeeper's decoder throws and the connection closes.
		{"empty", nil, nil, V2Request{}, 0},
		{"short header", []byte{2, 1}, nil, V2Request{}, 0},
		{"add without its ids", cat(be32(0x02010000), v2Key, be64(7)), nil, V2Request{}, 0},
		{"add with a short key", cat(be32(0x02010000), v2Key[:10]), nil, V2Request{}, 0},
		{"short read", cat(be32(0x02020000), be64(7)), nil, V2Request{}, 0},
		{"fencing read without its key", cat(be32(0x02020001), be64(7), be64(-1), v2Key[:19]), nil, V2Request{}, 0},
		{"READ_LAC has no v2 layout", cat(be32(0x02040000), be64(7)), nil, V2Request{}, 0},
		{"short batch read", cat(be32(0x02070000), be64(7), be64(2), be64(99), be32(10)), nil, V2Request{}, 0},
		{"fencing batch read without its key", cat(be32(0x02070001), be64(7), be64(2), be64(99), be32(10), be64(1)),
			nil, V2Request{}, 0},
		{"WRITE_LAC has no v2 layout", cat(be32(0x02050000), be64(7), be64(2), v2Key), nil, V2Request{}, 0},
		{"GET_BOOKIE_INFO", cat(be32(0x02060000), be64(3)), nil, V2Request{}, 0},
		{"unknown opcode", cat(be32(0x02630000), be64(7), be64(4)), nil, V2Request{}, 0},
		{"auth without its plugin name", cat(be32(0x02030000), []byte{0x12, 0}), nil, V2Request{}, 0},
		{"auth with garbage", cat(be32(0x02030000), []byte{0xff, 0xff}), nil, V2Request{}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			frame := slices0(tc.frame)
			req, v2, err := DecodeV2Request(frame)
			if tc.want == nil {
				if req != nil || !errors.Is(err, ErrV2Malformed) {
					t.Fatalf("got %v, %v; want ErrV2Malformed", req, err)
				}
				return
			}
			if StatusOf(err) != tc.wantError {
				t.Fatalf("error %v, want status %v", err, tc.wantError)
			}
			if !proto.Equal(req, tc.want) {
				t.Fatalf("decoded\n%v\nwant\n%v", req, tc.want)
			}
			if v2 != tc.wantV2 {
				t.Fatalf("v2 %+v, want %+v", v2, tc.wantV2)
			}
			for i := range frame { // the request must not alias the frame
				frame[i] = 0xee
			}
			if !proto.Equal(req, tc.want) {
				t.Fatal("the decoded request aliases the frame")
			}
		})
	}
}

func slices0(b []byte) []byte { return append([]byte(nil), b...) }

func TestAppendV2Response(t *testing.T) {
	ent := v2Entry(7, 4, "data")
	add := V2Request{Header: V2Header{2, V2AddEntry, 6}, LedgerID: 7, EntryID: 3}
	read := V2Request{Header: V2Header{2, V2ReadEntry, 5}, LedgerID: 7, EntryID: -1}
	addResp := func(st StatusCode) *Response {
		return &Response{Header: NewHeader(OperationType_ADD_ENTRY, 0), Status: st.Enum(),
			AddResponse: &AddResponse{Status: st.Enum(), LedgerId: proto.Int64(7), EntryId: proto.Int64(3)}}
	}
	readResp := &Response{Header: NewHeader(OperationType_READ_ENTRY, 0), Status: StatusCode_EOK.Enum(),
		ReadResponse: &ReadResponse{Status: StatusCode_EOK.Enum(), LedgerId: proto.Int64(7), EntryId: proto.Int64(-1),
			Body: ent, MaxLAC: proto.Int64(3)}}
	auth := &AuthMessage{AuthPluginName: proto.String("AuthDisabledPlugin"), Payload: []byte{}}
	authBytes, _ := proto.Marshal(auth)
	cases := []struct {
		name string
		v2   V2Request
		resp *Response
		want []byte
	}{
		{"add EOK", add, addResp(StatusCode_EOK), cat(be32(24), be32(0x02010000), be32(0), be64(7), be64(3))},
		{"add EFENCED", add, addResp(StatusCode_EFENCED), cat(be32(24), be32(0x02010000), be32(104), be64(7), be64(3))},
		{"add status only", add, &Response{Header: NewHeader(OperationType_ADD_ENTRY, 0), Status: StatusCode_EBADVERSION.Enum()},
			cat(be32(24), be32(0x02010000), be32(103), be64(7), be64(3))},
		{"version 0 add", V2Request{Header: V2Header{0, V2AddEntry, 0}, LedgerID: 7, EntryID: 3}, addResp(StatusCode_EREADONLY),
			cat(be32(24), be32(1), be32(105), be64(7), be64(3))},
		{"read EOK carries the entry, not maxLAC", read, readResp,
			cat(be32(uint32(24+len(ent))), be32(0x02020000), be32(0), be64(7), be64(-1), ent)},
		{"read ENOENTRY", read, &Response{Header: NewHeader(OperationType_READ_ENTRY, 0), Status: StatusCode_ENOENTRY.Enum(),
			ReadResponse: &ReadResponse{Status: StatusCode_ENOENTRY.Enum(), LedgerId: proto.Int64(7), EntryId: proto.Int64(-1)}},
			cat(be32(24), be32(0x02020000), be32(2), be64(7), be64(-1))},
		{"read EUNKNOWNLEDGERSTATE", read, &Response{Header: NewHeader(OperationType_READ_ENTRY, 0),
			Status: StatusCode_EUNKNOWNLEDGERSTATE.Enum()},
			cat(be32(24), be32(0x02020000), be32(107), be64(7), be64(-1))},
		{"batch read", V2Request{Header: V2Header{2, V2BatchReadEntry, 1}, LedgerID: 7, EntryID: 4, RequestID: 9},
			readResp2(AppendV2BatchEntry(AppendV2BatchEntry(nil, ent), ent)),
			cat(be32(uint32(32+8+2*len(ent))), be32(0x02070000), be32(0), be64(7), be64(4), be64(9),
				be32(uint32(len(ent))), ent, be32(uint32(len(ent))), ent)},
		{"batch read ENOENTRY", V2Request{Header: V2Header{2, V2BatchReadEntry, 0}, LedgerID: 7, EntryID: 4, RequestID: 9},
			&Response{Header: NewHeader(OperationType_READ_ENTRY, 0), Status: StatusCode_ENOENTRY.Enum()},
			cat(be32(32), be32(0x02070000), be32(2), be64(7), be64(4), be64(9))},
		{"auth answers at version 2", V2Request{Header: V2Header{1, V2Auth, 0}, LedgerID: -1, EntryID: -1},
			&Response{Header: NewHeader(OperationType_AUTH, 0), Status: StatusCode_EOK.Enum(), AuthResponse: auth},
			cat(be32(uint32(4+len(authBytes))), be32(0x02030000), authBytes)},
	}
	for _, tc := range cases {
		got, err := AppendV2Response([]byte("prefix"), tc.v2, tc.resp)
		if err != nil || !bytes.Equal(got, cat([]byte("prefix"), tc.want)) {
			t.Errorf("%s: got % x (%v)\nwant % x", tc.name, got, err, tc.want)
		}
	}
	if _, err := AppendV2Response(nil, V2Request{Header: V2Header{2, V2ReadLAC, 0}}, addResp(StatusCode_EOK)); !errors.Is(err, ErrNoV2Form) {
		t.Errorf("READ_LAC response: %v, want ErrNoV2Form", err)
	}
}

func readResp2(body []byte) *Response {
	return &Response{Header: NewHeader(OperationType_READ_ENTRY, 0), Status: StatusCode_EOK.Enum(),
		ReadResponse: &ReadResponse{Status: StatusCode_EOK.Enum(), LedgerId: proto.Int64(7), EntryId: proto.Int64(4),
			Body: body}}
}

func TestAppendV2Request(t *testing.T) {
	ent := v2Entry(7, 3, "hello")
	add := func(f func(*Request)) *Request {
		r := &Request{Header: NewHeader(OperationType_ADD_ENTRY, 9), AddRequest: &AddRequest{
			LedgerId: proto.Int64(7), EntryId: proto.Int64(3), MasterKey: v2Key, Body: ent}}
		if f != nil {
			f(r)
		}
		return r
	}
	read := func(f func(*Request)) *Request {
		r := &Request{Header: NewHeader(OperationType_READ_ENTRY, 9), ReadRequest: &ReadRequest{
			LedgerId: proto.Int64(7), EntryId: proto.Int64(-1)}}
		if f != nil {
			f(r)
		}
		return r
	}
	cases := []struct {
		name string
		req  *Request
		want []byte // nil: ErrNoV2Form
	}{
		{"add", add(nil), cat(be32(uint32(24+len(ent))), be32(0x02010000), v2Key, ent)},
		{"recovery add", add(func(r *Request) {
			r.AddRequest.Flag = AddRequest_RECOVERY_ADD.Enum()
			r.Header.Priority = proto.Uint32(100)
		}), cat(be32(uint32(24+len(ent))), be32(0x02010006), v2Key, ent)},
		{"read", read(nil), cat(be32(20), be32(0x02020000), be64(7), be64(-1))},
		{"fencing read", read(func(r *Request) {
			r.ReadRequest.Flag = ReadRequest_FENCE_LEDGER.Enum()
			r.ReadRequest.MasterKey = v2Key
			r.Header.Priority = proto.Uint32(100)
		}), cat(be32(40), be32(0x02020005), be64(7), be64(-1), v2Key)},
		{"a long poll becomes a plain read", read(func(r *Request) {
			r.ReadRequest.Flag = ReadRequest_ENTRY_PIGGYBACK.Enum()
			r.ReadRequest.PreviousLAC = proto.Int64(4)
			r.ReadRequest.TimeOut = proto.Int64(1000)
		}), cat(be32(20), be32(0x02020000), be64(7), be64(-1))},
		{"deferred sync", add(func(r *Request) { r.AddRequest.WriteFlags = proto.Int32(WriteFlagDeferredSync) }), nil},
		{"short key", add(func(r *Request) { r.AddRequest.MasterKey = v2Key[:4] }), nil},
		{"entry of another ledger", add(func(r *Request) { r.AddRequest.LedgerId = proto.Int64(8) }), nil},
		{"fence without key", read(func(r *Request) { r.ReadRequest.Flag = ReadRequest_FENCE_LEDGER.Enum() }), nil},
		{"READ_LAC", &Request{Header: NewHeader(OperationType_READ_LAC, 1), ReadLacRequest: &ReadLacRequest{LedgerId: proto.Int64(7)}}, nil},
		{"FORCE_LEDGER", &Request{Header: NewHeader(OperationType_FORCE_LEDGER, 1), ForceLedgerRequest: &ForceLedgerRequest{LedgerId: proto.Int64(7)}}, nil},
	}
	for _, tc := range cases {
		got, err := AppendV2Request([]byte("p"), tc.req)
		if tc.want == nil {
			if !errors.Is(err, ErrNoV2Form) || string(got) != "p" {
				t.Errorf("%s: got % x (%v), want ErrNoV2Form", tc.name, got, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, cat([]byte("p"), tc.want)) {
			t.Errorf("%s: got % x (%v)\nwant % x", tc.name, got, err, tc.want)
		}
	}
}

func TestDecodeV2Response(t *testing.T) {
	ent := v2Entry(7, 4, "data")
	auth := &AuthMessage{AuthPluginName: proto.String("AuthDisabledPlugin"), Payload: []byte{}}
	authBytes, _ := proto.Marshal(auth)
	add := func(st StatusCode) *Response {
		return &Response{Header: NewHeader(OperationType_ADD_ENTRY, 0), Status: st.Enum(),
			AddResponse: &AddResponse{Status: st.Enum(), LedgerId: proto.Int64(7), EntryId: proto.Int64(3)}}
	}
	read := func(st StatusCode, entry int64, body []byte) *Response {
		return &Response{Header: NewHeader(OperationType_READ_ENTRY, 0), Status: st.Enum(),
			ReadResponse: &ReadResponse{Status: st.Enum(), LedgerId: proto.Int64(7), EntryId: proto.Int64(entry), Body: body}}
	}
	batch := AppendV2BatchEntry(AppendV2BatchEntry(nil, ent), v2Entry(7, 5, "more"))
	batchResp := func(st StatusCode, body []byte) *Response {
		r := read(st, 4, body)
		r.Header.TxnId = proto.Uint64(9)
		return r
	}
	cases := []struct {
		name  string
		frame []byte
		want  *Response // nil: malformed
	}{
		{"add EOK", cat(be32(0x02010000), be32(0), be64(7), be64(3)), add(StatusCode_EOK)},
		{"add EUA", cat(be32(0x02010000), be32(102), be64(7), be64(3)), add(StatusCode_EUA)},
		{"add ETOOMANYREQUESTS", cat(be32(0x02010000), be32(106), be64(7), be64(3)), add(StatusCode_ETOOMANYREQUESTS)},
		{"read EOK", cat(be32(0x02020000), be32(0), be64(7), be64(-1), ent), read(StatusCode_EOK, -1, ent)},
		{"read ENOLEDGER drops trailing bytes", cat(be32(0x02020000), be32(1), be64(7), be64(4), []byte{1}),
			read(StatusCode_ENOLEDGER, 4, nil)},
		{"read EUNKNOWNLEDGERSTATE", cat(be32(0x02020000), be32(107), be64(7), be64(4)), read(StatusCode_EUNKNOWNLEDGERSTATE, 4, nil)},
		{"batch EOK", cat(be32(0x02070000), be32(0), be64(7), be64(4), be64(9), batch),
			batchResp(StatusCode_EOK, batch)},
		{"batch ENOENTRY drops trailing bytes", cat(be32(0x02070000), be32(2), be64(7), be64(4), be64(9), []byte{1}),
			batchResp(StatusCode_ENOENTRY, nil)},
		{"short batch", cat(be32(0x02070000), be32(0), be64(7), be64(4), be32(0)), nil},
		{"batch with unknown code", cat(be32(0x02070000), be32(3), be64(7), be64(4), be64(9)), nil},
		{"auth", cat(be32(0x02030000), authBytes), &Response{Header: NewHeader(OperationType_AUTH, 0),
			Status: StatusCode_EOK.Enum(), AuthResponse: auth}},
		{"unknown return code", cat(be32(0x02010000), be32(3), be64(7), be64(3)), nil},
		{"v3 code number", cat(be32(0x02020000), be32(402), be64(7), be64(3)), nil},
		{"short add", cat(be32(0x02010000), be32(0), be64(7)), nil},
		{"unknown opcode", cat(be32(0x02040000), be32(0), be64(7), be64(3)), nil},
		{"empty", nil, nil},
	}
	for _, tc := range cases {
		got, err := DecodeV2Response(tc.frame)
		if tc.want == nil {
			if got != nil || !errors.Is(err, ErrV2Malformed) {
				t.Errorf("%s: got %v (%v), want ErrV2Malformed", tc.name, got, err)
			}
			continue
		}
		if err != nil || !proto.Equal(got, tc.want) {
			t.Errorf("%s: got %v (%v)\nwant %v", tc.name, got, err, tc.want)
		}
	}
}

// TestV2BatchRead encodes batch reads as BookKeeper 4.17's client sends
// them, checks the bookie's decoder reads back every field, and splits
// batch bodies.
func TestV2BatchRead(t *testing.T) {
	key := bytes.Repeat([]byte{0xab}, MasterKeyBytes)
	read := func(fence bool, priority uint32) *Request {
		r := &Request{Header: NewHeader(OperationType_READ_ENTRY, 0),
			ReadRequest: &ReadRequest{LedgerId: proto.Int64(7), EntryId: proto.Int64(4)}}
		if fence {
			r.ReadRequest.Flag = ReadRequest_FENCE_LEDGER.Enum()
			r.ReadRequest.MasterKey = key
		}
		if priority > 0 {
			r.Header.Priority = proto.Uint32(priority)
		}
		return r
	}
	cases := []struct {
		name  string
		req   *Request
		frame []byte // nil: ErrNoV2Form
	}{
		{"plain", read(false, 0), cat(be32(40), be32(0x02070000), be64(7), be64(4), be64(9), be32(16), be64(1<<20))},
		{"fencing, recovery priority", read(true, v2HighPriority),
			cat(be32(60), be32(0x02070005), be64(7), be64(4), be64(9), be32(16), be64(1<<20), key)},
		{"fencing without a key", &Request{Header: NewHeader(OperationType_READ_ENTRY, 0),
			ReadRequest: &ReadRequest{LedgerId: proto.Int64(7), EntryId: proto.Int64(4),
				Flag: ReadRequest_FENCE_LEDGER.Enum()}}, nil},
		{"an add", &Request{Header: NewHeader(OperationType_ADD_ENTRY, 0), AddRequest: &AddRequest{}}, nil},
	}
	for _, tc := range cases {
		got, err := AppendV2BatchReadRequest(nil, tc.req, 9, 16, 1<<20)
		if tc.frame == nil {
			if !errors.Is(err, ErrNoV2Form) {
				t.Errorf("%s: %x, %v; want ErrNoV2Form", tc.name, got, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, tc.frame) {
			t.Errorf("%s: %x (%v)\nwant %x", tc.name, got, err, tc.frame)
			continue
		}
		req, v2, err := DecodeV2Request(got[FrameLengthBytes:])
		if err != nil || v2.Header.OpCode != V2BatchReadEntry || v2.RequestID != 9 || v2.MaxCount != 16 ||
			v2.MaxSize != 1<<20 || !proto.Equal(req.ReadRequest, tc.req.ReadRequest) {
			t.Errorf("%s: the bookie decodes %v %+v (%v)", tc.name, req, v2, err)
		}
	}

	a, b := v2Entry(7, 4, "a"), v2Entry(7, 5, "bb")
	splits := []struct {
		name string
		body []byte
		want [][]byte // nil with bad: malformed
		bad  bool
	}{
		{"two entries", AppendV2BatchEntry(AppendV2BatchEntry(nil, a), b), [][]byte{a, b}, false},
		{"empty", nil, nil, false},
		{"length past the end", cat(be32(uint32(len(a)+1)), a), nil, true},
		{"torn length", []byte{0, 0, 1}, nil, true},
	}
	for _, tc := range splits {
		got, err := V2BatchEntries(tc.body)
		if tc.bad {
			if !errors.Is(err, ErrV2Malformed) {
				t.Errorf("%s: %v, want ErrV2Malformed", tc.name, err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: %d entries (%v), want %d", tc.name, len(got), err, len(tc.want))
			continue
		}
		for i := range got {
			if !bytes.Equal(got[i], tc.want[i]) {
				t.Errorf("%s: entry %d differs", tc.name, i)
			}
		}
	}
}
