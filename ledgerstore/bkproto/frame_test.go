package bkproto

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// unhex decodes hex with spaces, for byte tables written one field a line.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// testKey is a recognisable 20-byte master key: 0x01..0x14.
var testKey = []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}

const testKeyHex = "0102030405060708090a0b0c0d0e0f1011121314"

// dummyBody is entry 0 of ledger 5 with LAC -1, length 2, DUMMY digest and
// payload "hi": 34 bytes.
const dummyBodyHex = "0000000000000005" + "0000000000000000" + "ffffffffffffffff" + "0000000000000002" + "6869"

type frameCase struct {
	name string
	msg  proto.Message
	hex  string // the whole frame, length prefix included
	// tags lists the top-level (field, wire type) pairs, in order, that the
	// frame's message must hold; checked by walking it with protowire.
	tags []protowire.Number
}

func frameCases(t testing.TB) []frameCase {
	return []frameCase{{
		name: "add with RECOVERY_ADD",
		msg: &Request{
			Header: NewHeader(OperationType_ADD_ENTRY, 7),
			AddRequest: &AddRequest{
				Flag:      AddRequest_RECOVERY_ADD.Enum(),
				LedgerId:  proto.Int64(5),
				EntryId:   proto.Int64(0),
				MasterKey: testKey,
				Body:      unhex(t, dummyBodyHex),
			},
		},
		hex: "0000004c" + // frame length 76
			"0a 06" + // field 1 (header), wire type 2: (1<<3)|2 = 0x0a; 6 bytes
			"08 03" + "10 02" + "18 07" + // version=3, operation=ADD_ENTRY(2), txnId=7
			"aa06 41" + // field 101 (addRequest): (101<<3)|2 = 810 = varint aa 06; 65 bytes
			"08 05" + // ledgerId=5
			"10 00" + // entryId=0 (proto2: set, so sent even though zero)
			"1a 14" + testKeyHex + // masterKey, 20 bytes
			"22 22" + dummyBodyHex + // body, 34 bytes
			"a006 01", // field 100 (flag), varint: (100<<3)|0 = 800 = a0 06; RECOVERY_ADD=1
		tags: []protowire.Number{1, 101},
	}, {
		name: "fencing LAC read",
		msg: &Request{
			Header: NewHeader(OperationType_READ_ENTRY, 8),
			ReadRequest: &ReadRequest{
				Flag:      ReadRequest_FENCE_LEDGER.Enum(),
				LedgerId:  proto.Int64(5),
				EntryId:   proto.Int64(LastAddConfirmed),
				MasterKey: testKey,
			},
		},
		hex: "00000031" + // frame length 49
			"0a 06 08 03 10 01 18 08" + // header: version=3, operation=READ_ENTRY(1), txnId=8
			"a206 26" + // field 100 (readRequest): (100<<3)|2 = 802 = a2 06; 38 bytes
			"08 05" + // ledgerId=5
			"10 ffffffffffffffffff01" + // entryId=-1: int64 as a 10-byte varint
			"1a 14" + testKeyHex + // masterKey
			"a006 01", // flag=FENCE_LEDGER(1)
		tags: []protowire.Number{1, 100},
	}, {
		name: "long-poll read",
		msg: &Request{
			Header: NewHeader(OperationType_READ_ENTRY, 300),
			ReadRequest: &ReadRequest{
				Flag:        ReadRequest_ENTRY_PIGGYBACK.Enum(),
				LedgerId:    proto.Int64(5),
				EntryId:     proto.Int64(4),
				PreviousLAC: proto.Int64(3),
				TimeOut:     proto.Int64(1000),
			},
		},
		hex: "00000018" + // frame length 24
			"0a 07 08 03 10 01 18 ac02" + // header; txnId=300 = varint ac 02
			"a206 0c" + // readRequest, 12 bytes
			"08 05" + "10 04" + // ledgerId=5, entryId=4
			"20 03" + // field 4 previousLAC=3
			"28 e807" + // field 5 timeOut=1000 = varint e8 07
			"a006 02", // flag=ENTRY_PIGGYBACK(2)
		tags: []protowire.Number{1, 100},
	}, {
		name: "add response",
		msg: &Response{
			Header: NewHeader(OperationType_ADD_ENTRY, 7),
			Status: StatusCode_EOK.Enum(),
			AddResponse: &AddResponse{
				Status:   StatusCode_EOK.Enum(),
				LedgerId: proto.Int64(5),
				EntryId:  proto.Int64(0),
			},
		},
		hex: "00000013" + // frame length 19
			"0a 06 08 03 10 02 18 07" + // header
			"10 00" + // field 2 status=EOK, sent because set
			"aa06 06" + // field 101 (addResponse), 6 bytes
			"08 00" + "10 05" + "18 00", // status=EOK, ledgerId=5, entryId=0
		tags: []protowire.Number{1, 2, 101},
	}, {
		name: "fenced add response",
		msg: &Response{
			Header: NewHeader(OperationType_ADD_ENTRY, 9),
			Status: StatusCode_EOK.Enum(),
			AddResponse: &AddResponse{
				Status:   StatusCode_EFENCED.Enum(),
				LedgerId: proto.Int64(5),
				EntryId:  proto.Int64(1),
			},
		},
		hex: "00000014" + // frame length 20
			"0a 06 08 03 10 02 18 09" + // header
			"10 00" + // status=EOK overall
			"aa06 07" + // addResponse, 7 bytes
			"08 f803" + "10 05" + "18 01", // status=EFENCED(504 = varint f8 03), ledgerId=5, entryId=1
		tags: []protowire.Number{1, 2, 101},
	}}
}

// TestFrameBytes pins the exact encoding of a few frames, written out from
// the protobuf wire format by hand, in both directions.
func TestFrameBytes(t *testing.T) {
	for _, tc := range frameCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			got, err := AppendFrame(nil, tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendFrame:\n got % x\nwant % x", got, want)
			}
			checkTags(t, want[FrameLengthBytes:], tc.tags)
			frame, err := ReadFrame(bytes.NewReader(want), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			var back proto.Message
			switch tc.msg.(type) {
			case *Request:
				back, err = DecodeRequest(frame)
			case *Response:
				back, err = DecodeResponse(frame)
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !proto.Equal(back, tc.msg) {
				t.Fatalf("decoded %v, want %v", back, tc.msg)
			}
		})
	}
}

// checkTags walks b's top-level fields with protowire and compares their
// numbers with want; every sub-message slot must be length-delimited.
func checkTags(t *testing.T, b []byte, want []protowire.Number) {
	t.Helper()
	var got []protowire.Number
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		if (num == 1 || num >= 100) && typ != protowire.BytesType {
			t.Fatalf("field %d has wire type %d, want bytes", num, typ)
		}
		got = append(got, num)
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			t.Fatalf("bad field %d: %v", num, protowire.ParseError(m))
		}
		b = b[n+m:]
	}
	if !equalNumbers(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
}

func equalNumbers(a, b []protowire.Number) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAppendFrameAppends(t *testing.T) {
	m := &Request{Header: NewHeader(OperationType_READ_LAC, 1), ReadLacRequest: &ReadLacRequest{LedgerId: proto.Int64(3)}}
	one, err := AppendFrame([]byte("xy"), m)
	if err != nil {
		t.Fatal(err)
	}
	two, err := AppendFrame(one, m)
	if err != nil {
		t.Fatal(err)
	}
	if string(two[:2]) != "xy" || !bytes.Equal(two[2:len(one)], one[2:]) || !bytes.Equal(two[len(one):], one[2:]) {
		t.Fatalf("frames not appended: % x", two)
	}
}

func TestAppendFrameRequiredFields(t *testing.T) {
	for name, m := range map[string]proto.Message{
		"no header":        &Request{},
		"header w/o txnId": &Request{Header: &BKPacketHeader{Version: ProtocolVersionV3.Enum(), Operation: OperationType_READ_LAC.Enum()}},
		"add w/o body": &Request{Header: NewHeader(OperationType_ADD_ENTRY, 1), AddRequest: &AddRequest{
			LedgerId: proto.Int64(1), EntryId: proto.Int64(0), MasterKey: testKey}},
		"response w/o status": &Response{Header: NewHeader(OperationType_READ_LAC, 1)},
	} {
		dst, err := AppendFrame([]byte("keep"), m)
		if err == nil {
			t.Errorf("%s: AppendFrame succeeded", name)
		}
		if string(dst) != "keep" {
			t.Errorf("%s: dst changed to %q on error", name, dst)
		}
	}
}

func TestReadFrameErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		limit int
		want  error
	}{
		{"empty", "", 0, io.EOF},
		{"short prefix", "\x00\x00", 0, io.ErrUnexpectedEOF},
		{"short frame", "\x00\x00\x00\x05abc", 0, io.ErrUnexpectedEOF},
		{"negative", "\xff\xff\xff\xff", 0, ErrFrameTooLarge},
		{"over limit", "\x00\x00\x00\x0bhello world", 10, ErrFrameTooLarge},
		{"over default", "\x00\x50\x00\x01", 0, ErrFrameTooLarge},
		{"max int32", "\x7f\xff\xff\xff", 0, ErrFrameTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFrame(strings.NewReader(tc.in), nil, tc.limit)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.want == io.EOF && err != io.EOF {
				t.Fatalf("clean EOF must be returned unwrapped, got %v", err)
			}
		})
	}
}

func TestReadFrameSizes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int
		limit  int
		bufCap int
	}{
		{"empty frame", 0, 0, 0},
		{"at limit", 10, 10, 0},
		{"at default limit", DefaultMaxFrameBytes, 0, 0},
		{"fits buf", 100, 0, 128},
		{"bigger than buf", 1000, 0, 128},
		{"several chunks", 3*readChunkBytes + 17, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := bytes.Repeat([]byte{0xab}, tc.size)
			in := append([]byte{byte(tc.size >> 24), byte(tc.size >> 16), byte(tc.size >> 8), byte(tc.size)}, payload...)
			in = append(in, "next"...)
			buf := make([]byte, 0, tc.bufCap)
			r := bytes.NewReader(in)
			got, err := ReadFrame(iotest.HalfReader(r), buf, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, payload) {
				t.Fatalf("got %d bytes, want %d", len(got), tc.size)
			}
			if tc.size <= tc.bufCap && tc.size > 0 && &got[0] != &buf[:1][0] {
				t.Fatal("frame that fits buf was not read into it")
			}
			if rest, _ := io.ReadAll(r); string(rest) != "next" {
				t.Fatalf("ReadFrame consumed past its frame; left %q", rest)
			}
		})
	}
}

// TestReadFrameGrowsWithInput checks that a length prefix alone does not
// make ReadFrame allocate the whole frame: a peer that announces 5 MiB and
// sends 10 bytes costs about one chunk.
func TestReadFrameGrowsWithInput(t *testing.T) {
	in := append([]byte{0x00, 0x50, 0x00, 0x00}, make([]byte, 10)...) // 5 MiB announced
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bytes.NewReader(in), nil, 0)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want unexpected EOF", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4*readChunkBytes {
		t.Fatalf("allocated %d bytes for a 10-byte truncated frame", n)
	}
}
