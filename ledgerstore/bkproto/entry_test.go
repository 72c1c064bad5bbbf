package bkproto

import (
	"bytes"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"testing"
)

// The fixed entry behind the digest vectors: ledger 42, entry 7, LAC 6,
// length 113, payload "hello, bookie", password "secret". The expected
// digests were computed independently (Python's zlib, hashlib and hmac, and
// a bitwise CRC-32C), not with this package.
const (
	vecLedger, vecEntry, vecLAC, vecLength = 42, 7, 6, 113
	vecPayload                             = "hello, bookie"
	vecPassword                            = "secret"
	vecHeaderHex                           = "000000000000002a" + "0000000000000007" + "0000000000000006" + "0000000000000071"
)

func vecMacKey() []byte { k := MacKey([]byte(vecPassword)); return k[:] }

func TestMasterAndMacKey(t *testing.T) {
	for _, tc := range []struct {
		name, password, want string
		key                  func([]byte) [MasterKeyBytes]byte
	}{
		{"master, empty password", "", "850bf1071c5e3d8c24235676f8816ae0cbe2f14f", MasterKey}, // SHA-1("ledger")
		{"master", vecPassword, "e793cbc379107648537183605cd361d3bb789a39", MasterKey},        // SHA-1("ledgersecret")
		{"mac", vecPassword, "190c685bae851574f5ab47c960a00c0466f96603", MacKey},              // SHA-1("macsecret")
	} {
		got := tc.key([]byte(tc.password))
		if hex.EncodeToString(got[:]) != tc.want {
			t.Errorf("%s: %x, want %s", tc.name, got, tc.want)
		}
	}
	if MasterKey(nil) != MasterKey([]byte{}) {
		t.Error("nil and empty passwords differ")
	}
}

// TestDigestVectors pins each digest type's stored form of the fixed entry
// and of the LAC body (ledger 42, LAC 6).
func TestDigestVectors(t *testing.T) {
	for _, tc := range []struct {
		typ        DigestType
		entry, lac string // digest bytes, hex
	}{
		// CRC32 goes in 8 bytes with the upper 32 bits zero, even though
		// this CRC has its top bit set (no sign extension).
		{DigestCRC32, "00000000d6f2eb1d", "000000001207e65d"},
		{DigestCRC32C, "aea801b1", "db24724a"},
		{DigestHMAC, "1a3151402dc4c5faa23035b5467afbd9a33ac8f1", "90d7f6a16ba9e8447a56f0b71a9889e83e88d52c"},
		{DigestDummy, "", ""},
	} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			body := EncodeEntry(vecLedger, vecEntry, vecLAC, vecLength, tc.typ, vecMacKey(), []byte(vecPayload))
			want := unhex(t, vecHeaderHex+tc.entry+hex.EncodeToString([]byte(vecPayload)))
			if !bytes.Equal(body, want) {
				t.Fatalf("entry:\n got % x\nwant % x", body, want)
			}
			lac := EncodeLAC(vecLedger, vecLAC, tc.typ, vecMacKey())
			if want := unhex(t, "000000000000002a"+"0000000000000006"+tc.lac); !bytes.Equal(lac, want) {
				t.Fatalf("LAC body:\n got % x\nwant % x", lac, want)
			}
		})
	}
}

// TestCRC32CMatchesUpstream checks the Castagnoli table against the vector
// in apache/bookkeeper's circe-checksum ChecksumTest.
func TestCRC32CMatchesUpstream(t *testing.T) {
	if got := crc32.Checksum([]byte("Some String"), castagnoli); got != 608512271 {
		t.Fatalf("CRC-32C = %d, want 608512271", got)
	}
}

func TestEntryRoundTrip(t *testing.T) {
	payloads := [][]byte{nil, {}, []byte("x"), bytes.Repeat([]byte("abc"), 10000)}
	for _, typ := range []DigestType{DigestCRC32, DigestHMAC, DigestCRC32C, DigestDummy} {
		for _, p := range payloads {
			body := EncodeEntry(1<<40, 3, 2, 77, typ, vecMacKey(), p)
			n, _ := DigestBytes(typ)
			if len(body) != EntryHeaderBytes+n+len(p) {
				t.Fatalf("%v: body of %d bytes for payload of %d", typ, len(body), len(p))
			}
			for _, wantEntry := range []int64{3, LastAddConfirmed} {
				e, err := DecodeEntry(body, typ, vecMacKey(), 1<<40, wantEntry)
				if err != nil {
					t.Fatalf("%v: %v", typ, err)
				}
				want := EntryHeader{LedgerID: 1 << 40, EntryID: 3, LAC: 2, Length: 77}
				if e.EntryHeader != want || !bytes.Equal(e.Payload, p) {
					t.Fatalf("%v: decoded %+v", typ, e)
				}
			}
			h, err := ParseEntryHeader(body)
			if err != nil || h.LAC != 2 || h.EntryID != 3 {
				t.Fatalf("%v: ParseEntryHeader = %+v, %v", typ, h, err)
			}
		}
	}
}

func TestEntryRejected(t *testing.T) {
	flip := func(i int) func([]byte, int) []byte {
		return func(b []byte, n int) []byte {
			b = bytes.Clone(b)
			b[(i+len(b))%len(b)] ^= 0x01 // negative i counts from the end
			return b
		}
	}
	keep := func(b []byte, _ int) []byte { return b }
	for _, tc := range []struct {
		name   string
		damage func(body []byte, digestBytes int) []byte
		ledger int64
		entry  int64
		dummy  bool // whether DUMMY (no digest) must still reject it
	}{
		{name: "payload byte flipped", damage: func(b []byte, n int) []byte { return flip(EntryHeaderBytes+n+1)(b, n) }},
		{name: "last payload byte flipped", damage: flip(-1)},
		{name: "LAC flipped", damage: flip(16)},
		{name: "length flipped", damage: flip(31)},
		{name: "digest flipped", damage: func(b []byte, n int) []byte { return flip(EntryHeaderBytes+n-1)(b, n) }},
		{name: "payload truncated", damage: func(b []byte, _ int) []byte { return b[:len(b)-1] }},
		{name: "byte appended", damage: func(b []byte, _ int) []byte { return append(bytes.Clone(b), 0) }},
		{name: "shorter than header", damage: func(b []byte, _ int) []byte { return b[:EntryHeaderBytes-1] }, dummy: true},
		{name: "empty", damage: func([]byte, int) []byte { return nil }, dummy: true},
		{name: "wrong ledger", damage: keep, ledger: vecLedger + 1, entry: vecEntry, dummy: true},
		{name: "wrong entry", damage: keep, ledger: vecLedger, entry: vecEntry + 1, dummy: true},
		{name: "wrong entry id in header", damage: flip(15), dummy: true},
		{name: "wrong ledger id in header", damage: flip(7), entry: LastAddConfirmed, dummy: true},
	} {
		for _, typ := range []DigestType{DigestCRC32, DigestHMAC, DigestCRC32C, DigestDummy} {
			if typ == DigestDummy && !tc.dummy {
				continue // DUMMY has no digest to notice corruption
			}
			n, _ := DigestBytes(typ)
			body := tc.damage(EncodeEntry(vecLedger, vecEntry, vecLAC, vecLength, typ, vecMacKey(), []byte(vecPayload)), n)
			ledger, entry := int64(vecLedger), int64(vecEntry)
			if tc.ledger != 0 {
				ledger = tc.ledger
			}
			if tc.entry != 0 {
				entry = tc.entry
			}
			if _, err := DecodeEntry(body, typ, vecMacKey(), ledger, entry); !errors.Is(err, ErrDigestMismatch) {
				t.Errorf("%s/%v: err = %v, want digest mismatch", tc.name, typ, err)
			}
		}
	}
	good := func(typ DigestType) []byte {
		return EncodeEntry(vecLedger, vecEntry, vecLAC, vecLength, typ, vecMacKey(), []byte(vecPayload))
	}
	otherKey := MacKey([]byte("other"))
	if _, err := DecodeEntry(good(DigestHMAC), DigestHMAC, otherKey[:], vecLedger, vecEntry); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("HMAC with another password: err = %v", err)
	}
	if _, err := DecodeEntry(good(DigestCRC32), DigestCRC32C, nil, vecLedger, vecEntry); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("CRC32 entry read as CRC32C: err = %v", err)
	}
	if _, err := DecodeEntry(good(DigestCRC32), DigestType(9), nil, vecLedger, vecEntry); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("unknown digest type: err = %v", err)
	}
	if _, err := ParseEntryHeader(make([]byte, EntryHeaderBytes-1)); !errors.Is(err, ErrShortEntry) {
		t.Errorf("ParseEntryHeader of 31 bytes: err = %v", err)
	}
}

func TestLACRoundTripAndRejects(t *testing.T) {
	for _, typ := range []DigestType{DigestCRC32, DigestHMAC, DigestCRC32C, DigestDummy} {
		for _, lac := range []int64{LastAddConfirmed, 0, 1 << 50} {
			body := EncodeLAC(9, lac, typ, vecMacKey())
			got, err := DecodeLAC(body, typ, vecMacKey(), 9)
			if err != nil || got != lac {
				t.Fatalf("%v: DecodeLAC = %d, %v; want %d", typ, got, err, lac)
			}
			if _, err := DecodeLAC(body, typ, vecMacKey(), 10); !errors.Is(err, ErrDigestMismatch) {
				t.Errorf("%v: wrong ledger: err = %v", typ, err)
			}
			if _, err := DecodeLAC(body[:LACHeaderBytes-1], typ, vecMacKey(), 9); !errors.Is(err, ErrDigestMismatch) {
				t.Errorf("%v: short body: err = %v", typ, err)
			}
			if typ == DigestDummy {
				continue
			}
			bad := bytes.Clone(body)
			bad[12] ^= 0x80
			if _, err := DecodeLAC(bad, typ, vecMacKey(), 9); !errors.Is(err, ErrDigestMismatch) {
				t.Errorf("%v: flipped LAC: err = %v", typ, err)
			}
		}
	}
}

func TestEncodeEntryUnknownDigestPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for an unknown digest type")
		}
	}()
	EncodeEntry(1, 0, -1, 0, DigestType(0), nil, nil)
}

func TestDigestBytes(t *testing.T) {
	for typ, want := range map[DigestType]int{DigestCRC32: 8, DigestHMAC: 20, DigestCRC32C: 4, DigestDummy: 0} {
		if n, ok := DigestBytes(typ); !ok || n != want {
			t.Errorf("DigestBytes(%v) = %d, %v; want %d", typ, n, ok, want)
		}
	}
	for _, typ := range []DigestType{0, 5, -1} {
		if _, ok := DigestBytes(typ); ok {
			t.Errorf("DigestBytes(%d) ok", typ)
		}
	}
}
