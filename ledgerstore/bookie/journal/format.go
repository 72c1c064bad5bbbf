package journal

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// The file format's constants (see the package doc). Integers are
// big-endian, as BookKeeper's Java ByteBuffers write them.
const (
	// Magic opens every journal file.
	Magic = "BKLG"
	// FormatV5 added the 512-byte header and sector-aligned padding. keeper
	// reads it (it is V6 without explicit-LAC records) but never writes it.
	FormatV5 = 5
	// FormatV6 is BookKeeper's current format: V5 plus explicit-LAC records.
	FormatV6 = 6
	// FormatV7 is keeper's extension: V6 with a CRC-32C of each record's
	// body after its length. BookKeeper refuses to read it (its newest
	// known version is 6), rather than misreading it.
	FormatV7 = 7
	// DefaultFormat is what a Journal writes unless Config says otherwise.
	DefaultFormat = FormatV7

	// HeaderBytes is the size of the file header: one 512-byte sector
	// holding Magic, the format version (int32) and zeros.
	HeaderBytes = 512

	// PaddingMarker takes the place of a record length in a padding
	// record: int32 PaddingMarker, int32 padLen, padLen zero bytes.
	PaddingMarker int32 = -0x100
	// paddingMarkerBits is PaddingMarker as the uint32 on disk.
	paddingMarkerBits uint32 = 0xFFFFFF00
	// paddingHeaderBytes is the marker and the pad length.
	paddingHeaderBytes = 8

	// IDsBytes is the start of every record body: ledgerId and entryId.
	IDsBytes = 16

	// DirName is the directory under a journal directory that holds the
	// journal files, as in BookKeeper.
	DirName = "current"
	// FileSuffix ends every journal file name; the rest is the log id in
	// lowercase hex without leading zeros.
	FileSuffix = ".txn"
)

// Entry ids of the special records (BookieImpl.METAENTRY_ID_*). A record
// whose entry id is negative is not an entry.
const (
	// EntryIDMasterKey marks a master-key record: int32 keyLen, key. It is
	// journaled on a ledger's first add, so that the key survives a restart.
	EntryIDMasterKey int64 = -0x1000
	// EntryIDFence marks a fence record (no body). A fence is acknowledged
	// only once this record is durable.
	EntryIDFence int64 = -0x2000
	// EntryIDForceLedger is BookKeeper's force-ledger marker. It only
	// travels through the journal queue and is never written; a Journal
	// refuses it.
	EntryIDForceLedger int64 = -0x4000
	// EntryIDExplicitLAC marks an explicit-LAC record: int32 len, the LAC
	// body (ledgerId, lac, digest) as the client sent it.
	EntryIDExplicitLAC int64 = -0x8000
)

// castagnoli is the CRC-32C table; FormatV7 checksums record bodies with it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header returns the file header of the given format version.
func header(version int32) []byte {
	h := make([]byte, HeaderBytes)
	copy(h, Magic)
	binary.BigEndian.PutUint32(h[4:8], uint32(version))
	return h
}

// recordHeaderBytes is what a record adds before its body: the length, and
// in FormatV7 the checksum.
func recordHeaderBytes(version int32) int {
	if version >= FormatV7 {
		return 8
	}
	return 4
}

// appendRecordHeader appends what goes before body in one record of the
// given format version: its length, and in FormatV7 its checksum.
func appendRecordHeader(b []byte, version int32, body []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	if version >= FormatV7 {
		b = binary.BigEndian.AppendUint32(b, crc32.Checksum(body, castagnoli))
	}
	return b
}

// appendRecordHeaderOf is appendRecordHeader for rec, using the checksum
// rec carries if it has one.
func appendRecordHeaderOf(b []byte, version int32, rec Record) []byte {
	if version >= FormatV7 && rec.summed {
		b = binary.BigEndian.AppendUint32(b, uint32(len(rec.body)))
		return binary.BigEndian.AppendUint32(b, rec.sum)
	}
	return appendRecordHeader(b, version, rec.body)
}

// paddingBytes returns the size of the padding record that takes a file
// from pos to an alignment boundary: to the next one if at least a padding
// header fits before it, else to the one after. keeper pads even when pos
// is already aligned (a whole alignment unit), so that the data of every
// flush ends with a padding record; see the package doc.
func paddingBytes(pos int64, alignBytes int) int64 {
	align := int64(alignBytes)
	n := align - pos%align // 1..align
	if n < paddingHeaderBytes {
		n += align
	}
	return n
}

// appendPaddingHeader appends the header of a padding record of n bytes
// (n ≥ 8): the marker and the pad length. The pad's zeros follow it.
func appendPaddingHeader(b []byte, n int64) []byte {
	b = binary.BigEndian.AppendUint32(b, paddingMarkerBits)
	return binary.BigEndian.AppendUint32(b, uint32(n-paddingHeaderBytes))
}

// paddingZeros is the largest pad a padding record holds (paddingBytes
// returns less than two alignment units). It is only read.
var paddingZeros [maxPaddingBytes]byte

// FileName returns the name of the journal file with the given log id: the
// id in lowercase hex without leading zeros, then ".txn" (Java's
// Long.toHexString). logID must not be negative.
func FileName(logID int64) string {
	return strconv.FormatInt(logID, 16) + FileSuffix
}

// ParseFileName returns the log id of the journal file called name: 1 to 16
// hex digits (a non-negative int64), then ".txn". Other names are not
// journal files.
func ParseFileName(name string) (int64, bool) {
	hex, ok := strings.CutSuffix(name, FileSuffix)
	if !ok || len(hex) == 0 || len(hex) > 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(hex, 16, 64)
	if err != nil || int64(v) < 0 {
		return 0, false
	}
	return int64(v), true
}

// Position is a place in the journal: a file's log id and a byte offset in
// it. BookKeeper calls it the log mark. Positions order by log id, then
// offset; the zero Position is before every record.
type Position struct {
	LogID  int64
	Offset int64
}

// Compare returns -1, 0 or +1 as p is before, at or after q.
func (p Position) Compare(q Position) int {
	return cmp.Or(cmp.Compare(p.LogID, q.LogID), cmp.Compare(p.Offset, q.Offset))
}

// String formats p as <hex log id>.txn:<offset>.
func (p Position) String() string { return fmt.Sprintf("%s:%d", FileName(p.LogID), p.Offset) }
