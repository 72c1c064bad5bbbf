package zkproto

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
	"unicode/utf16"

	"keeper/coordination/jute"
)

// fuzzMaxLen keeps fuzzed lengths small so the fuzzer explores the limit.
const fuzzMaxLen = 1 << 10

// FuzzDecodeRequest feeds arbitrary payloads to DecodeRequest, for every
// opcode. Whatever decodes must re-encode to bytes that decode to the same
// value and re-encode to the same bytes (a canonical form).
func FuzzDecodeRequest(f *testing.F) {
	for op, rec := range sampleRequests() {
		f.Add(EncodeRequest(RequestHeader{Xid: 1, Op: op}, rec))
	}
	f.Add([]byte("\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00\x02/a\x01"))
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, rec, err := DecodeRequest(frame, fuzzMaxLen)
		if err != nil {
			return // rejecting garbage is correct; panicking or over-allocating is not
		}
		enc := EncodeRequest(h, rec)
		h2, rec2, err := DecodeRequest(enc, fuzzMaxLen)
		if err != nil || h != h2 || !reflect.DeepEqual(rec, rec2) {
			t.Fatalf("round trip turned %+v %#v into %+v %#v (err: %v)", h, rec, h2, rec2, err)
		}
		if again := EncodeRequest(h2, rec2); !bytes.Equal(enc, again) {
			t.Fatalf("encoding not canonical:\n% x\n% x", enc, again)
		}
	})
}

// FuzzDecodeReply feeds arbitrary payloads to DecodeReply for every op with
// a reply body, with the same round-trip checks as FuzzDecodeRequest.
func FuzzDecodeReply(f *testing.F) {
	for op, rec := range sampleResponses() {
		f.Add(int32(op), EncodeReply(ReplyHeader{Xid: 1, Zxid: 2}, rec))
	}
	f.Add(int32(OpPing), EncodeReply(ReplyHeader{Xid: XidNotification, Zxid: -1},
		&WatcherEvent{Type: EventNodeDeleted, State: StateSyncConnected, Path: "/x"}))
	f.Fuzz(func(t *testing.T, op int32, frame []byte) {
		h, rec, err := DecodeReply(frame, Op(op), fuzzMaxLen)
		if err != nil {
			return
		}
		enc := EncodeReply(h, rec)
		h2, rec2, err := DecodeReply(enc, Op(op), fuzzMaxLen)
		if err != nil || h != h2 || !reflect.DeepEqual(rec, rec2) {
			t.Fatalf("round trip turned %+v %#v into %+v %#v (err: %v)", h, rec, h2, rec2, err)
		}
		if again := EncodeReply(h2, rec2); !bytes.Equal(enc, again) {
			t.Fatalf("encoding not canonical:\n% x\n% x", enc, again)
		}
	})
}

// FuzzConnectRequest round-trips arbitrary handshake payloads, in both
// directions' records.
func FuzzConnectRequest(f *testing.F) {
	f.Add(jute.Marshal(&ConnectRequest{TimeoutMs: 30000, Passwd: make([]byte, 16), HasReadOnly: true}))
	f.Add(jute.Marshal(&ConnectRequest{TimeoutMs: 30000, Passwd: make([]byte, 16)}))
	f.Add(jute.Marshal(&ConnectResponse{TimeoutMs: 4000, SessionID: 1, Passwd: make([]byte, 16), HasReadOnly: true}))
	f.Fuzz(func(t *testing.T, payload []byte) {
		if req, err := DecodeConnectRequest(payload, fuzzMaxLen); err == nil {
			enc := jute.Marshal(&req)
			again, err := DecodeConnectRequest(enc, fuzzMaxLen)
			if err != nil || !reflect.DeepEqual(req, again) {
				t.Fatalf("request round trip turned %+v into %+v (err: %v)", req, again, err)
			}
			// Only the readOnly byte may change: any non-zero byte reads as true.
			n := len(enc)
			if req.HasReadOnly {
				n--
			}
			if !bytes.HasPrefix(payload, enc[:n]) {
				t.Fatalf("re-encoding % x does not match the input % x", enc, payload)
			}
		}
		if resp, err := DecodeConnectResponse(payload, fuzzMaxLen); err == nil {
			enc := jute.Marshal(&resp)
			again, err := DecodeConnectResponse(enc, fuzzMaxLen)
			if err != nil || !reflect.DeepEqual(resp, again) {
				t.Fatalf("response round trip turned %+v into %+v (err: %v)", resp, again, err)
			}
		}
	})
}

// FuzzMultiResponse round-trips arbitrary multi response bodies.
func FuzzMultiResponse(f *testing.F) {
	f.Add(jute.Marshal(FailedMultiResponse(4, 1, CodeBadVersion)))
	f.Add(jute.Marshal(sampleResponses()[OpMulti]))
	f.Add(jute.Marshal(sampleResponses()[OpMultiRead]))
	f.Fuzz(func(t *testing.T, body []byte) {
		var m MultiResponse
		if jute.Unmarshal(body, &m, fuzzMaxLen) != nil {
			return
		}
		enc := jute.Marshal(&m)
		var again MultiResponse
		if err := jute.Unmarshal(enc, &again, fuzzMaxLen); err != nil || !reflect.DeepEqual(m, again) {
			t.Fatalf("round trip turned %#v into %#v (err: %v)", m, again, err)
		}
	})
}

// FuzzReadFrame reads frames from arbitrary bytes: it must never panic,
// never return more than maxLen bytes, never allocate a payload beyond
// maxLen (beyond the 4-byte prefix buffer), and return exactly the bytes after a valid prefix.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x02ab"), uint16(10), uint16(0))
	f.Add([]byte("\x7f\xff\xff\xff"), uint16(10), uint16(4))
	f.Add([]byte("ruok"), uint16(0), uint16(16))
	f.Fuzz(func(t *testing.T, data []byte, maxArg, bufCap uint16) {
		maxLen := int(maxArg)
		buf := make([]byte, 0, int(bufCap))
		got, err := ReadFrame(bytes.NewReader(data), buf, maxLen)
		if err != nil {
			return
		}
		limit := maxLen
		if limit <= 0 {
			limit = jute.DefaultMaxBuffer
		}
		if len(got) > limit {
			t.Fatalf("returned %d bytes with maxLen %d", len(got), maxLen)
		}
		// A buffer smaller than the prefix is replaced by a 4-byte one.
		if cap(got) > max(cap(buf), len(got), FrameLengthLen) {
			t.Fatalf("payload capacity %d exceeds the buffer (%d) and the length (%d)", cap(got), cap(buf), len(got))
		}
		n := int(binary.BigEndian.Uint32(data))
		if n != len(got) || !bytes.Equal(got, data[4:4+n]) {
			t.Fatalf("payload % x does not match input % x", got, data)
		}
	})
}

// refValidatePath is an independent statement of docs/zookeeper-protocol.md §2.5 that follows the
// Java server: it turns the bytes into UTF-16 code units (invalid UTF-8
// becoming U+FFFD, characters above U+FFFF becoming surrogate pairs) and
// checks the rules one code unit and one component at a time.
func refValidatePath(s string) bool {
	units := utf16.Encode([]rune(s))
	if len(units) == 0 || units[0] != '/' {
		return false
	}
	if len(units) == 1 {
		return true
	}
	if units[len(units)-1] == '/' {
		return false
	}
	start := 1
	for i := 1; i <= len(units); i++ {
		if i == len(units) || units[i] == '/' {
			comp := string(utf16.Decode(units[start:i]))
			if comp == "" || comp == "." || comp == ".." {
				return false
			}
			start = i + 1
			continue
		}
		c := units[i]
		forbidden := c == 0 || (c >= 0x01 && c <= 0x1f) || (c >= 0x7f && c <= 0x9f) ||
			(c >= 0xd800 && c <= 0xf8ff) || c >= 0xfff0
		if forbidden {
			return false
		}
	}
	return true
}

// FuzzValidatePath checks ValidatePath against refValidatePath.
func FuzzValidatePath(f *testing.F) {
	for _, p := range []string{"/", "/a", "/a/", "//", "/a/.", "/a/..", "/a/.b", "/zookeeper",
		"/\x00", "/\u0085", "/\ue000", "/\ufffd", "/\xff", "/\U0001F600", ""} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		err := ValidatePath(path)
		if want := refValidatePath(path); (err == nil) != want {
			t.Fatalf("ValidatePath(%q) = %v, reference says valid=%v", path, err, want)
		}
		if err != nil && CodeOf(err) != CodeBadArguments {
			t.Fatalf("ValidatePath(%q) = %v, want BadArguments", path, err)
		}
	})
}
