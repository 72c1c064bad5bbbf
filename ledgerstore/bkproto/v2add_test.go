package bkproto

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// checkSameV2Decode fails unless DecodeV2RequestAliased gives what
// DecodeV2Request gives for frame, and reports whether it aliased.
func checkSameV2Decode(t *testing.T, frame []byte) bool {
	t.Helper()
	want, wantV2, wantErr := DecodeV2Request(frame)
	got, gotV2, aliased, err := DecodeV2RequestAliased(frame)
	if (want == nil) != (got == nil) || (wantErr == nil) != (err == nil) || StatusOf(wantErr) != StatusOf(err) {
		t.Fatalf("DecodeV2RequestAliased gave %v, %v; DecodeV2Request %v, %v", got, err, want, wantErr)
	}
	if want != nil && !proto.Equal(want, got) {
		t.Fatalf("DecodeV2RequestAliased gave %v; DecodeV2Request %v", got, want)
	}
	if gotV2 != wantV2 {
		t.Fatalf("DecodeV2RequestAliased gave %+v; DecodeV2Request %+v", gotV2, wantV2)
	}
	if aliased && got.GetHeader().GetOperation() != OperationType_ADD_ENTRY {
		t.Fatalf("aliased a %v", got.GetHeader().GetOperation())
	}
	return aliased
}

func TestDecodeV2RequestAliased(t *testing.T) {
	ent := v2Entry(7, 3, "hello")
	cases := []struct {
		name    string
		frame   []byte
		aliased bool
	}{
		{"add", cat(be32(0x02010000), v2Key, ent), true},
		{"recovery add, high priority", cat(be32(0x02010006), v2Key, ent), true},
		{"version 0 add", cat(be32(0x00000001), v2Key, ent), true},
		{"version 3 add (EBADVERSION)", cat(be32(0x03010000), v2Key, ent), true},
		{"add of an entry shorter than its header (EBADREQ)", cat(be32(0x02010000), v2Key, ent[:20]), true},
		{"add without ids", cat(be32(0x02010000), v2Key, ent[:8]), false},
		{"read", cat(be32(0x02020005), be64(7), be64(-1), v2Key), false},
		{"auth", cat(be32(0x02030000), []byte{0x0a, 0x01, 'x', 0x12, 0x00}), false},
		{"empty", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkSameV2Decode(t, c.frame); got != c.aliased {
				t.Fatalf("aliased %v, want %v", got, c.aliased)
			}
		})
	}
	// The byte fields alias the frame: no copy was made.
	frame := cat(be32(0x02010000), v2Key, ent)
	req, _, _, err := DecodeV2RequestAliased(frame)
	if err != nil {
		t.Fatal(err)
	}
	if &req.AddRequest.Body[0] != &frame[4+MasterKeyBytes] || &req.AddRequest.MasterKey[0] != &frame[4] {
		t.Fatal("the add's fields do not alias the frame")
	}
}

func FuzzDecodeV2RequestAliased(f *testing.F) {
	ent := v2Entry(7, 3, "hello")
	f.Add(cat(be32(0x02010000), v2Key, ent))
	f.Add(cat(be32(0x02010006), v2Key, ent))
	f.Add(cat(be32(0x03010000), v2Key, ent))
	f.Add(cat(be32(0x02020005), be64(7), be64(-1), v2Key))
	f.Add(cat(be32(0x00000002), be64(7), be64(4)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		checkSameV2Decode(t, frame)
	})
}

func BenchmarkDecodeV2AddRequest(b *testing.B) {
	frame := cat(be32(0x02010000), v2Key, EncodeEntry(5, 3, 2, 1024, DigestCRC32C, nil, make([]byte, 1024)))
	b.Run("copying", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := DecodeV2Request(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("aliased", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, _, err := DecodeV2RequestAliased(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("into a kept buffer", func(b *testing.B) {
		b.ReportAllocs()
		var buf AddBuffer
		for b.Loop() {
			if _, _, _, err := DecodeV2RequestAliasedInto(&buf, frame); err != nil {
				b.Fatal(err)
			}
		}
	})
}
