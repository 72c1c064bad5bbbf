package txnlog

import (
	"encoding/binary"
	"strconv"
	"strings"

	"keeper/coordination/zxid"
)

// The file format's constants (docs/zookeeper-protocol.md §9.2).
const (
	// Magic opens every log file: "ZKLG".
	Magic = 0x5A4B4C47
	// Version is the only log format version ZooKeeper has written.
	Version = 2
	// FileHeaderBytes is the size of the file header: magic, version, dbid.
	FileHeaderBytes = 16
	// RecordOverheadBytes is what a record adds to its payload: the
	// checksum (8), the length (4) and the end-of-record marker (1).
	RecordOverheadBytes = 13
	// recordHeaderBytes is the checksum and the length.
	recordHeaderBytes = 12
	// EndOfRecord ends every record.
	EndOfRecord = 'B'

	// DirName is the directory under dataLogDir that holds the log files.
	DirName = "version-2"
	// FilePrefix starts every log file name; the rest is the first zxid in
	// lowercase hex.
	FilePrefix = "log."

	// preAllocMarginBytes: a file grows when a record is about to start
	// this close to its end, as ZooKeeper's FilePadding does.
	preAllocMarginBytes = 4096
)

// fileHeader is the header keeper writes. ZooKeeper's dbid is always 0.
var fileHeader = [FileHeaderBytes]byte{'Z', 'K', 'L', 'G', 0, 0, 0, Version}

// FileName returns the name of the log file whose first txn is z:
// "log." and z in lowercase hex without leading zeros.
func FileName(z zxid.ID) string {
	return FilePrefix + strconv.FormatUint(uint64(z), 16)
}

// ParseFileName returns the first zxid of the log file called name. It
// accepts what ZooKeeper accepts: "log." followed by up to 16 hex digits.
func ParseFileName(name string) (zxid.ID, bool) {
	hex, ok := strings.CutPrefix(name, FilePrefix)
	if !ok || len(hex) == 0 || len(hex) > 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(hex, 16, 64)
	if err != nil || int64(v) < 0 {
		return 0, false
	}
	return zxid.ID(v), true
}

// payloadZxid returns the zxid in a payload's TxnHeader (after clientId and
// cxid). The payload must hold at least a header.
func payloadZxid(payload []byte) zxid.ID {
	return zxid.ID(binary.BigEndian.Uint64(payload[12:20]))
}

// paddedSize returns the size a file must be grown to before a record is
// written at pos, given its current preallocated size: ZooKeeper's
// FilePadding rule. Within preAllocMarginBytes of the end the file grows by
// preAllocBytes; if the writes already overran the end, it grows to the
// multiple of preAllocBytes that follows pos. preAllocBytes <= 0 disables
// preallocation.
func paddedSize(pos, size, preAllocBytes int64) int64 {
	if preAllocBytes <= 0 || pos+preAllocMarginBytes < size {
		return size
	}
	if pos > size {
		n := pos + preAllocBytes
		return n - n%preAllocBytes
	}
	return size + preAllocBytes
}
