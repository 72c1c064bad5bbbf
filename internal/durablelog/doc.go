// Package durablelog holds the rules keeper's two write-ahead logs share,
// whatever their record format: the ZooKeeper transaction log
// (coordination/txnlog) and the bookie journal (ledgerstore/bookie/journal).
// Each keeps its own on-disk format and implements Framing; this package
// decides what the end of a file means and how a file is appended to and
// synced. docs/storage-recovery.md states the rules for operators.
//
// # Appending
//
// An Appender buffers framed bytes, writes them at the end of its file,
// grows the file ahead of the writes when its owner says (Preallocate: the
// format decides when and by how much), and makes them durable with Sync:
// fdatasync, or fsync when the file's size changed since the last sync,
// then, the first time for each file, fsync of the directory. Any failed
// write, preallocation, sync or directory sync poisons the Appender: the
// state of the file after a failed fsync is unknown, so it never retries,
// and every later call returns the first error.
//
// # The end of a file: clean end, zero tail, torn tail, corruption
//
// A crash in the middle of appending leaves the last file with a torn
// tail: the bytes written since the last sync reached the disk in order
// but only part way, and the rest of the preallocated file is still zero.
// Cutting such a tail off loses nothing that was acknowledged. Damage
// anywhere else may hold acknowledged records and is never cut off. The
// Scanner tells the two apart with one rule. For a record at offset off of
// a file of size S:
//
//  1. If off == S, or every byte from off to S is zero (the preallocated
//     zero tail), the file ends cleanly there.
//  2. An end marker (what the format reads as "no record": a zero length)
//     followed by any non-zero byte is corrupt: the writers never leave
//     data after the end (truncation and repairs shrink the file, and
//     appends are in order).
//  3. A record that fails a check no interrupted write can explain (the
//     format says which: a length above the limit, since a torn length is
//     a prefix of the real one followed by zeros; a record whose checksum
//     matches but whose body is malformed) is corrupt.
//  4. A record that passes the format's checks is complete.
//  5. Any other record (cut short by the end of the file, a checksum or
//     marker that does not match) is torn if all of these hold, and
//     corrupt otherwise: every byte from where the record claims to end
//     to S is zero, so it is the last thing written; it is not a complete
//     record whose length field alone was damaged (Framing.DamagedLength,
//     which may have swallowed records after it); and the file is the
//     log's last, since every earlier file was synced before the next one
//     began.
//  6. A file whose header is wrong is torn if it is the log's last and its
//     non-zero bytes are a prefix of a header the writer writes (an empty
//     or all-zero file included); otherwise it is corrupt.
//
// Torn and corrupt outcomes are *RecordError values naming the file and
// the offset, matching the sentinels the format passes in Options. A torn
// tail is repaired by cutting the file where the torn record starts (Cut),
// or removing the file when not even its header is whole (Remove).
//
// The rule assumes a crash keeps the unsynced writes of a file in order (a
// prefix of them), as vfs.MemFS.CrashClone simulates. A disk that persists
// a later page of unsynced data but not an earlier one can make an
// unacknowledged tail look corrupt: keeper then refuses to start instead
// of guessing.
//
// The package reads and writes files only through vfs.FS, keeps no clock
// and starts no goroutines.
package durablelog
