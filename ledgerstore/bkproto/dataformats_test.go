package bkproto

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
)

// TestDataFormatBytes pins the encodings of a closed ledger's metadata and a
// cookie. The expected bytes were produced by `protoc --encode` with
// apache/bookkeeper's own DataFormats.proto, so they check our field numbers
// and types against upstream's.
func TestDataFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  proto.Message
		hex  string
	}{{
		name: "closed ledger metadata",
		msg: &LedgerMetadataFormat{
			QuorumSize:   proto.Int32(2),
			EnsembleSize: proto.Int32(3),
			Length:       proto.Int64(100),
			LastEntryId:  proto.Int64(9),
			State:        LedgerMetadataFormat_CLOSED.Enum(),
			Segment: []*LedgerMetadataFormat_Segment{{
				EnsembleMember: []string{"a:3181", "b:3181", "c:3181"},
				FirstEntryId:   proto.Int64(0),
			}},
			DigestType:     DigestCRC32C.Enum(),
			Password:       []byte("pw"),
			AckQuorumSize:  proto.Int32(2),
			Ctime:          proto.Int64(1700000000000),
			CustomMetadata: []*LedgerMetadataFormatCMetadataMapEntry{{Key: proto.String("app"), Value: []byte("x")}},
			CToken:         proto.Int64(12345),
		},
		hex: "0802" + "1003" + "1864" + "2009" + "2803" + // quorumSize 2, ensembleSize 3, length 100, lastEntryId 9, state CLOSED
			"321a" + "0a06613a33313831" + "0a06623a33313831" + "0a06633a33313831" + "1000" + // segment
			"3803" + "42027077" + "4802" + // digestType CRC32C, password "pw", ackQuorumSize 2
			"5080d095ffbc31" + // ctime
			"5a08" + "0a03617070" + "120178" + // customMetadata app=x
			"60b960", // cToken 12345
	}, {
		name: "cookie",
		msg: &CookieFormat{
			BookieHost: proto.String("h:3181"),
			JournalDir: proto.String("1\t/j"),
			LedgerDirs: proto.String("1\t/l"),
			InstanceId: proto.String("uuid"),
			IndexDirs:  proto.String("1\t/i"),
		},
		hex: "0a06683a33313831" + "120431092f6a" + "1a0431092f6c" + "220475756964" + "2a0431092f69",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			got, err := proto.Marshal(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("marshal:\n got % x\nwant % x", got, want)
			}
			back := tc.msg.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(want, back); err != nil || !proto.Equal(back, tc.msg) {
				t.Fatalf("unmarshal: %v, %v", back, err)
			}
		})
	}
}

func TestLedgerMetadataDefaults(t *testing.T) {
	// state is required with default OPEN; Go reports the default when unset.
	var m LedgerMetadataFormat
	if m.GetState() != LedgerMetadataFormat_OPEN {
		t.Fatalf("default state %v", m.GetState())
	}
	if _, err := proto.Marshal(&m); err == nil {
		t.Fatal("metadata without its required fields marshalled")
	}
}
