// Package snap reads and writes snapshot files in Apache ZooKeeper's format
// (docs/zookeeper-protocol.md §9.1, §9.4), so that keeper and ZooKeeper 3.8 can each start from
// the other's data directory.
//
// # Files
//
// A snapshot is named snapshot.<zxid> in lowercase hex without leading
// zeros (snapshot.0, snapshot.1a, snapshot.100000003), with ".gz" added
// when gzip-compressed. The zxid is the last one applied to the tree when
// the snapshot started; recovery loads the newest valid snapshot and
// replays the log from zxid+1. Write creates the file atomically: it
// writes ".snapshot.<zxid>.tmp" in the same directory, syncs it, renames
// it and syncs the directory. Neither keeper nor ZooKeeper takes a
// ".snapshot." file for a snapshot; RemoveTemp deletes ones a crash left.
//
// # Format
//
// All integers are big-endian jute values (docs/zookeeper-protocol.md §0). Every byte of the
// uncompressed stream passes through an Adler-32 checksum; each seal stores
// the checksum of all bytes before it, zero-extended to a long.
//
//	+------------------------------------------------------------------+
//	| FileHeader (16 bytes)                                            |
//	|   magic int32 = 0x5A4B534E ("ZKSN")                              |
//	|   version int32 = 2                                              |
//	|   dbid int64 = -1        (ignored by readers)                    |
//	+------------------------------------------------------------------+
//	| sessionCount int32                                               |
//	| repeat sessionCount:                                             |
//	|   sessionId int64                                                |
//	|   timeoutMs int32        the timeout the session was created with|
//	+------------------------------------------------------------------+
//	| tree body: ACL cache, nodes in pre-order, ustring "/"            |
//	|   (datatree.WriteBody / ReadBody; diagram in datatree's doc)     |
//	+------------------------------------------------------------------+
//	| seal 1: adler32 int64, ustring "/" (00000001 2f)      mandatory  |
//	+------------------------------------------------------------------+
//	| digest record (3.6+, when digests are enabled)        optional   |
//	|   zxid int64             the zxid the digest belongs to          |
//	|   digestVersion int32 = 2                                        |
//	|   treeDigest int64       docs/zookeeper-protocol.md §9.5                               |
//	| seal 2: adler32 int64, ustring "/"                               |
//	+------------------------------------------------------------------+
//	| lastProcessedZxid int64 (3.9+)                        optional   |
//	| seal 3: adler32 int64, ustring "/"                               |
//	+------------------------------------------------------------------+
//
// The trailer after seal 1 is therefore 0, 33, 54 or 21 bytes (the last
// when 3.9 runs with digests disabled); Read rejects any other length.
// Because every complete file ends with a seal, a plain file that does not
// end with 00 00 00 01 2f is incomplete: that is QuickCheck, Java's test
// before it reads a file. A gzip file (snapshot.<zxid>.gz) compresses this
// whole stream, and its seals cover the uncompressed bytes.
//
// What Write produces by default is what ZooKeeper 3.8 writes: up to seal
// 2, or seal 1 without a digest. ZooKeeper 3.8 reads a file up to seal 2
// and ignores what follows, so the 3.9 trailer is safe for it only after a
// digest record; Options.LastProcessedZxid adds it, and only then.
//
// # Fuzzy snapshots and the digest
//
// ZooKeeper serialises its tree while txns keep applying, so a snapshot
// may contain effects of txns newer than its name, and it records the
// digest it sees after serialising, with that zxid. Read checks the digest
// against the loaded tree only when the record's zxid equals the snapshot's
// (no txn applied during the walk); for a newer zxid the caller checks after
// replaying the log to it, and a mismatch there is explained when a later
// txn's digest in the log matches the replayed tree (the snapshot held
// effects of a txn after its record; coordination/server's digestCheck).
// keeper's snapshots are fuzzy the same way: the server walks its tree
// while it applies txns (coordination/server's snapshotJob).
//
// # Errors
//
// ErrCorrupt marks files that are not complete snapshots, ErrUnsupported
// formats keeper does not handle (snappy), and ErrDigestMismatch an intact
// file whose tree does not match its digest record. Filesystem errors are
// returned wrapped, with neither mark.
package snap
