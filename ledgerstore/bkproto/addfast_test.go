package bkproto

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// checkSameDecode fails unless DecodeRequestAliased gives what
// DecodeRequest gives for frame, and reports whether it aliased.
func checkSameDecode(t *testing.T, frame []byte) bool {
	t.Helper()
	want, wantErr := DecodeRequest(frame)
	got, aliased, err := DecodeRequestAliased(frame)
	if (want == nil) != (got == nil) || (wantErr == nil) != (err == nil) || StatusOf(wantErr) != StatusOf(err) {
		t.Fatalf("aliased decode gave %v, %v; copying decode %v, %v", got, err, want, wantErr)
	}
	if want != nil && !proto.Equal(want, got) {
		t.Fatalf("aliased decode gave %v; copying decode %v", got, want)
	}
	if aliased && (got.GetAddRequest() == nil || got.GetHeader().GetOperation() != OperationType_ADD_ENTRY) {
		t.Fatalf("aliased a request that is not an add: %v", got)
	}
	return aliased
}

func TestDecodeRequestAliased(t *testing.T) {
	enc := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	add := enc(addReq(nil))
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	// An add request whose AddRequest has extra bytes appended (fields
	// protobuf merges or keeps as unknown).
	withAddField := func(extra []byte) []byte {
		a := enc(addReq(nil).AddRequest)
		h := enc(addReq(nil).Header)
		b := protowire.AppendBytes(tag(nil, 1, protowire.BytesType), h)
		return protowire.AppendBytes(tag(b, 101, protowire.BytesType), append(a, extra...))
	}
	withHeaderField := func(extra []byte) []byte {
		a := enc(addReq(nil).AddRequest)
		h := enc(addReq(nil).Header)
		b := protowire.AppendBytes(tag(nil, 1, protowire.BytesType), append(h, extra...))
		return protowire.AppendBytes(tag(b, 101, protowire.BytesType), a)
	}
	varintField := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(nil, num, protowire.VarintType), v)
	}
	tests := []struct {
		name    string
		frame   []byte
		aliased bool
	}{
		{"add", add, true},
		{"recovery add with write flags", enc(sampleRequests()["recovery add"]), true},
		{"high priority add", enc(func() *Request { r := addReq(nil); r.Header.Priority = proto.Uint32(100); return r }()), true},
		{"bad entry (EBADREQ)", enc(addReq(func(a *AddRequest) { a.Body = a.Body[:10] })), true},
		{"short master key (EBADREQ)", enc(addReq(func(a *AddRequest) { a.MasterKey = a.MasterKey[:3] })), true},
		{"read", enc(sampleRequests()["read"]), false},
		{"start TLS with context", enc(sampleRequests()["start TLS"]), false},
		{"empty", []byte{}, false},
		{"garbage", []byte{0xff, 0xff}, false},
		{"add repeated", append(add, add...), false},
		{"unknown add field", withAddField(varintField(9, 1)), false},
		{"repeated ledger id", withAddField(varintField(1, 5)), false},
		{"unknown flag", withAddField(varintField(100, 7)), false},
		{"write flags", withAddField(varintField(5, 1)), true},
		{"unknown version", withHeaderField(varintField(1, 99)), false},
		{"repeated version", withHeaderField(varintField(1, uint64(ProtocolVersion_VERSION_TWO))), false},
		{"version 2 (EBADVERSION)", enc(func() *Request {
			r := addReq(nil)
			r.Header.Version = ProtocolVersion_VERSION_TWO.Enum()
			return r
		}()), true},
		{"priority", withHeaderField(varintField(4, 100)), true},
		{"priority as bytes", withHeaderField(protowire.AppendBytes(tag(nil, 4, protowire.BytesType), nil)), false},
		{"truncated", add[:len(add)-1], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkSameDecode(t, tt.frame); got != tt.aliased {
				t.Errorf("aliased = %v, want %v", got, tt.aliased)
			}
		})
	}
}

// TestDecodeRequestAliasedAliases checks that an add's body and master
// key are the frame's own bytes, capped so that appending to them cannot
// overwrite the frame.
func TestDecodeRequestAliasedAliases(t *testing.T) {
	frame, err := proto.Marshal(addReq(nil))
	if err != nil {
		t.Fatal(err)
	}
	req, aliased, err := DecodeRequestAliased(frame)
	if err != nil || !aliased {
		t.Fatalf("aliased %v, err %v", aliased, err)
	}
	for name, b := range map[string][]byte{"body": req.AddRequest.Body, "master key": req.AddRequest.MasterKey} {
		i := bytes.Index(frame, b)
		if i < 0 || &frame[i] != &b[0] {
			t.Errorf("%s does not alias the frame", name)
		}
		if cap(b) != len(b) {
			t.Errorf("%s has capacity %d beyond its length %d", name, cap(b), len(b))
		}
	}
}

// FuzzDecodeRequestAliased checks DecodeRequestAliased against
// DecodeRequest on arbitrary frames.
func FuzzDecodeRequestAliased(f *testing.F) {
	for _, req := range sampleRequests() {
		f.Add(fuzzFrame(f, req))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		checkSameDecode(t, frame)
	})
}

func BenchmarkDecodeAddRequest(b *testing.B) {
	req := addReq(func(a *AddRequest) { a.Body = EncodeEntry(5, 3, 2, 1024, DigestCRC32C, nil, make([]byte, 1024)) })
	frame, err := proto.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("copying", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeRequest(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("aliased", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := DecodeRequestAliased(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// checkSameResponseDecode fails unless DecodeResponse (with its direct
// decoder of add responses) gives what protobuf gives for frame, and
// reports whether the direct decoder took it.
func checkSameResponseDecode(t *testing.T, frame []byte) bool {
	t.Helper()
	want, wantErr := decodeResponseProto(frame)
	got, err := DecodeResponse(frame)
	if (want == nil) != (got == nil) || (wantErr == nil) != (err == nil) || StatusOf(wantErr) != StatusOf(err) {
		t.Fatalf("DecodeResponse gave %v, %v; protobuf %v, %v", got, err, want, wantErr)
	}
	if want != nil && !proto.Equal(want, got) {
		t.Fatalf("DecodeResponse gave %v; protobuf %v", got, want)
	}
	return decodeAddResponse(frame) != nil
}

func TestDecodeAddResponse(t *testing.T) {
	enc := func(r *Response) []byte {
		b, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	resp := func(mod func(*Response)) *Response {
		ok := StatusCode_EOK.Enum()
		r := &Response{Header: NewHeader(OperationType_ADD_ENTRY, 9), Status: ok,
			AddResponse: &AddResponse{Status: ok, LedgerId: proto.Int64(5), EntryId: proto.Int64(3)}}
		if mod != nil {
			mod(r)
		}
		return r
	}
	tests := []struct {
		name   string
		frame  []byte
		direct bool
	}{
		{"add", enc(resp(nil)), true},
		{"fenced", enc(resp(func(r *Response) { r.AddResponse.Status = StatusCode_EFENCED.Enum() })), true},
		{"overall error", enc(resp(func(r *Response) { r.Status = StatusCode_EIO.Enum() })), true},
		{"priority", enc(resp(func(r *Response) { r.Header.Priority = proto.Uint32(100) })), true},
		{"version 2", enc(resp(func(r *Response) { r.Header.Version = ProtocolVersion_VERSION_TWO.Enum() })), true},
		{"read op", enc(resp(func(r *Response) { r.Header.Operation = OperationType_READ_ENTRY.Enum() })), false},
		{"status only", enc(resp(func(r *Response) { r.AddResponse = nil; r.Status = StatusCode_EIO.Enum() })), false},
		{"unknown status", append(enc(resp(nil)), 0x10, 0x7f), false},
		{"twice", append(enc(resp(nil)), enc(resp(nil))...), false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkSameResponseDecode(t, tt.frame); got != tt.direct {
				t.Errorf("direct = %v, want %v", got, tt.direct)
			}
		})
	}
}

// FuzzDecodeAddResponse checks DecodeResponse's direct decoder of add
// responses against protobuf on arbitrary frames.
func FuzzDecodeAddResponse(f *testing.F) {
	ok := StatusCode_EOK.Enum()
	for _, r := range []*Response{
		{Header: NewHeader(OperationType_ADD_ENTRY, 9), Status: ok,
			AddResponse: &AddResponse{Status: ok, LedgerId: proto.Int64(5), EntryId: proto.Int64(3)}},
		{Header: NewHeader(OperationType_ADD_ENTRY, 1), Status: StatusCode_EFENCED.Enum()},
	} {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, frame []byte) { checkSameResponseDecode(t, frame) })
}
