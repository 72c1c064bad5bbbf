package bkproto

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
)

// checkSameEncoding fails unless the direct encoder gives AppendFrame's
// bytes (or AppendFrame's failure) for m, appended after a prefix.
func checkSameEncoding(t *testing.T, m proto.Message) {
	t.Helper()
	prefix := []byte("prefix")
	want, wantErr := AppendFrame(bytes.Clone(prefix), m)
	var got []byte
	var err error
	switch m := m.(type) {
	case *Request:
		got, err = AppendRequestFrame(bytes.Clone(prefix), m)
	case *Response:
		got, err = AppendResponseFrame(bytes.Clone(prefix), m)
	}
	if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("direct encoding % x (%v), AppendFrame % x (%v)", got, err, want, wantErr)
	}
}

func TestAppendAddFrames(t *testing.T) {
	withUnknown := addReq(nil)
	withUnknown.AddRequest.ProtoReflect().SetUnknown([]byte{0x48, 0x01}) // field 9 = 1
	requests := map[string]*Request{
		"add":          addReq(nil),
		"recovery add": sampleRequests()["recovery add"],
		"negative ids and flags": addReq(func(a *AddRequest) {
			a.LedgerId, a.EntryId, a.WriteFlags = proto.Int64(-1), proto.Int64(-5), proto.Int32(-3)
			a.Flag = AddRequest_Flag(-2).Enum()
		}),
		"empty key and body": addReq(func(a *AddRequest) { a.MasterKey, a.Body = []byte{}, []byte{} }),
		"large body":         addReq(func(a *AddRequest) { a.Body = make([]byte, 300_000) }),
		"no body":            addReq(func(a *AddRequest) { a.Body = nil }),
		"no ledger id":       addReq(func(a *AddRequest) { a.LedgerId = nil }),
		"unknown field":      withUnknown,
		"read":               sampleRequests()["read"],
		"start TLS":          sampleRequests()["start TLS"],
	}
	prio := addReq(nil)
	prio.Header.Priority = proto.Uint32(1 << 31)
	requests["priority"] = prio
	noHeader := addReq(nil)
	noHeader.Header = nil
	requests["no header"] = noHeader
	ctxReq := addReq(nil)
	ctxReq.RequestContext = []*ContextPair{{Key: proto.String("k"), Value: proto.String("v")}}
	requests["with context"] = ctxReq
	for name, req := range requests {
		t.Run(name, func(t *testing.T) { checkSameEncoding(t, req) })
	}
	ok := StatusCode_EOK.Enum()
	addResp := func(mod func(*Response)) *Response {
		r := &Response{Header: NewHeader(OperationType_ADD_ENTRY, 1<<40), Status: ok,
			AddResponse: &AddResponse{Status: StatusCode_EFENCED.Enum(), LedgerId: proto.Int64(7), EntryId: proto.Int64(1 << 33)}}
		if mod != nil {
			mod(r)
		}
		return r
	}
	responses := map[string]*Response{
		"add":         addResp(nil),
		"priority":    addResp(func(r *Response) { r.Header.Priority = proto.Uint32(100) }),
		"negative":    addResp(func(r *Response) { r.AddResponse.LedgerId, r.AddResponse.EntryId = proto.Int64(-1), proto.Int64(-9) }),
		"no status":   addResp(func(r *Response) { r.Status = nil }),
		"no entry id": addResp(func(r *Response) { r.AddResponse.EntryId = nil }),
		"status only": addResp(func(r *Response) { r.AddResponse = nil }),
		"read":        addResp(func(r *Response) { r.AddResponse, r.ReadResponse = nil, &ReadResponse{Status: ok} }),
	}
	for name, resp := range responses {
		t.Run("response "+name, func(t *testing.T) { checkSameEncoding(t, resp) })
	}
}

// FuzzAppendAddRequest compares the direct add encoders with AppendFrame
// on arbitrary field values.
func FuzzAppendAddRequest(f *testing.F) {
	f.Add(int64(5), int64(3), uint64(1), uint32(0), false, int32(0), int32(0), testKey, []byte("body"), int32(0))
	f.Add(int64(-1), int64(-1), uint64(1<<63), uint32(100), true, int32(1), int32(-1), []byte{}, []byte{}, int32(-1))
	f.Fuzz(func(t *testing.T, ledgerID, entryID int64, txn uint64, priority uint32, hasPriority bool,
		flag, writeFlags int32, key, body []byte, status int32) {
		req := &Request{Header: NewHeader(OperationType_ADD_ENTRY, txn),
			AddRequest: &AddRequest{LedgerId: &ledgerID, EntryId: &entryID, MasterKey: key, Body: body}}
		if hasPriority {
			req.Header.Priority = &priority
		}
		if flag != 0 {
			req.AddRequest.Flag = AddRequest_Flag(flag).Enum()
		}
		if writeFlags != 0 {
			req.AddRequest.WriteFlags = &writeFlags
		}
		checkSameEncoding(t, req)
		st := StatusCode(status)
		checkSameEncoding(t, &Response{Header: req.Header, Status: &st,
			AddResponse: &AddResponse{Status: &st, LedgerId: &ledgerID, EntryId: &entryID}})
	})
}

func BenchmarkEncodeAddRequest(b *testing.B) {
	req := addReq(func(a *AddRequest) { a.Body = EncodeEntry(5, 3, 2, 1024, DigestCRC32C, nil, make([]byte, 1024)) })
	buf := make([]byte, 0, 4096)
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

func TestNewAddResponse(t *testing.T) {
	headers := map[string]*BKPacketHeader{
		"plain":     NewHeader(OperationType_ADD_ENTRY, 7),
		"version 2": {Version: ProtocolVersion_VERSION_TWO.Enum(), Operation: OperationType_ADD_ENTRY.Enum(), TxnId: proto.Uint64(1)},
		"priority":  {Version: ProtocolVersionV3.Enum(), Operation: OperationType_ADD_ENTRY.Enum(), TxnId: proto.Uint64(1), Priority: proto.Uint32(100)},
		"no txn":    {Version: ProtocolVersionV3.Enum(), Operation: OperationType_ADD_ENTRY.Enum()},
	}
	for name, h := range headers {
		for _, st := range []StatusCode{StatusCode_EOK, StatusCode_EFENCED} {
			s := st.Enum()
			want := &Response{Header: &BKPacketHeader{Version: ProtocolVersionV3.Enum(), Operation: h.Operation,
				TxnId: h.TxnId, Priority: h.Priority}, Status: s,
				AddResponse: &AddResponse{Status: s, LedgerId: proto.Int64(3), EntryId: proto.Int64(-4)}}
			if got := NewAddResponse(h, st, 3, -4); !proto.Equal(got, want) {
				t.Errorf("%s, %v: %v, want %v", name, st, got, want)
			}
		}
	}
}

func TestAppendAddResponseFrame(t *testing.T) {
	headers := map[string]*BKPacketHeader{
		"plain":     NewHeader(OperationType_ADD_ENTRY, 1<<40),
		"version 2": {Version: ProtocolVersion_VERSION_TWO.Enum(), Operation: OperationType_ADD_ENTRY.Enum(), TxnId: proto.Uint64(1)},
		"priority":  {Version: ProtocolVersionV3.Enum(), Operation: OperationType_ADD_ENTRY.Enum(), TxnId: proto.Uint64(1), Priority: proto.Uint32(100)},
		"no txn":    {Version: ProtocolVersionV3.Enum(), Operation: OperationType_ADD_ENTRY.Enum()},
	}
	for name, h := range headers {
		for _, st := range []StatusCode{StatusCode_EOK, StatusCode_EFENCED, StatusCode(-1)} {
			want, wantErr := AppendFrame([]byte("x"), NewAddResponse(h, st, 3, -4))
			got, err := AppendAddResponseFrame([]byte("x"), h, st, 3, -4)
			if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
				t.Errorf("%s, %v: % x (%v), want % x (%v)", name, st, got, err, want, wantErr)
			}
		}
	}
}
