package entrystore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Entry log format constants (see the package doc for the diagrams).
const (
	// LogHeaderBytes is the size of an entry log's file header.
	LogHeaderBytes = 1024
	// LogVersion is the header version keeper writes and reads. Version 1
	// is BookKeeper's, whose records carry no checksum; keeper refuses it.
	LogVersion = 2
	// recordHeaderBytes is a record's size and checksum fields.
	recordHeaderBytes = 8
	// MinEntryBytes is the shortest stored entry: ledgerId, entryId and LAC
	// (the length and digest follow in real entries, but the store does
	// not read them).
	MinEntryBytes = 24
	// MaxEntryBytes bounds one stored entry. It is above BookKeeper's
	// 5 MiB maximum frame, so any entry a bookie can receive fits, and it
	// stops a damaged size field from making a reader allocate gigabytes.
	MaxEntryBytes = 8 << 20
	// DefaultEntryLogMaxBytes is BookKeeper's logSizeLimit, also the
	// largest EntryLogMaxBytes allowed.
	DefaultEntryLogMaxBytes = 1 << 30

	// mapLedgerID and mapEntryID mark a ledgers-map chunk record.
	mapLedgerID = -1
	mapEntryID  = -2
	// mapChunkPairs bounds the (ledger, bytes) pairs of one chunk, as
	// BookKeeper does, so a chunk is at most 160 KB.
	mapChunkPairs = 10_000
	// mapChunkHeaderBytes is a chunk's ledgerId, entryId and count.
	mapChunkHeaderBytes = 20
	// maxLogID keeps (logID << 32) | offset a non-negative int64.
	maxLogID = math.MaxInt32
)

// logMagic starts every entry log.
var logMagic = [4]byte{'B', 'K', 'L', 'O'}

// castagnoli is the CRC-32C table for record checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// freshHeader is the header of a log that has not been sealed yet.
var freshHeader = encodeHeader(Header{Version: LogVersion})

// Header is an entry log's file header.
type Header struct {
	Version int32
	// LedgersMapOffset is where the first ledgers-map chunk record starts
	// (its size field); 0 means the log has not been sealed.
	LedgersMapOffset int64
	// LedgersCount is the number of (ledger, bytes) pairs in the map.
	LedgersCount int32
}

// Sealed reports whether the log's ledgers map was written.
func (h Header) Sealed() bool { return h.LedgersMapOffset != 0 }

// encodeHeader returns the 1024-byte file header.
func encodeHeader(h Header) []byte {
	b := make([]byte, LogHeaderBytes)
	copy(b[0:4], logMagic[:])
	binary.BigEndian.PutUint32(b[4:8], uint32(h.Version))
	binary.BigEndian.PutUint64(b[8:16], uint64(h.LedgersMapOffset))
	binary.BigEndian.PutUint32(b[16:20], uint32(h.LedgersCount))
	return b
}

// decodeHeader parses and checks a file header of a log of size bytes.
func decodeHeader(b []byte, size int64) (Header, string) {
	if len(b) < LogHeaderBytes {
		return Header{}, "short header"
	}
	if [4]byte(b[0:4]) != logMagic {
		return Header{}, fmt.Sprintf("bad magic %q", b[0:4])
	}
	h := Header{
		Version:          int32(binary.BigEndian.Uint32(b[4:8])),
		LedgersMapOffset: int64(binary.BigEndian.Uint64(b[8:16])),
		LedgersCount:     int32(binary.BigEndian.Uint32(b[16:20])),
	}
	switch {
	case h.Version != LogVersion:
		return h, fmt.Sprintf("unsupported version %d", h.Version)
	case h.LedgersMapOffset != 0 && (h.LedgersMapOffset < LogHeaderBytes || h.LedgersMapOffset > size):
		return h, fmt.Sprintf("ledgers map offset %d outside the file (size %d)", h.LedgersMapOffset, size)
	case h.LedgersCount < 0 || (h.LedgersMapOffset == 0 && h.LedgersCount != 0):
		return h, fmt.Sprintf("bad ledgers count %d (map offset %d)", h.LedgersCount, h.LedgersMapOffset)
	}
	for _, c := range b[20:LogHeaderBytes] {
		if c != 0 {
			return h, "non-zero reserved header bytes"
		}
	}
	return h, ""
}

// appendRecord appends a record framing entry to b.
func appendRecord(b, entry []byte) []byte { return appendRecordSummed(b, entry, entrySum(entry)) }

// entrySum returns the checksum of entry's record: its CRC-32C, which is
// also the checksum of the entry's FormatV7 journal record.
func entrySum(entry []byte) uint32 { return crc32.Checksum(entry, castagnoli) }

// appendRecordSummed is appendRecord for an entry whose entrySum is sum.
func appendRecordSummed(b, entry []byte, sum uint32) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(entry)))
	b = binary.BigEndian.AppendUint32(b, sum)
	return append(b, entry...)
}

// entryIDs returns the ledger id, entry id and LAC of a stored entry.
func entryIDs(entry []byte) (ledgerID, entryID, lac int64) {
	return int64(binary.BigEndian.Uint64(entry[0:8])),
		int64(binary.BigEndian.Uint64(entry[8:16])),
		int64(binary.BigEndian.Uint64(entry[16:24]))
}

// LedgerBytes is one pair of a ledgers map: how many bytes of the log
// (records, including their 8-byte headers) belong to a ledger.
type LedgerBytes struct {
	LedgerID int64
	Bytes    int64
}

// appendMapChunks appends the ledgers map records for pairs (sorted by
// ledger) to b, at most mapChunkPairs per record.
func appendMapChunks(b []byte, pairs []LedgerBytes) []byte {
	for len(pairs) > 0 {
		n := min(len(pairs), mapChunkPairs)
		body := make([]byte, 0, mapChunkHeaderBytes+16*n)
		body = binary.BigEndian.AppendUint64(body, mapIDBits(mapLedgerID))
		body = binary.BigEndian.AppendUint64(body, mapIDBits(mapEntryID))
		body = binary.BigEndian.AppendUint32(body, uint32(n))
		for _, p := range pairs[:n] {
			body = binary.BigEndian.AppendUint64(body, uint64(p.LedgerID))
			body = binary.BigEndian.AppendUint64(body, uint64(p.Bytes))
		}
		b = appendRecord(b, body)
		pairs = pairs[n:]
	}
	return b
}

// mapIDBits returns the two's complement bits of a negative marker id.
func mapIDBits(id int64) uint64 { return uint64(id) }

// decodeMapChunk parses a ledgers map chunk body (ids already checked).
func decodeMapChunk(body []byte) ([]LedgerBytes, string) {
	if len(body) < mapChunkHeaderBytes {
		return nil, "short ledgers map chunk"
	}
	count := int64(int32(binary.BigEndian.Uint32(body[16:20])))
	if count <= 0 || count > mapChunkPairs || int64(len(body)) != mapChunkHeaderBytes+16*count {
		return nil, fmt.Sprintf("ledgers map chunk of %d bytes claims %d pairs", len(body), count)
	}
	pairs := make([]LedgerBytes, count)
	for i := range pairs {
		p := body[mapChunkHeaderBytes+16*i:]
		pairs[i] = LedgerBytes{
			LedgerID: int64(binary.BigEndian.Uint64(p[0:8])),
			Bytes:    int64(binary.BigEndian.Uint64(p[8:16])),
		}
		if pairs[i].LedgerID < 0 || pairs[i].Bytes <= 0 {
			return nil, fmt.Sprintf("ledgers map pair %d: ledger %d with %d bytes", i, pairs[i].LedgerID, pairs[i].Bytes)
		}
	}
	return pairs, ""
}

// location packs an entry's place: the log id and the offset of the entry
// bytes (just after the record header) in that log.
func location(logID, offset int64) uint64 { return uint64(logID)<<32 | uint64(offset) }

// splitLocation undoes location.
func splitLocation(loc uint64) (logID, offset int64) {
	return int64(loc >> 32), int64(loc & math.MaxUint32)
}

// logFileName is the name of log id inside a directory's current/.
func logFileName(id int64) string { return fmt.Sprintf("%x.log", id) }
