package bkproto

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
)

func addReq(mod func(*AddRequest)) *Request {
	a := &AddRequest{
		LedgerId:  proto.Int64(5),
		EntryId:   proto.Int64(3),
		MasterKey: testKey,
		Body:      EncodeEntry(5, 3, 2, 10, DigestCRC32C, nil, []byte("payload")),
	}
	if mod != nil {
		mod(a)
	}
	return &Request{Header: NewHeader(OperationType_ADD_ENTRY, 1), AddRequest: a}
}

func readReq(mod func(*ReadRequest)) *Request {
	r := &ReadRequest{LedgerId: proto.Int64(5), EntryId: proto.Int64(3)}
	if mod != nil {
		mod(r)
	}
	return &Request{Header: NewHeader(OperationType_READ_ENTRY, 1), ReadRequest: r}
}

func writeLacReq(mod func(*WriteLacRequest)) *Request {
	w := &WriteLacRequest{
		LedgerId:  proto.Int64(5),
		Lac:       proto.Int64(4),
		MasterKey: testKey,
		Body:      EncodeLAC(5, 4, DigestHMAC, vecMacKey()),
	}
	if mod != nil {
		mod(w)
	}
	return &Request{Header: NewHeader(OperationType_WRITE_LAC, 1), WriteLacRequest: w}
}

func withHeader(req *Request, mod func(*BKPacketHeader)) *Request {
	mod(req.Header)
	return req
}

// sampleRequests holds one valid request per supported operation.
func sampleRequests() map[string]*Request {
	return map[string]*Request{
		"add": addReq(nil),
		"recovery add": addReq(func(a *AddRequest) {
			a.Flag = AddRequest_RECOVERY_ADD.Enum()
			a.WriteFlags = proto.Int32(WriteFlagDeferredSync)
		}),
		"read":      readReq(nil),
		"LAC read":  readReq(func(r *ReadRequest) { r.EntryId = proto.Int64(LastAddConfirmed) }),
		"fence":     readReq(func(r *ReadRequest) { r.Flag = ReadRequest_FENCE_LEDGER.Enum(); r.MasterKey = testKey }),
		"long poll": readReq(func(r *ReadRequest) { r.PreviousLAC = proto.Int64(-1); r.TimeOut = proto.Int64(0) }),
		"piggyback": readReq(func(r *ReadRequest) {
			r.Flag = ReadRequest_ENTRY_PIGGYBACK.Enum()
			r.PreviousLAC = proto.Int64(2)
			r.TimeOut = proto.Int64(5000)
		}),
		"write LAC": writeLacReq(nil),
		"read LAC": {Header: NewHeader(OperationType_READ_LAC, 2),
			ReadLacRequest: &ReadLacRequest{LedgerId: proto.Int64(5)}},
		"force": {Header: NewHeader(OperationType_FORCE_LEDGER, 3),
			ForceLedgerRequest: &ForceLedgerRequest{LedgerId: proto.Int64(5)}},
		"bookie info": {Header: NewHeader(OperationType_GET_BOOKIE_INFO, 4),
			GetBookieInfoRequest: &GetBookieInfoRequest{Requested: proto.Int64(int64(GetBookieInfoRequest_TOTAL_DISK_CAPACITY | GetBookieInfoRequest_FREE_DISK_SPACE))}},
		"entry list": {Header: NewHeader(OperationType_GET_LIST_OF_ENTRIES_OF_LEDGER, 5),
			GetListOfEntriesOfLedgerRequest: &GetListOfEntriesOfLedgerRequest{LedgerId: proto.Int64(5)}},
		"auth": {Header: NewHeader(OperationType_AUTH, 6),
			AuthRequest: &AuthMessage{AuthPluginName: proto.String("x"), Payload: []byte{}}},
		"start TLS": {Header: NewHeader(OperationType_START_TLS, 7), StartTLSRequest: &StartTLSRequest{},
			RequestContext: []*ContextPair{{Key: proto.String("trace"), Value: proto.String("1")}}},
	}
}

func TestValidateRequestAcceptsSamples(t *testing.T) {
	for name, req := range sampleRequests() {
		if err := ValidateRequest(req); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		frame, err := AppendFrame(nil, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		back, err := DecodeRequest(frame[FrameLengthBytes:])
		if err != nil || !proto.Equal(back, req) {
			t.Errorf("%s: round trip gave %v, %v", name, back, err)
		}
	}
}

func TestValidateRequestRejects(t *testing.T) {
	short := EncodeEntry(5, 3, 2, 10, DigestCRC32C, nil, nil)[:EntryHeaderBytes-1]
	for _, tc := range []struct {
		name string
		req  *Request
		want error
	}{
		{"no header", &Request{}, ErrBadRequest},
		{"version 2", withHeader(addReq(nil), func(h *BKPacketHeader) { h.Version = ProtocolVersion_VERSION_TWO.Enum() }), ErrBadVersion},
		{"version 9", withHeader(addReq(nil), func(h *BKPacketHeader) { h.Version = ProtocolVersion(9).Enum() }), ErrBadVersion},
		{"unknown operation", withHeader(addReq(nil), func(h *BKPacketHeader) { h.Operation = OperationType(77).Enum() }), ErrBadRequest},
		{"range read", withHeader(readReq(nil), func(h *BKPacketHeader) { h.Operation = OperationType_RANGE_READ_ENTRY.Enum() }), ErrBadRequest},
		{"batch read", withHeader(readReq(nil), func(h *BKPacketHeader) { h.Operation = OperationType_BATCH_READ_ENTRY.Enum() }), ErrBadRequest},
		{"add without sub-request", &Request{Header: NewHeader(OperationType_ADD_ENTRY, 1)}, ErrBadRequest},
		{"read op with add sub-request", withHeader(addReq(nil), func(h *BKPacketHeader) { h.Operation = OperationType_READ_ENTRY.Enum() }), ErrBadRequest},
		{"two sub-requests", func() *Request { r := addReq(nil); r.ReadRequest = readReq(nil).ReadRequest; return r }(), ErrBadRequest},
		{"add: negative ledger", addReq(func(a *AddRequest) { a.LedgerId = proto.Int64(-5) }), ErrBadRequest},
		{"add: entry -1", addReq(func(a *AddRequest) { a.EntryId = proto.Int64(-1) }), ErrBadRequest},
		{"add: unknown flag", addReq(func(a *AddRequest) { a.Flag = AddRequest_Flag(2).Enum() }), ErrBadRequest},
		{"add: unknown write flag", addReq(func(a *AddRequest) { a.WriteFlags = proto.Int32(0x2) }), ErrBadRequest},
		{"add: short master key", addReq(func(a *AddRequest) { a.MasterKey = testKey[:19] }), ErrBadRequest},
		{"add: empty master key", addReq(func(a *AddRequest) { a.MasterKey = []byte{} }), ErrBadRequest},
		{"add: body shorter than header", addReq(func(a *AddRequest) { a.Body = short }), ErrBadRequest},
		{"add: body for another entry", addReq(func(a *AddRequest) { a.EntryId = proto.Int64(4) }), ErrBadRequest},
		{"add: body for another ledger", addReq(func(a *AddRequest) { a.LedgerId = proto.Int64(6) }), ErrBadRequest},
		{"read: negative ledger", readReq(func(r *ReadRequest) { r.LedgerId = proto.Int64(-1) }), ErrBadRequest},
		{"read: entry -2", readReq(func(r *ReadRequest) { r.EntryId = proto.Int64(-2) }), ErrBadRequest},
		{"read: unknown flag", readReq(func(r *ReadRequest) { r.Flag = ReadRequest_Flag(3).Enum() }), ErrBadRequest},
		{"fence without master key", readReq(func(r *ReadRequest) { r.Flag = ReadRequest_FENCE_LEDGER.Enum() }), ErrUnauthorized},
		{"fence with short master key", readReq(func(r *ReadRequest) {
			r.Flag = ReadRequest_FENCE_LEDGER.Enum()
			r.MasterKey = testKey[:4]
		}), ErrBadRequest},
		{"timeout without previousLAC", readReq(func(r *ReadRequest) { r.TimeOut = proto.Int64(100) }), ErrBadRequest},
		{"negative timeout", readReq(func(r *ReadRequest) { r.PreviousLAC = proto.Int64(1); r.TimeOut = proto.Int64(-1) }), ErrBadRequest},
		{"previousLAC -2", readReq(func(r *ReadRequest) { r.PreviousLAC = proto.Int64(-2) }), ErrBadRequest},
		{"write LAC: -2", writeLacReq(func(w *WriteLacRequest) { w.Lac = proto.Int64(-2) }), ErrBadRequest},
		{"write LAC: short key", writeLacReq(func(w *WriteLacRequest) { w.MasterKey = testKey[:10] }), ErrBadRequest},
		{"write LAC: short body", writeLacReq(func(w *WriteLacRequest) { w.Body = w.Body[:15] }), ErrBadRequest},
		{"write LAC: body for another LAC", writeLacReq(func(w *WriteLacRequest) { w.Lac = proto.Int64(5) }), ErrBadRequest},
		{"write LAC: body for another ledger", writeLacReq(func(w *WriteLacRequest) { w.LedgerId = proto.Int64(6) }), ErrBadRequest},
		{"read LAC: negative ledger", &Request{Header: NewHeader(OperationType_READ_LAC, 1),
			ReadLacRequest: &ReadLacRequest{LedgerId: proto.Int64(-1)}}, ErrBadRequest},
		{"force: negative ledger", &Request{Header: NewHeader(OperationType_FORCE_LEDGER, 1),
			ForceLedgerRequest: &ForceLedgerRequest{LedgerId: proto.Int64(-1)}}, ErrBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRequest(tc.req)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.req.Header == nil {
				return
			}
			// Through the wire: DecodeRequest returns the request, with its
			// header, and the same *Error, so a bookie can answer it.
			frame, err := AppendFrame(nil, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			req, err := DecodeRequest(frame[FrameLengthBytes:])
			if !errors.Is(err, tc.want) || req == nil || req.GetHeader().GetTxnId() != tc.req.GetHeader().GetTxnId() {
				t.Fatalf("DecodeRequest = %v, %v", req, err)
			}
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	valid, err := AppendFrame(nil, addReq(nil))
	if err != nil {
		t.Fatal(err)
	}
	valid = valid[FrameLengthBytes:]
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"empty (no header)", []byte{}},
		{"truncated", valid[:len(valid)-1]},
		{"header only, no txnId", unhex(t, "0a04 0803 1002")},
		{"bad varint", unhex(t, "0a06 0803 1002 18ff")},
		{"length past end", unhex(t, "0a7f")},
		{"group wire type", unhex(t, "0b")},
		{"field number 0", unhex(t, "0000")},
		{"add without body", unhex(t, "0a06 0803 1002 1801"+"aa06 1a 0805 1000 1a14"+testKeyHex)},
		{"context pair without value", unhex(t, "0a06 0803 1009 1801"+"c20c02 0a00"+"d206 00")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := DecodeRequest(tc.frame)
			var status *Error
			if err == nil || errors.As(err, &status) || req != nil {
				t.Fatalf("DecodeRequest = %v, %v; want a decode error and no request", req, err)
			}
			resp, err := DecodeResponse(tc.frame)
			if err == nil || resp != nil {
				t.Fatalf("DecodeResponse = %v, %v; want an error", resp, err)
			}
		})
	}
}

func okResponse(op OperationType) *Response {
	r := &Response{Header: NewHeader(op, 1), Status: StatusCode_EOK.Enum()}
	ok := StatusCode_EOK.Enum()
	switch op {
	case OperationType_READ_ENTRY:
		r.ReadResponse = &ReadResponse{Status: ok, LedgerId: proto.Int64(1), EntryId: proto.Int64(2), Body: []byte("b"), MaxLAC: proto.Int64(1)}
	case OperationType_ADD_ENTRY:
		r.AddResponse = &AddResponse{Status: ok, LedgerId: proto.Int64(1), EntryId: proto.Int64(2)}
	case OperationType_AUTH:
		r.AuthResponse = &AuthMessage{AuthPluginName: proto.String("p"), Payload: []byte{}}
	case OperationType_WRITE_LAC:
		r.WriteLacResponse = &WriteLacResponse{Status: ok, LedgerId: proto.Int64(1)}
	case OperationType_READ_LAC:
		r.ReadLacResponse = &ReadLacResponse{Status: ok, LedgerId: proto.Int64(1), LacBody: []byte("l")}
	case OperationType_GET_BOOKIE_INFO:
		r.GetBookieInfoResponse = &GetBookieInfoResponse{Status: ok, FreeDiskSpace: proto.Int64(1 << 30)}
	case OperationType_START_TLS:
		r.StartTLSResponse = &StartTLSResponse{}
	case OperationType_FORCE_LEDGER:
		r.ForceLedgerResponse = &ForceLedgerResponse{Status: ok, LedgerId: proto.Int64(1)}
	case OperationType_GET_LIST_OF_ENTRIES_OF_LEDGER:
		r.GetListOfEntriesOfLedgerResponse = &GetListOfEntriesOfLedgerResponse{Status: ok, LedgerId: proto.Int64(1)}
	}
	return r
}

var supportedOps = []OperationType{
	OperationType_READ_ENTRY, OperationType_ADD_ENTRY, OperationType_AUTH, OperationType_WRITE_LAC,
	OperationType_READ_LAC, OperationType_GET_BOOKIE_INFO, OperationType_START_TLS,
	OperationType_FORCE_LEDGER, OperationType_GET_LIST_OF_ENTRIES_OF_LEDGER,
}

func TestValidateResponse(t *testing.T) {
	for _, op := range supportedOps {
		resp := okResponse(op)
		if err := ValidateResponse(resp); err != nil {
			t.Errorf("%v: %v", op, err)
		}
		if s := ResponseStatus(resp); s != StatusCode_EOK {
			t.Errorf("%v: ResponseStatus = %v", op, s)
		}
	}
	fenced := okResponse(OperationType_ADD_ENTRY)
	fenced.AddResponse.Status = StatusCode_EFENCED.Enum()
	if err := ValidateResponse(fenced); err != nil || !errors.Is(ErrorOf(ResponseStatus(fenced)), ErrFenced) {
		t.Errorf("fenced add: %v, status %v", err, ResponseStatus(fenced))
	}
	// A Java bookie answers an unknown operation with EBADREQ, the request's
	// header and no sub-response.
	unknownOp := &Response{Header: NewHeader(OperationType(40), 1), Status: StatusCode_EBADREQ.Enum()}
	if err := ValidateResponse(unknownOp); err != nil || ResponseStatus(unknownOp) != StatusCode_EBADREQ {
		t.Errorf("EBADREQ for an unknown op: %v", err)
	}
	overall := okResponse(OperationType_READ_ENTRY)
	overall.Status = StatusCode_ETOOMANYREQUESTS.Enum()
	if err := ValidateResponse(overall); err != nil || ResponseStatus(overall) != StatusCode_ETOOMANYREQUESTS {
		t.Errorf("overall status wins: %v, %v", err, ResponseStatus(overall))
	}

	for _, tc := range []struct {
		name string
		resp *Response
		want error
	}{
		{"version 1", func() *Response {
			r := okResponse(OperationType_ADD_ENTRY)
			r.Header.Version = ProtocolVersion_VERSION_ONE.Enum()
			return r
		}(), ErrBadVersion},
		{"unknown overall status", func() *Response {
			r := okResponse(OperationType_ADD_ENTRY)
			r.Status = StatusCode(7).Enum()
			return r
		}(), ErrBadRequest},
		{"unknown sub status", func() *Response {
			r := okResponse(OperationType_ADD_ENTRY)
			r.AddResponse.Status = StatusCode(7).Enum()
			return r
		}(), ErrBadRequest},
		{"EOK without sub-response", &Response{Header: NewHeader(OperationType_READ_LAC, 1), Status: StatusCode_EOK.Enum()}, ErrBadRequest},
		{"EOK for unknown op", &Response{Header: NewHeader(OperationType(40), 1), Status: StatusCode_EOK.Enum()}, ErrBadRequest},
		{"sub-response in the wrong slot", func() *Response {
			r := okResponse(OperationType_ADD_ENTRY)
			r.Header.Operation = OperationType_READ_ENTRY.Enum()
			return r
		}(), ErrBadRequest},
		{"failed, with another op's sub-response", func() *Response {
			r := okResponse(OperationType_ADD_ENTRY)
			r.Status = StatusCode_EIO.Enum()
			r.Header.Operation = OperationType_FORCE_LEDGER.Enum()
			return r
		}(), ErrBadRequest},
	} {
		if err := ValidateResponse(tc.resp); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestDecodeCopies checks that a decoded request does not alias its frame,
// so ReadFrame's buffer can be reused while the request is still in use.
func TestDecodeCopies(t *testing.T) {
	frame, err := AppendFrame(nil, addReq(nil))
	if err != nil {
		t.Fatal(err)
	}
	req, err := DecodeRequest(frame[FrameLengthBytes:])
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(req.AddRequest.Body)
	for i := range frame {
		frame[i] = 0xee
	}
	if !bytes.Equal(req.AddRequest.Body, want) || !bytes.Equal(req.AddRequest.MasterKey, testKey) {
		t.Fatal("decoded request aliases the frame")
	}
}
