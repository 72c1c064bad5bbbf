package metadata

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
)

// The upstream* inputs are the metadata apache/bookkeeper's
// TestLedgerMetadataSerDe checks that its serializer reproduces byte for
// byte: one per format version, as BookKeeper 4.0-4.1, 4.2-4.3, 4.4-4.8 and
// 4.9+ wrote them.
const (
	upstreamV1 = "BookieMetadataFormatVersion\t1\n2\n3\n0\n" +
		"0\t192.0.2.1:1234\t192.0.2.2:1234\t192.0.2.3:1234\n-102\tCLOSED"
	upstreamV2 = "BookieMetadataFormatVersion\t2\nquorumSize: 2\nensembleSize: 3\nlength: 0\n" +
		"lastEntryId: -1\nstate: IN_RECOVERY\nsegment {\n" +
		"  ensembleMember: \"192.0.2.1:1234\"\n  ensembleMember: \"192.0.2.2:1234\"\n" +
		"  ensembleMember: \"192.0.2.3:1234\"\n  firstEntryId: 0\n}\n" +
		"digestType: CRC32\npassword: \"passwd\"\nackQuorumSize: 2\n"
	upstreamV2Ctime = upstreamV2 + "ctime: 1544002383075\n"
)

// upstreamV3 is the format 3 sample, an open 3/2/1 ledger.
const upstreamV3 = `
	426f6f6b69654d65746164617461466f726d617456657273696f6e 09 33 0a  # header
	60                              # message length 96
	08 02  10 03  18 00             # Qw 2, E 3, length 0
	20 ffffffffffffffffff01         # lastEntryId -1
	28 01                           # OPEN
	32 32                           # segment, 50 bytes
	  0a 0e 3139322e302e322e313a33313831  # 192.0.2.1:3181
	  0a 0e 3139322e302e322e323a33313831  # 192.0.2.2:3181
	  0a 0e 3139322e302e322e333a33313831  # 192.0.2.3:3181
	  10 00                         # firstEntryId 0
	38 03                           # CRC32C
	42 06 666f6f626172              # password "foobar"
	48 01                           # Qa 1
	50 ffffffffffffffffff01         # ctime -1 (stored)
	60 00                           # cToken 0
`

func upstreamEnsemble(port string) []ledger.BookieID {
	return []ledger.BookieID{ledger.BookieID("192.0.2.1:" + port), ledger.BookieID("192.0.2.2:" + port), ledger.BookieID("192.0.2.3:" + port)}
}

func TestDecodeUpstream(t *testing.T) {
	inRecovery := ledger.Metadata{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2, State: ledger.StateInRecovery,
		LastEntryID: ledger.NoEntry, Segments: []ledger.Segment{{FirstEntryID: 0, Bookies: upstreamEnsemble("1234")}}}
	v2 := inRecovery
	v2.DigestType, v2.Password = bkproto.DigestCRC32, []byte("passwd")
	v2ctime := v2
	v2ctime.CTimeMillis, v2ctime.StoreCreationTime = 1544002383075, true
	v3 := ledger.Metadata{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 1, State: ledger.StateOpen,
		LastEntryID: ledger.NoEntry, Segments: []ledger.Segment{{FirstEntryID: 0, Bookies: upstreamEnsemble("3181")}},
		DigestType: bkproto.DigestCRC32C, Password: []byte("foobar"), CTimeMillis: -1, StoreCreationTime: true}
	for _, tc := range []struct {
		name    string
		data    []byte
		version int
		want    ledger.Metadata
	}{
		{"v1", []byte(upstreamV1), 1, inRecovery},
		{"v2", []byte(upstreamV2), 2, v2},
		{"v2 ctime", []byte(upstreamV2Ctime), 2, v2ctime},
		{"v3", unhex(t, upstreamV3), 3, v3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if got.FormatVersion != tc.version || !got.Equal(tc.want) {
				t.Fatalf("Decode = %+v (version %d)\nwant   %+v (version %d)", got, got.FormatVersion, tc.want, tc.version)
			}
		})
	}
}

// TestDecodeV2Escapes checks the escapes Java's TextFormat writes in
// bytes and strings: three-digit octal for bytes outside printable ASCII,
// and backslashes before quotes.
func TestDecodeV2Escapes(t *testing.T) {
	data := headerKey + "2\nquorumSize: 1\nensembleSize: 1\nlength: 0\nlastEntryId: -1\nstate: OPEN\n" +
		"segment {\n  ensembleMember: \"a:1\"\n  firstEntryId: 0\n}\n" +
		`digestType: HMAC` + "\n" + `password: "\001\377\'\"\\\n"` + "\nackQuorumSize: 1\n" +
		"customMetadata {\n  key: \"k\"\n  value: \"\\000\"\n}\n"
	md, err := Decode([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte("\x01\xff'\"\\\n"); !bytes.Equal(md.Password, want) || md.DigestType != bkproto.DigestHMAC {
		t.Fatalf("password %q (%v), want %q", md.Password, md.DigestType, want)
	}
	if v := md.Custom["k"]; !bytes.Equal(v, []byte{0}) {
		t.Fatalf("custom metadata %q", md.Custom)
	}
}

// TestEncodeUpstreamV3 checks that re-encoding BookKeeper's own format 3
// sample reproduces it exactly, as BookKeeper's serializer does.
func TestEncodeUpstreamV3(t *testing.T) {
	want := unhex(t, upstreamV3)
	md, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode =\n%x\nwant\n%x", got, want)
	}
}

// TestEncodeExactBytes checks a closed ledger using every field against
// bytes written out by hand from the format (docs/bookkeeper-protocol.md §5.1 and the protobuf
// wire format).
func TestEncodeExactBytes(t *testing.T) {
	md := ledger.Metadata{
		EnsembleSize: 2, WriteQuorum: 2, AckQuorum: 1,
		State: ledger.StateClosed, LastEntryID: 99, Length: 1000,
		Segments:   []ledger.Segment{{FirstEntryID: 0, Bookies: []ledger.BookieID{"a:1", "b:1"}}, {FirstEntryID: 50, Bookies: []ledger.BookieID{"a:1", "c:1"}}},
		DigestType: bkproto.DigestHMAC, Password: []byte("pw"),
		CTimeMillis: 1700000000000, StoreCreationTime: true,
		Custom: map[string][]byte{"b": nil, "app": []byte("x")},
		CToken: 5,
	}
	want := unhex(t, `
		426f6f6b69654d65746164617461466f726d617456657273696f6e 09 33 0a
		49                                  # 73 bytes follow
		08 02  10 02  18 e807  20 63  28 03 # Qw 2, E 2, length 1000, lastEntryId 99, CLOSED
		32 0c 0a03 613a31 0a03 623a31 10 00 # segment {a:1 b:1} from 0
		32 0c 0a03 613a31 0a03 633a31 10 32 # segment {a:1 c:1} from 50
		38 02  42 02 7077                   # HMAC, password "pw"
		48 01                               # Qa 1
		50 80d095ffbc31                     # ctime 1700000000000
		5a 08 0a03 617070 12 01 78          # custom "app" = "x" (keys in order)
		5a 05 0a01 62 12 00                 # custom "b" = ""
		60 05                               # cToken 5
	`)
	got, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode =\n%x\nwant\n%x", got, want)
	}
	back, err := Decode(got)
	if err != nil || !back.Equal(md) {
		t.Fatalf("Decode(Encode) = %+v, %v; want %+v", back, err, md)
	}
}

func TestEncodeNoDigest(t *testing.T) {
	// Format 1 metadata has no digest type or password; format 3 then
	// leaves both fields out, and reads back the same.
	md, err := Decode([]byte(upstreamV1))
	if err != nil {
		t.Fatal(err)
	}
	data, err := Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	var f bkproto.LedgerMetadataFormat
	if err := proto.Unmarshal(data[len(headerKey)+3:], &f); err != nil || f.DigestType != nil || f.Password != nil {
		t.Fatalf("Encode wrote a digest type or password (%v): %x", err, data)
	}
	back, err := Decode(data)
	if err != nil || !back.Equal(md) || back.FormatVersion != FormatVersion3 {
		t.Fatalf("Decode(Encode(v1)) = %+v, %v; want %+v", back, err, md)
	}
}

func TestRoundTrip(t *testing.T) {
	open := sampleMetadata()
	empty := sampleMetadata()
	empty.Password = nil
	closed := sampleMetadata()
	closed.State, closed.LastEntryID, closed.Length = ledger.StateClosed, ledger.NoEntry, 0
	recovering := sampleMetadata()
	recovering.State = ledger.StateInRecovery
	recovering.Segments = append(recovering.Segments, ledger.Segment{FirstEntryID: 7, Bookies: []ledger.BookieID{"x:1", "y:1", "z:1"}})
	for _, md := range []ledger.Metadata{open, empty, closed, recovering} {
		data, err := Encode(md)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(data)
		if err != nil || !got.Equal(md) {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", md, got, err)
		}
	}
}

// v3 frames a LedgerMetadataFormat message body in format 3.
func v3(body []byte) []byte {
	out := append([]byte(headerKey+"3\n"), protowire.AppendVarint(nil, uint64(len(body)))...)
	return append(out, body...)
}

func TestDecodeRejects(t *testing.T) {
	good := unhex(t, upstreamV3)
	body := good[31:] // after the header and the one-byte length
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "header"},
		{"no header", []byte("quorumSize: 2\n"), "header"},
		{"junk version", []byte(headerKey + "foobar\nblah"), "version"},
		{"very long version", []byte(headerKey + "123456789123456789\nblah"), "newline"},
		{"no newline", []byte(headerKey + "3"), "newline"},
		{"version 4", []byte(headerKey + "4\n"), "format version 4"},
		{"length too short", append(append([]byte(headerKey+"3\n"), 0x5f), body...), "length"},
		{"length too long", append(append([]byte(headerKey+"3\n"), 0x61), body...), "length"},
		{"trailing bytes", append(append([]byte{}, good...), 0), "length"},
		{"truncated", good[:len(good)-3], "length"},
		{"missing required", v3([]byte{0x08, 0x02}), "required"},
		{"unknown state", v3(append(append([]byte{}, body...), 0x28, 0x09)), "unknown state"},
		{"unknown digest", v3(append(append([]byte{}, body...), 0x38, 0x09)), "unknown digest type"},
		{"wrong wire type", v3(append(append([]byte{}, body...), 0x4a, 0x00)), "field 9"},
		{"Qa above Qw", v3(append(append([]byte{}, body...), 0x48, 0x03)), "quorums"},
		{"Qa zero", v3(append(append([]byte{}, body...), 0x48, 0x00)), "quorums"},
		{"no ensembles", []byte(headerKey + "2\nquorumSize: 1\nensembleSize: 1\nlength: 0\nstate: OPEN\n"), "no ensembles"},
		{"ensemble size", []byte(headerKey + "1\n1\n2\n0\n0\ta:1\n"), "bookies"},
		{"keys decrease", []byte(headerKey + "1\n1\n1\n0\n5\ta:1\n3\tb:1\n"), "increasing"},
		{"negative key", []byte(headerKey + "1\n1\n1\n0\n-5\ta:1\n"), "increasing"},
		{"bad bookie", []byte(headerKey + "1\n1\n1\n0\n0\ta/b:1\n"), "bookie id"},
		{"readonly bookie", []byte(headerKey + "1\n1\n1\n0\n0\tREADONLY\n"), "bookie id"},
		{"duplicate bookie", []byte(headerKey + "1\n1\n2\n0\n0\ta:1\ta:1\n"), "twice"},
		{"v1 no tab", []byte(headerKey + "1\n1\n1\n0\n0\n"), "no tab"},
		{"v1 short", []byte(headerKey + "1\n1\n1\n"), "three lines"},
		{"v1 bad number", []byte(headerKey + "1\nx\n1\n0\n0\ta:1\n"), "line 1"},
		{"v2 unknown field", []byte(headerKey + "2\nbogus: 1\n"), "bogus"},
		{"v2 bad syntax", []byte(headerKey + "2\nquorumSize: {\n"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.data)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode(%q) = %v, want ErrMalformed mentioning %q", tc.data, err, tc.want)
			}
		})
	}
}

func TestEncodeRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(md *ledger.Metadata)
	}{
		{"Qw above E", func(md *ledger.Metadata) { md.WriteQuorum = 4 }},
		{"open with last entry", func(md *ledger.Metadata) { md.LastEntryID = 5 }},
		{"unknown state", func(md *ledger.Metadata) { md.State = 7 }},
		{"unknown digest", func(md *ledger.Metadata) { md.DigestType = 9 }},
		{"password without digest", func(md *ledger.Metadata) { md.DigestType = 0 }},
		{"closed negative length", func(md *ledger.Metadata) { md.State, md.Length = ledger.StateClosed, -1 }},
		{"too large", func(md *ledger.Metadata) {
			md.Custom = map[string][]byte{"k": make([]byte, MaxEncodedBytes)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := sampleMetadata()
			tc.mutate(&md)
			if _, err := Encode(md); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Encode = %v, want ErrMalformed", err)
			}
		})
	}
}
