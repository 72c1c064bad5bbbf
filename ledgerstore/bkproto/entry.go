package bkproto

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"keeper/internal/invariants"
)

// EntryHeaderBytes is the size of an entry's fixed header: ledgerId,
// entryId, LAC and length, each an int64.
const EntryHeaderBytes = 32

// LACHeaderBytes is the size of the fixed part of a LAC body: ledgerId and
// lac.
const LACHeaderBytes = 16

// DigestType selects an entry's digest. It is the ledger metadata's enum,
// so a ledger's digestType field can be passed as it is.
type DigestType = LedgerMetadataFormat_DigestType

// The digest types (docs/bookkeeper-protocol.md §6.4). The numbers are those stored in ledger
// metadata.
const (
	DigestCRC32  DigestType = LedgerMetadataFormat_CRC32  // 8 bytes
	DigestHMAC   DigestType = LedgerMetadataFormat_HMAC   // 20 bytes
	DigestCRC32C DigestType = LedgerMetadataFormat_CRC32C // 4 bytes
	DigestDummy  DigestType = LedgerMetadataFormat_DUMMY  // 0 bytes
)

// ErrDigestMismatch means an entry or LAC body failed verification: it is
// too short for its digest type, its digest does not match (corruption, or
// the wrong digest type or password), or it names another ledger or entry.
// Java clients raise BKDigestMatchException for all of these; a reader
// treats the replica as bad and tries another.
var ErrDigestMismatch = errors.New("bkproto: digest mismatch")

// ErrShortEntry means a body is shorter than the entry header.
var ErrShortEntry = errors.New("bkproto: entry shorter than its header")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MasterKey returns the master key for a ledger password:
// SHA-1("ledger" || password). An empty password gives SHA-1("ledger").
func MasterKey(password []byte) [MasterKeyBytes]byte {
	return saltedSHA1("ledger", password)
}

// MacKey returns the HMAC key for a ledger password: SHA-1("mac" ||
// password). Only the HMAC digest type uses it.
func MacKey(password []byte) [MasterKeyBytes]byte {
	return saltedSHA1("mac", password)
}

func saltedSHA1(salt string, password []byte) [MasterKeyBytes]byte {
	h := sha1.New()
	h.Write([]byte(salt))
	h.Write(password)
	var out [MasterKeyBytes]byte
	h.Sum(out[:0])
	return out
}

// DigestBytes returns the digest size of t, and false for a type the
// protocol does not define.
func DigestBytes(t DigestType) (int, bool) {
	switch t {
	case DigestCRC32:
		return 8, true
	case DigestHMAC:
		return sha1.Size, true
	case DigestCRC32C:
		return 4, true
	case DigestDummy:
		return 0, true
	}
	return 0, false
}

// EntryHeader is the fixed header of an entry's stored form.
type EntryHeader struct {
	LedgerID int64
	EntryID  int64
	LAC      int64 // the writer's LAC when it sent the entry; -1 for none
	Length   int64 // the ledger's payload bytes up to and including this entry
}

// Entry is a verified entry.
type Entry struct {
	EntryHeader
	Payload []byte // aliases the body it was decoded from
}

// ParseEntryHeader reads the header of an entry's stored form without
// checking its digest, as a bookie does: bookies know no digest types.
func ParseEntryHeader(body []byte) (EntryHeader, error) {
	if len(body) < EntryHeaderBytes {
		return EntryHeader{}, fmt.Errorf("%w: %d bytes", ErrShortEntry, len(body))
	}
	return EntryHeader{
		LedgerID: int64(binary.BigEndian.Uint64(body[0:8])),
		EntryID:  int64(binary.BigEndian.Uint64(body[8:16])),
		LAC:      int64(binary.BigEndian.Uint64(body[16:24])),
		Length:   int64(binary.BigEndian.Uint64(body[24:32])),
	}, nil
}

// EncodeEntry returns an entry's stored form: the header, the digest of
// header and payload, then the payload. macKey is MacKey(password) for
// DigestHMAC and ignored otherwise. digestType must be one the protocol
// defines (check ledger metadata with DigestBytes when it is read); any
// other is a programmer error and panics.
func EncodeEntry(ledgerID, entryID, lac, length int64, digestType DigestType, macKey, payload []byte) []byte {
	n, ok := DigestBytes(digestType)
	invariants.Assertf(ok, "bkproto: EncodeEntry with digest type %d", int32(digestType))
	body := make([]byte, EntryHeaderBytes, EntryHeaderBytes+n+len(payload))
	binary.BigEndian.PutUint64(body[0:8], uint64(ledgerID))
	binary.BigEndian.PutUint64(body[8:16], uint64(entryID))
	binary.BigEndian.PutUint64(body[16:24], uint64(lac))
	binary.BigEndian.PutUint64(body[24:32], uint64(length))
	body = appendDigest(body, digestType, macKey, body[:EntryHeaderBytes], payload)
	return append(body, payload...)
}

// DecodeEntry verifies an entry's stored form and returns it. It checks, in
// this order, the length, the digest over header and payload, that the
// header names wantLedger, and that it names wantEntry unless wantEntry is
// LastAddConfirmed (a LAC read, which returns whatever entry is last). Every
// failure wraps ErrDigestMismatch. The payload aliases body.
func DecodeEntry(body []byte, digestType DigestType, macKey []byte, wantLedger, wantEntry int64) (Entry, error) {
	n, ok := DigestBytes(digestType)
	if !ok {
		return Entry{}, fmt.Errorf("%w: unknown digest type %d", ErrDigestMismatch, int32(digestType))
	}
	if len(body) < EntryHeaderBytes+n {
		return Entry{}, fmt.Errorf("%w: entry of %d bytes, %v needs at least %d",
			ErrDigestMismatch, len(body), digestType, EntryHeaderBytes+n)
	}
	header, digest, payload := body[:EntryHeaderBytes], body[EntryHeaderBytes:EntryHeaderBytes+n], body[EntryHeaderBytes+n:]
	if !digestMatches(digest, digestType, macKey, header, payload) {
		return Entry{}, fmt.Errorf("%w: entry of ledger %d", ErrDigestMismatch, wantLedger)
	}
	h, _ := ParseEntryHeader(body) // cannot fail: length checked above
	if h.LedgerID != wantLedger {
		return Entry{}, fmt.Errorf("%w: entry of ledger %d, want ledger %d", ErrDigestMismatch, h.LedgerID, wantLedger)
	}
	if wantEntry != LastAddConfirmed && h.EntryID != wantEntry {
		return Entry{}, fmt.Errorf("%w: entry %d of ledger %d, want entry %d", ErrDigestMismatch, h.EntryID, h.LedgerID, wantEntry)
	}
	return Entry{EntryHeader: h, Payload: payload}, nil
}

// EncodeLAC returns an explicit LAC body: ledgerId, lac and the digest of
// those 16 bytes. The digest type rules are EncodeEntry's.
func EncodeLAC(ledgerID, lac int64, digestType DigestType, macKey []byte) []byte {
	n, ok := DigestBytes(digestType)
	invariants.Assertf(ok, "bkproto: EncodeLAC with digest type %d", int32(digestType))
	body := make([]byte, LACHeaderBytes, LACHeaderBytes+n)
	binary.BigEndian.PutUint64(body[0:8], uint64(ledgerID))
	binary.BigEndian.PutUint64(body[8:16], uint64(lac))
	return appendDigest(body, digestType, macKey, body[:LACHeaderBytes], nil)
}

// DecodeLAC verifies an explicit LAC body and returns its LAC. It checks the
// length, the digest and that the body names wantLedger; every failure
// wraps ErrDigestMismatch. Bytes after the digest are ignored, as in the
// Java client.
func DecodeLAC(body []byte, digestType DigestType, macKey []byte, wantLedger int64) (int64, error) {
	n, ok := DigestBytes(digestType)
	if !ok {
		return 0, fmt.Errorf("%w: unknown digest type %d", ErrDigestMismatch, int32(digestType))
	}
	if len(body) < LACHeaderBytes+n {
		return 0, fmt.Errorf("%w: LAC body of %d bytes, %v needs at least %d",
			ErrDigestMismatch, len(body), digestType, LACHeaderBytes+n)
	}
	header, digest := body[:LACHeaderBytes], body[LACHeaderBytes:LACHeaderBytes+n]
	if !digestMatches(digest, digestType, macKey, header, nil) {
		return 0, fmt.Errorf("%w: LAC body of ledger %d", ErrDigestMismatch, wantLedger)
	}
	if got := int64(binary.BigEndian.Uint64(body[0:8])); got != wantLedger {
		return 0, fmt.Errorf("%w: LAC body of ledger %d, want ledger %d", ErrDigestMismatch, got, wantLedger)
	}
	return int64(binary.BigEndian.Uint64(body[8:16])), nil
}

// appendDigest appends the digest of header followed by payload to dst.
// digestType has been checked by the caller.
func appendDigest(dst []byte, digestType DigestType, macKey, header, payload []byte) []byte {
	switch digestType {
	case DigestCRC32:
		crc := crc32.Update(crc32.ChecksumIEEE(header), crc32.IEEETable, payload)
		return binary.BigEndian.AppendUint64(dst, uint64(crc))
	case DigestCRC32C:
		crc := crc32.Update(crc32.Checksum(header, castagnoli), castagnoli, payload)
		return binary.BigEndian.AppendUint32(dst, crc)
	case DigestHMAC:
		mac := hmac.New(sha1.New, macKey)
		mac.Write(header)
		mac.Write(payload)
		return mac.Sum(dst)
	}
	return dst // DigestDummy
}

// digestMatches reports whether digest is the digest of header followed by
// payload. The comparison is constant-time, which matters for HMAC only.
func digestMatches(digest []byte, digestType DigestType, macKey, header, payload []byte) bool {
	var buf [sha1.Size]byte
	want := appendDigest(buf[:0], digestType, macKey, header, payload)
	return subtle.ConstantTimeCompare(want, digest) == 1
}
