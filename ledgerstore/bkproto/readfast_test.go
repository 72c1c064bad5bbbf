package bkproto

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// decodeReadResponse is the direct decoder of read responses alone: the
// response, or nil if DecodeResponse leaves frame to protobuf.
func decodeReadResponse(frame []byte) *Response {
	t, ok := splitResponse(frame)
	if !ok || t.slot != fieldResponseRead {
		return nil
	}
	return t.read()
}

func TestAppendReadFrames(t *testing.T) {
	withUnknown := readReq(nil)
	withUnknown.ReadRequest.ProtoReflect().SetUnknown([]byte{0x48, 0x01}) // field 9 = 1
	requests := map[string]*Request{
		"read":       sampleRequests()["read"],
		"LAC read":   sampleRequests()["LAC read"],
		"fence":      sampleRequests()["fence"],
		"long poll":  sampleRequests()["long poll"],
		"piggyback":  sampleRequests()["piggyback"],
		"empty key":  readReq(func(r *ReadRequest) { r.MasterKey = []byte{} }),
		"large key":  readReq(func(r *ReadRequest) { r.MasterKey = make([]byte, 300) }),
		"no entry":   readReq(func(r *ReadRequest) { r.EntryId = nil }),
		"no ledger":  readReq(func(r *ReadRequest) { r.LedgerId = nil }),
		"unknown":    withUnknown,
		"add":        addReq(nil),
		"read LAC":   sampleRequests()["read LAC"],
		"both slots": func() *Request { r := readReq(nil); r.AddRequest = addReq(nil).AddRequest; return r }(),
		"negative ids and flag": readReq(func(r *ReadRequest) {
			r.LedgerId, r.EntryId, r.PreviousLAC, r.TimeOut = proto.Int64(-1), proto.Int64(-7), proto.Int64(-2), proto.Int64(-3)
			r.Flag = ReadRequest_Flag(-5).Enum()
		}),
	}
	prio := readReq(func(r *ReadRequest) { r.Flag = ReadRequest_FENCE_LEDGER.Enum(); r.MasterKey = testKey })
	prio.Header.Priority = proto.Uint32(100)
	requests["fence with priority"] = prio
	noHeader := readReq(nil)
	noHeader.Header = nil
	requests["no header"] = noHeader
	ctxReq := readReq(nil)
	ctxReq.RequestContext = []*ContextPair{{Key: proto.String("k"), Value: proto.String("v")}}
	requests["with context"] = ctxReq
	for name, req := range requests {
		t.Run(name, func(t *testing.T) { checkSameEncoding(t, req) })
	}
}

// FuzzAppendReadRequest compares the direct read encoder with AppendFrame
// on arbitrary field values.
func FuzzAppendReadRequest(f *testing.F) {
	f.Add(int64(5), int64(3), uint64(1), uint32(0), false, int32(0), testKey, false, int64(0), false, int64(0))
	f.Add(int64(-1), int64(-1), uint64(1<<63), uint32(100), true, int32(1), []byte{}, true, int64(-1), true, int64(1<<40))
	f.Fuzz(func(t *testing.T, ledgerID, entryID int64, txn uint64, priority uint32, hasPriority bool,
		flag int32, key []byte, hasPrev bool, prev int64, hasTimeout bool, timeout int64) {
		req := &Request{Header: NewHeader(OperationType_READ_ENTRY, txn),
			ReadRequest: &ReadRequest{LedgerId: &ledgerID, EntryId: &entryID, MasterKey: key}}
		if hasPriority {
			req.Header.Priority = &priority
		}
		if flag != 0 {
			req.ReadRequest.Flag = ReadRequest_Flag(flag).Enum()
		}
		if hasPrev {
			req.ReadRequest.PreviousLAC = &prev
		}
		if hasTimeout {
			req.ReadRequest.TimeOut = &timeout
		}
		checkSameEncoding(t, req)
	})
}

// checkSameReadDecode fails unless DecodeResponse gives what protobuf
// gives for frame, and reports whether the direct read decoder took it.
func checkSameReadDecode(t *testing.T, frame []byte) bool {
	t.Helper()
	checkSameResponseDecode(t, frame)
	resp := decodeReadResponse(frame)
	if resp != nil {
		if b := resp.ReadResponse.Body; len(b) > 0 && len(frame) > 0 {
			if i := bytes.Index(frame, b); i >= 0 && &frame[i] == &b[0] {
				t.Fatal("the body aliases the frame")
			}
		}
	}
	return resp != nil
}

func TestDecodeReadResponse(t *testing.T) {
	enc := func(r *Response) []byte {
		b, err := proto.MarshalOptions{AllowPartial: true}.Marshal(r) // some cases lack a required field
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	resp := func(mod func(*Response)) *Response {
		ok := StatusCode_EOK.Enum()
		r := &Response{Header: NewHeader(OperationType_READ_ENTRY, 9), Status: ok,
			ReadResponse: &ReadResponse{Status: ok, LedgerId: proto.Int64(5), EntryId: proto.Int64(3),
				Body: EncodeEntry(5, 3, 2, 1024, DigestCRC32C, nil, make([]byte, 1024))}}
		if mod != nil {
			mod(r)
		}
		return r
	}
	// A read response whose ReadResponse has extra bytes appended.
	withReadField := func(extra []byte) []byte {
		r := resp(nil)
		inner, err := proto.Marshal(r.ReadResponse)
		if err != nil {
			t.Fatal(err)
		}
		h, err := proto.Marshal(r.Header)
		if err != nil {
			t.Fatal(err)
		}
		b := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), h)
		b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.VarintType), 0)
		return protowire.AppendBytes(protowire.AppendTag(b, 100, protowire.BytesType), append(inner, extra...))
	}
	varintField := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	tests := []struct {
		name   string
		frame  []byte
		direct bool
	}{
		{"read", enc(resp(nil)), true},
		{"built field by field", withReadField(nil), true},
		{"max LAC and timestamp", enc(resp(func(r *Response) {
			r.ReadResponse.MaxLAC, r.ReadResponse.LacUpdateTimestamp = proto.Int64(7), proto.Int64(-1)
		})), true},
		{"empty body", enc(resp(func(r *Response) { r.ReadResponse.Body = []byte{} })), true},
		{"no body", enc(resp(func(r *Response) { r.ReadResponse.Body = nil })), true},
		{"no entry", enc(resp(func(r *Response) {
			r.ReadResponse.Status, r.ReadResponse.Body = StatusCode_ENOENTRY.Enum(), nil
		})), true},
		{"overall error with sub-response", enc(resp(func(r *Response) { r.Status = StatusCode_EIO.Enum() })), true},
		{"priority", enc(resp(func(r *Response) { r.Header.Priority = proto.Uint32(100) })), true},
		{"version 2 (EBADVERSION)", enc(resp(func(r *Response) { r.Header.Version = ProtocolVersion_VERSION_TWO.Enum() })), true},
		{"negative ids", enc(resp(func(r *Response) {
			r.ReadResponse.LedgerId, r.ReadResponse.EntryId = proto.Int64(-1), proto.Int64(-1)
		})), true},
		{"add op", enc(resp(func(r *Response) { r.Header.Operation = OperationType_ADD_ENTRY.Enum() })), false},
		{"status only", enc(resp(func(r *Response) { r.ReadResponse = nil; r.Status = StatusCode_EIO.Enum() })), false},
		{"no entry id", enc(resp(func(r *Response) { r.ReadResponse.EntryId = nil })), false},
		{"status repeated, undefined", withReadField(varintField(1, 0x7f)), false},
		{"repeated entry id", withReadField(varintField(3, 4)), false},
		{"unknown read field", withReadField(varintField(9, 1)), false},
		{"flag field", withReadField(varintField(100, 1)), false},
		{"unknown top status", append(enc(resp(nil)), 0x10, 0x7f), false},
		{"twice", append(enc(resp(nil)), enc(resp(nil))...), false},
		{"truncated", func() []byte { b := enc(resp(nil)); return b[:len(b)-1] }(), false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkSameReadDecode(t, tt.frame); got != tt.direct {
				t.Errorf("direct = %v, want %v", got, tt.direct)
			}
		})
	}
}

// FuzzDecodeReadResponse checks DecodeResponse's direct decoder of read
// responses against protobuf on arbitrary frames.
func FuzzDecodeReadResponse(f *testing.F) {
	ok := StatusCode_EOK.Enum()
	for _, r := range []*Response{
		{Header: NewHeader(OperationType_READ_ENTRY, 9), Status: ok,
			ReadResponse: &ReadResponse{Status: ok, LedgerId: proto.Int64(5), EntryId: proto.Int64(3),
				Body: []byte("body"), MaxLAC: proto.Int64(2), LacUpdateTimestamp: proto.Int64(1)}},
		{Header: NewHeader(OperationType_READ_ENTRY, 1), Status: ok,
			ReadResponse: &ReadResponse{Status: StatusCode_ENOENTRY.Enum(), LedgerId: proto.Int64(5), EntryId: proto.Int64(3)}},
		{Header: NewHeader(OperationType_READ_ENTRY, 1), Status: StatusCode_EIO.Enum()},
	} {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, frame []byte) { checkSameReadDecode(t, frame) })
}

func BenchmarkDecodeReadResponse(b *testing.B) {
	ok := StatusCode_EOK.Enum()
	frame, err := proto.Marshal(&Response{Header: NewHeader(OperationType_READ_ENTRY, 9), Status: ok,
		ReadResponse: &ReadResponse{Status: ok, LedgerId: proto.Int64(5), EntryId: proto.Int64(3),
			Body: EncodeEntry(5, 3, 2, 1024, DigestCRC32C, nil, make([]byte, 1024))}})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("protobuf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeResponseProto(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeResponse(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncodeReadRequest(b *testing.B) {
	req := readReq(func(r *ReadRequest) { r.Flag = ReadRequest_FENCE_LEDGER.Enum(); r.MasterKey = testKey })
	req.Header.Priority = proto.Uint32(100)
	buf := make([]byte, 0, 256)
	b.Run("AppendFrame", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := AppendFrame(buf[:0], req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := AppendRequestFrame(buf[:0], req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
