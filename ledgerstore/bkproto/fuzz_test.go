package bkproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"
)

// fuzzFrame marshals m for a fuzz seed, without the length prefix.
func fuzzFrame(f *testing.F, m proto.Message) []byte {
	b, err := AppendFrame(nil, m)
	if err != nil {
		f.Fatal(err)
	}
	return b[FrameLengthBytes:]
}

// checkStatusError fails unless err is nil or an *Error: a message that
// unmarshalled may be malformed, but only in ways ValidateX describes.
func checkStatusError(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if err != nil && !errors.As(err, &e) {
		t.Fatalf("decoded message with a non-status error: %v", err)
	}
}

// FuzzDecodeRequest feeds arbitrary frames to DecodeRequest. Whatever
// unmarshals must re-marshal to bytes that decode to an equal request with
// the same verdict, and re-marshal to the same bytes (a canonical form).
func FuzzDecodeRequest(f *testing.F) {
	for _, req := range sampleRequests() {
		f.Add(fuzzFrame(f, req))
	}
	for _, tc := range frameCases(f) {
		if _, ok := tc.msg.(*Request); ok {
			f.Add(fuzzFrame(f, tc.msg))
		}
	}
	f.Add([]byte{})
	f.Add([]byte("\x0a\x06\x08\x03\x10\x02\x18\x07"))
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := DecodeRequest(frame)
		if req == nil {
			if err == nil {
				t.Fatal("nil request without an error")
			}
			return // rejecting garbage is correct; panicking is not
		}
		checkStatusError(t, err)
		enc, mErr := proto.Marshal(req)
		if mErr != nil {
			t.Fatalf("decoded request does not marshal: %v", mErr)
		}
		again, err2 := DecodeRequest(enc)
		if again == nil || !proto.Equal(req, again) || StatusOf(err) != StatusOf(err2) {
			t.Fatalf("round trip turned %v (%v) into %v (%v)", req, err, again, err2)
		}
		if enc2, _ := proto.Marshal(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not canonical:\n% x\n% x", enc, enc2)
		}
	})
}

// FuzzDecodeResponse is FuzzDecodeRequest for responses.
func FuzzDecodeResponse(f *testing.F) {
	for _, op := range supportedOps {
		f.Add(fuzzFrame(f, okResponse(op)))
	}
	for _, tc := range frameCases(f) {
		if _, ok := tc.msg.(*Response); ok {
			f.Add(fuzzFrame(f, tc.msg))
		}
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		resp, err := DecodeResponse(frame)
		if resp == nil {
			if err == nil {
				t.Fatal("nil response without an error")
			}
			return
		}
		checkStatusError(t, err)
		_ = ResponseStatus(resp) // must not panic, whatever the response holds
		enc, mErr := proto.Marshal(resp)
		if mErr != nil {
			t.Fatalf("decoded response does not marshal: %v", mErr)
		}
		again, err2 := DecodeResponse(enc)
		if again == nil || !proto.Equal(resp, again) || StatusOf(err) != StatusOf(err2) {
			t.Fatalf("round trip turned %v (%v) into %v (%v)", resp, err, again, err2)
		}
		if enc2, _ := proto.Marshal(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not canonical:\n% x\n% x", enc, enc2)
		}
	})
}

// FuzzReadFrame reads frames from arbitrary bytes with a small limit until
// the first error. Every frame must respect the limit and, re-prefixed,
// reproduce exactly the bytes consumed; the error must be one ReadFrame
// documents; memory must stay near the bytes actually supplied.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x02hi\x00\x00\x00\x00"), uint16(10), uint8(0))
	f.Add([]byte("\x00\x00\x00\x0bhello world"), uint16(10), uint8(4))
	f.Add([]byte("\xff\xff\xff\xfe"), uint16(0), uint8(0))
	f.Add([]byte("\x00\x00\x10"), uint16(100), uint8(16))
	f.Fuzz(func(t *testing.T, data []byte, limit uint16, bufCap uint8) {
		r := bytes.NewReader(data)
		buf := make([]byte, 0, bufCap)
		var rebuilt []byte
		max := int(limit)
		if max == 0 {
			max = DefaultMaxFrameBytes
		}
		for {
			frame, err := ReadFrame(r, buf, int(limit))
			if err != nil {
				switch {
				case err == io.EOF:
					if len(rebuilt) != len(data) {
						t.Fatalf("io.EOF after %d of %d bytes", len(rebuilt), len(data))
					}
				case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrFrameTooLarge):
				default:
					t.Fatalf("undocumented error %v", err)
				}
				break
			}
			if len(frame) > max {
				t.Fatalf("frame of %d bytes, limit %d", len(frame), max)
			}
			if cap(frame) > 2*len(data)+readChunkBytes {
				t.Fatalf("frame capacity %d for %d input bytes", cap(frame), len(data))
			}
			rebuilt = binary.BigEndian.AppendUint32(rebuilt, uint32(len(frame)))
			rebuilt = append(rebuilt, frame...)
			if !bytes.Equal(rebuilt, data[:len(rebuilt)]) {
				t.Fatal("frames do not reproduce the input")
			}
		}
	})
}

// FuzzDecodeEntry feeds arbitrary bodies to DecodeEntry and DecodeLAC for
// every digest type (and unknown ones). What verifies must re-encode to the
// same bytes.
func FuzzDecodeEntry(f *testing.F) {
	for _, typ := range []DigestType{DigestCRC32, DigestHMAC, DigestCRC32C, DigestDummy} {
		f.Add(EncodeEntry(vecLedger, vecEntry, vecLAC, vecLength, typ, vecMacKey(), []byte(vecPayload)),
			int32(typ), int64(vecLedger), int64(vecEntry))
		f.Add(EncodeLAC(vecLedger, vecLAC, typ, vecMacKey()), int32(typ), int64(vecLedger), LastAddConfirmed)
	}
	f.Add([]byte{}, int32(0), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, body []byte, typ int32, ledger, entry int64) {
		dt := DigestType(typ)
		e, err := DecodeEntry(body, dt, vecMacKey(), ledger, entry)
		if err == nil {
			if e.LedgerID != ledger || (entry != LastAddConfirmed && e.EntryID != entry) {
				t.Fatalf("accepted %+v for ledger %d entry %d", e.EntryHeader, ledger, entry)
			}
			again := EncodeEntry(e.LedgerID, e.EntryID, e.LAC, e.Length, dt, vecMacKey(), e.Payload)
			if !bytes.Equal(again, body) {
				t.Fatalf("re-encoded entry differs:\n% x\n% x", body, again)
			}
		} else if !errors.Is(err, ErrDigestMismatch) {
			t.Fatalf("DecodeEntry error %v is not a digest mismatch", err)
		}
		lac, err := DecodeLAC(body, dt, vecMacKey(), ledger)
		if err == nil {
			n, _ := DigestBytes(dt)
			again := EncodeLAC(ledger, lac, dt, vecMacKey())
			if !bytes.Equal(again, body[:LACHeaderBytes+n]) {
				t.Fatalf("re-encoded LAC body differs:\n% x\n% x", body, again)
			}
		} else if !errors.Is(err, ErrDigestMismatch) {
			t.Fatalf("DecodeLAC error %v is not a digest mismatch", err)
		}
	})
}

// FuzzDecodeV2Request feeds arbitrary frames to DecodeV2Request. A frame
// is either refused as malformed (with no request) or decoded into a v3
// request whose verdict is what ValidateRequest, or the version check,
// says; a request it decodes re-encodes, with AppendV2Request, into a
// frame that decodes to the same request.
func FuzzDecodeV2Request(f *testing.F) {
	ent := v2Entry(7, 3, "hello")
	f.Add(cat(be32(0x02010000), v2Key, ent))
	f.Add(cat(be32(0x02010006), v2Key, ent))
	f.Add(cat(be32(0x02020005), be64(7), be64(-1), v2Key))
	f.Add(cat(be32(0x01020001), be64(7), be64(-1)))
	f.Add(cat(be32(0x00000002), be64(7), be64(4)))
	f.Add(cat(be32(0x02030000), []byte{0x0a, 0x01, 'x', 0x12, 0x00}))
	f.Add(cat(be32(0x02070005), be64(7), be64(0), be64(5), be32(3), be64(1<<20), v2Key))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, v2, err := DecodeV2Request(frame)
		if req == nil {
			if !errors.Is(err, ErrV2Malformed) {
				t.Fatalf("nil request with error %v", err)
			}
			return
		}
		checkStatusError(t, err)
		if err == nil && ValidateRequest(req) != nil {
			t.Fatalf("accepted an invalid request: %v", ValidateRequest(req))
		}
		if err != nil {
			return
		}
		enc, eErr := AppendV2Request(nil, req)
		if v2.Header.OpCode == V2BatchReadEntry {
			enc, eErr = AppendV2BatchReadRequest(nil, req, v2.RequestID, v2.MaxCount, v2.MaxSize)
		}
		if eErr != nil {
			t.Fatalf("valid request %v does not re-encode: %v", req, eErr)
		}
		again, v2b, err2 := DecodeV2Request(enc[FrameLengthBytes:])
		if err2 != nil || !proto.Equal(req, again) {
			t.Fatalf("round trip turned %v into %v (%v)", req, again, err2)
		}
		if v2b.LedgerID != v2.LedgerID || v2b.EntryID != v2.EntryID || v2b.Header.OpCode != v2.Header.OpCode ||
			v2b.RequestID != v2.RequestID || v2b.MaxCount != v2.MaxCount || v2b.MaxSize != v2.MaxSize {
			t.Fatalf("round trip turned %+v into %+v", v2, v2b)
		}
	})
}

// FuzzDecodeV2Response feeds arbitrary frames to DecodeV2Response. What it
// decodes must re-encode, with AppendV2Response for the request it
// answers, into a frame that decodes to the same response.
func FuzzDecodeV2Response(f *testing.F) {
	f.Add(cat(be32(0x02010000), be32(0), be64(7), be64(3)))
	f.Add(cat(be32(0x02020000), be32(0), be64(7), be64(-1), v2Entry(7, 4, "data")))
	f.Add(cat(be32(0x02020000), be32(107), be64(7), be64(4)))
	f.Add(cat(be32(0x02030000), []byte{0x0a, 0x01, 'x', 0x12, 0x00}))
	f.Add(cat(be32(0x02070000), be32(0), be64(7), be64(4), be64(9), AppendV2BatchEntry(nil, v2Entry(7, 4, "data"))))
	f.Add(cat(be32(0x02070000), be32(1), be64(7), be64(4), be64(9)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		resp, err := DecodeV2Response(frame)
		if resp == nil {
			if !errors.Is(err, ErrV2Malformed) {
				t.Fatalf("nil response with error %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("response %v with error %v", resp, err)
		}
		if ValidateResponse(resp) != nil {
			t.Fatalf("decoded an invalid v3 response: %v", ValidateResponse(resp))
		}
		v2 := V2Request{Header: ParseV2Header(binary.BigEndian.Uint32(frame)), LedgerID: -1, EntryID: -1}
		v2.Header.Flags = 0
		if r := resp.ReadResponse; r != nil {
			v2.LedgerID, v2.EntryID = r.GetLedgerId(), r.GetEntryId()
			v2.RequestID = int64(resp.GetHeader().GetTxnId()) // a batch response's request id
		}
		if r := resp.AddResponse; r != nil {
			v2.LedgerID, v2.EntryID = r.GetLedgerId(), r.GetEntryId()
		}
		enc, eErr := AppendV2Response(nil, v2, resp)
		if eErr != nil {
			t.Fatalf("response %v does not re-encode: %v", resp, eErr)
		}
		again, err2 := DecodeV2Response(enc[FrameLengthBytes:])
		if err2 != nil || !proto.Equal(resp, again) {
			t.Fatalf("round trip turned %v into %v (%v)", resp, again, err2)
		}
	})
}

// FuzzV2BatchEntries feeds arbitrary batch bodies to V2BatchEntries: it
// either refuses one as malformed or splits it into entries that, each
// after its length, make up the body again.
func FuzzV2BatchEntries(f *testing.F) {
	f.Add(AppendV2BatchEntry(AppendV2BatchEntry(nil, v2Entry(7, 4, "a")), v2Entry(7, 5, "bb")))
	f.Add([]byte{0, 0, 0, 9, 1})
	f.Add([]byte{0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		entries, err := V2BatchEntries(body)
		if err != nil {
			if !errors.Is(err, ErrV2Malformed) {
				t.Fatalf("error %v does not wrap ErrV2Malformed", err)
			}
			return
		}
		var again []byte
		for _, e := range entries {
			again = AppendV2BatchEntry(again, e)
		}
		if !bytes.Equal(again, body) {
			t.Fatalf("%d entries re-encode to %x, not %x", len(entries), again, body)
		}
	})
}
