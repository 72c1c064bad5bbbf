// Package txnlog is the transaction log, in Apache ZooKeeper's own format
// (docs/zookeeper-protocol.md §9.1–§9.2), so that keeper and ZooKeeper can read
// each other's data directories.
//
// # Layout
//
// The log lives in dataLogDir/version-2 as files named log.<hex>, where
// <hex> is the zxid of the file's first txn in lowercase hex without
// leading zeros (log.1, log.100000001). A new file starts at the first
// Append after Open, Roll (taken with each snapshot) or Truncate; existing
// files are never appended to.
//
// # File format
//
// Integers are big-endian.
//
//	offset 0   +---------------------------------------------------+
//	           | magic u32 = 0x5A4B4C47 "ZKLG" | version u32 = 2   |
//	           | dbid u64 = 0                                      |
//	offset 16  +---------------------------------------------------+
//	           | checksum u64 | length u32 | payload (length) | 'B' |  record
//	           +---------------------------------------------------+
//	           | ... more records ...                              |
//	           +---------------------------------------------------+
//	           | zeros to the end of the file (preallocated)       |
//	           +---------------------------------------------------+
//
// The checksum is Adler-32 of the payload only (not the length, not the
// 'B'), zero-extended to 64 bits. The payload is a txn as package txn
// encodes it: TxnHeader, the record, and an optional TxnDigest trailer.
// Reading stops at a zero checksum and length, the start of the padding.
//
// Files grow ahead of the writes, as ZooKeeper's FilePadding grows them:
// when a record is about to start within 4096 bytes of the preallocated
// size, that size grows by Config.PreAllocSizeBytes (64 MiB by default) by
// writing a single zero byte at the new size minus one. A first file is
// therefore 64 MiB + 16 bytes long, as ZooKeeper's are.
//
// # Durability
//
// Append only buffers. Sync writes the buffered records, then fdatasync
// (fsync when the file's size changed since the last sync, which
// preallocation makes rare), then, the first time for each file, fsync on
// the directory (internal/durablelog's Appender, which the bookie journal
// uses too). A txn may be acknowledged once the Sync after its Append
// returned nil. Many Appends share one Sync: that is group commit, and the
// caller drives it. Roll syncs before it moves on, so every file but the
// last is complete on disk. A failed write or sync poisons the Log.
//
// # Torn tails and corruption
//
// A crash in the middle of appending leaves the last file with a torn
// tail, which is cut off; damage anywhere else may hold acknowledged txns
// and is never cut off silently. The rules that tell the two apart are
// shared with the bookie journal (package internal/durablelog; stated in
// docs/storage-recovery.md, "The durable-log rules"). In this format:
//
//   - the end marker is a zero checksum and length;
//   - a length below 0 or above Config.MaxRecordBytes is corrupt;
//   - a record whose checksum and 'B' marker are right is complete (if its
//     payload then fails to decode, or its zxid does not increase, or the
//     file's first zxid does not match the file name, that is corrupt; but
//     a record that repeats, byte for byte, one read earlier with the same
//     zxid is passed over, as Apache ZooKeeper 3.8 writes such repeats:
//     see repeats);
//   - any other record claims the bytes up to where its 'B' belongs
//     (off + 12 + length): it is torn only if zeros follow from there, and
//     no 'B' up to its last non-zero byte ends a payload with the record's
//     checksum (that would be a complete record whose length field is
//     damaged, perhaps swallowing the records after it);
//   - a header cut short is a prefix of magic, version 2 and dbid 0.
//
// Torn and corrupt outcomes are *RecordError values naming the file and the
// record's offset, matching ErrTorn or ErrCorrupt. RepairTornTail (called
// by Open) truncates the last file where the torn record starts, or
// removes the file if not even its first record is complete.
//
// Differences from ZooKeeper's reader, which treats a missing 'B' in any
// file as the end of that file and a checksum mismatch anywhere as fatal:
// keeper accepts a torn tail only in the last file (ZooKeeper's own
// writer, which starts a new file on restart without repairing, can leave
// torn tails in earlier files; keeper reports those as corrupt), and it
// cuts a torn record whose checksum fails when the tail rule says the
// record was simply cut short.
//
// # Reading and purging
//
// Read returns an Iterator over the txns from a zxid on, starting with the
// file with the greatest starting zxid ≤ that zxid, as ZooKeeper's restore
// does. Files lists the log files, and FilesNeededFrom says which of them a
// restore from a given snapshot needs, which is what purging keeps.
//
// The package reads and writes files only through vfs.FS, keeps no clock
// and starts no goroutines.
package txnlog
