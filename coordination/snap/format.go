package snap

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"keeper/coordination/zxid"
)

// File header values (docs/zookeeper-protocol.md §9.4).
const (
	// Magic is "ZKSN", the first four bytes of every snapshot.
	Magic int32 = 0x5A4B534E
	// Version is the only snapshot format version there is.
	Version int32 = 2
	// dbID is what Java writes in the header's dbid field; readers ignore it.
	dbID int64 = -1
)

// Sizes of the fixed parts, in bytes.
const (
	headerBytes  = 16 // magic, version, dbid
	sessionBytes = 12 // id, timeout
	sealBytes    = 13 // adler32 as a long, then the ustring "/"
	digestBytes  = 20 // zxid, digestVersion, treeDigest
	lpzBytes     = 8  // lastProcessedZxid
)

// sealMarker is the ustring "/" that ends the node list and every seal. A
// complete plain snapshot therefore always ends with these five bytes, which
// is the quick validity check Java applies before reading a file.
var sealMarker = [5]byte{0, 0, 0, 1, '/'}

// Prefix starts the name of every snapshot file.
const Prefix = "snapshot."

// tempPrefix starts the name of a snapshot being written. It is not
// "snapshot.", so neither we nor Java mistake a half-written file (or a
// complete one that was never renamed) for a snapshot.
const (
	tempPrefix = ".snapshot."
	tempSuffix = ".tmp"
)

var (
	// ErrCorrupt means a snapshot is not a complete, well-formed snapshot:
	// a bad magic or version, a seal whose checksum does not match, a
	// truncated file, a body that does not describe a tree, or bytes after
	// the last seal. Recovery skips such a file and uses an older one.
	ErrCorrupt = errors.New("snap: corrupt snapshot")

	// ErrDigestMismatch means the file is intact (every seal matches) but
	// the tree it holds does not have the digest its digest record names:
	// the tree was damaged before it was written, or digests are computed
	// differently from the writer. Read still returns the snapshot with this
	// error, so the caller decides whether to use it.
	ErrDigestMismatch = errors.New("snap: tree digest mismatch")

	// ErrUnsupported means the file uses a feature keeper does not
	// implement: snappy compression, or an unknown format version.
	ErrUnsupported = errors.New("snap: unsupported snapshot")
)

// SessionEntry is one session in a snapshot's session list.
type SessionEntry struct {
	// ID is the session id.
	ID int64
	// TimeoutMs is the timeout the session was created with: ZooKeeper
	// persists the createSession txn's timeout and never updates it when a
	// reconnect negotiates another (session.Session.CreateTimeoutMs).
	TimeoutMs int32
}

// Digest is a snapshot's digest record (docs/zookeeper-protocol.md §9.5): the tree digest after
// the txn Zxid was applied.
type Digest struct {
	// Zxid is the zxid whose tree the digest describes. For keeper's own
	// snapshots it is the snapshot's zxid. Java's snapshots are fuzzy: it
	// captures the digest after serialising the tree, so Zxid can be newer
	// than the snapshot's name, and it writes an empty record (Zxid 0)
	// before its first digested txn.
	Zxid zxid.ID
	// Version is the digest formula's version; datatree.DigestVersion (2)
	// is the only one there is.
	Version int32
	// TreeDigest is the tree digest.
	TreeDigest int64
}

// Compression is how a snapshot file's bytes are stored. Checksums and
// seals always cover the uncompressed bytes.
type Compression uint8

const (
	// CompressionNone is a plain file, snapshot.<zxid>: what Java writes by
	// default and what keeper writes.
	CompressionNone Compression = iota
	// CompressionGzip is snapshot.<zxid>.gz
	// (zookeeper.snapshot.compression.method=gz).
	CompressionGzip
	// CompressionSnappy is snapshot.<zxid>.snappy. Keeper does not read or
	// write it (it would need a dependency); such files give ErrUnsupported.
	CompressionSnappy
)

// suffix returns the file name suffix of c.
func (c Compression) suffix() string {
	switch c {
	case CompressionGzip:
		return ".gz"
	case CompressionSnappy:
		return ".snappy"
	}
	return ""
}

// String returns "none", "gz" or "snappy", the names Java's
// zookeeper.snapshot.compression.method uses ("none" is Java's default,
// "CHECKED").
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gz"
	case CompressionSnappy:
		return "snappy"
	}
	return "Compression(" + strconv.Itoa(int(c)) + ")"
}

// Name returns the file name of the snapshot of zxid z: "snapshot." and z
// in lowercase hex without leading zeros (docs/zookeeper-protocol.md §9.1), plus ".gz" or
// ".snappy" when compressed.
func Name(z zxid.ID, c Compression) string {
	return Prefix + strconv.FormatUint(uint64(z), 16) + c.suffix()
}

// ParseName parses a snapshot file name (not a path). Like Java, it accepts
// hex digits in either case and leading zeros, up to a value that fits a
// non-negative int64. Names with another suffix than ".gz" or ".snappy",
// including the temporary files Write uses, are not snapshots.
func ParseName(name string) (z zxid.ID, c Compression, ok bool) {
	rest, found := strings.CutPrefix(name, Prefix)
	if !found {
		return 0, 0, false
	}
	hex, suffix, _ := strings.Cut(rest, ".")
	switch suffix {
	case "":
		c = CompressionNone
	case "gz":
		c = CompressionGzip
	case "snappy":
		c = CompressionSnappy
	default:
		return 0, 0, false
	}
	if hex == "" || hex[0] == '+' || hex[0] == '-' {
		return 0, 0, false
	}
	v, err := strconv.ParseInt(hex, 16, 64)
	if err != nil {
		return 0, 0, false
	}
	return zxid.ID(v), c, true
}

// tempName returns the name Write uses while writing the file name.
func tempName(name string) string { return tempPrefix + strings.TrimPrefix(name, Prefix) + tempSuffix }

// isTempName reports whether name is one of Write's temporary files.
func isTempName(name string) bool {
	return strings.HasPrefix(name, tempPrefix) && strings.HasSuffix(name, tempSuffix)
}

// corruptf returns an error wrapping ErrCorrupt.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}
