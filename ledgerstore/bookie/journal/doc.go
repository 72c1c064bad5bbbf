// Package journal is the bookie's write-ahead journal, in BookKeeper's
// journal format (docs/bookkeeper-protocol.md §7.3): an add is acknowledged only
// after the group commit holding it is synced, and a restart replays the
// journal from the last checkpoint into ledger storage, restoring entries,
// master keys, fence flags and explicit LACs.
//
// The package reads and writes files only through vfs.FS, keeps no clock
// and starts no goroutines: the bookie driver runs the group-commit loop
// (see Journal) and passes in the age of the oldest waiting record.
//
// # Layout
//
// A journal directory holds journalDir/current/<hex logId>.txn files, the
// log id in lowercase hex without leading zeros. The first id is
// Config.FirstLogID (BookKeeper uses the time in ms), each new file takes
// the next one, and a restart never appends to an old file. A file grows
// ahead of its writes in Config.PreAllocSizeBytes steps (16 MiB) and is
// closed at the first Sync after its data passes Config.MaxSizeBytes
// (2 GiB).
//
// # File format
//
// Integers are big-endian (Java's ByteBuffer order).
//
//	offset 0    +----------------------------------------------------------+
//	            | "BKLG" | version int32 (6 or 7) | zeros to 512 bytes      |  header sector
//	offset 512  +----------------------------------------------------------+
//	            | len int32 | [crc32c u32, v7 only] | body (len bytes)      |  record
//	            | len int32 | [crc32c u32, v7 only] | body (len bytes)      |  record
//	            | -0x100 int32 | padLen int32 | padLen zero bytes          |  padding, ends
//	            +----------------------------------------------------------+  on a boundary
//	            | ... more batches, each ending with a padding record ...  |
//	            +----------------------------------------------------------+
//	            | zeros to the end of the file (preallocated)              |
//	            +----------------------------------------------------------+
//
// A record body is ledgerId int64 | entryId int64 | rest. For an entry
// (entryId ≥ 0) it is the entry's stored form (docs/bookkeeper-protocol.md §6.4), which replay
// re-inserts as it is. Special records have a negative entryId:
//
//	entryId   -0x1000 master key    | keyLen int32 | key           |
//	entryId   -0x2000 fence         (nothing more)
//	entryId   -0x8000 explicit LAC  | lacLen int32 | LAC body      |
//
// (-0x4000, force-ledger, is never written.) Replay skips other negative
// ids, so that an older keeper can read a newer one's journal.
//
// Each Flush ends with a padding record that takes the file to the next
// multiple of Config.AlignmentBytes (512), or the one after if fewer than 8
// bytes remain before it. So every batch, and every mark a Sync sets, ends
// on a boundary.
//
// # Log mark and checkpoints
//
// A Position (log id, offset) is BookKeeper's log mark; Journal.Mark is the
// position up to which the journal is durable. A checkpoint captures the
// mark before flushing ledger storage, persists it with WriteLastMark (16
// bytes: logFileId int64, offset int64, in a file named lastMark in every
// ledger directory) once storage is durable, and then RemoveBefore deletes
// the journal files before the mark but the newest few (journalMaxBackups,
// 5). A restart reads the greatest mark with ReadLastMark, opens the
// journal (which cuts a torn tail), and replays from the mark.
//
// # Differences from BookKeeper, and why
//
//   - Format 7. BookKeeper's records have no checksum. A crash can leave a
//     record whose length reached the disk but whose body did not; in a
//     preallocated file the missing bytes read as zeros, and BookKeeper
//     replays the record as if it were whole. Damage in the middle of a
//     file goes unseen too, and since bookies do not verify entry digests
//     (BP-31), the garbage lands in ledger storage. keeper therefore writes
//     format 7 by default: format 6 with a CRC-32C (Castagnoli) of the body
//     between the length and the body. Everything else (header, padding,
//     special records, lastMark, names) is format 6's. BookKeeper refuses a
//     version-7 file rather than misreading it. Config.FormatVersion = 6
//     writes BookKeeper's format, byte for byte but for the next point,
//     with the weaker checks described below. Each file names its own
//     format, so a journal may hold both after a configuration change. The
//     checksum covers the body and not the length: a damaged length still
//     shows as a mismatch, and the reader can find the true end of a record
//     whose length grew by checking every shorter body in one running pass
//     (the damaged-length test below).
//   - Padding on every flush. BookKeeper writes no padding when a batch
//     already ends on a boundary; keeper then writes a whole unit, so that
//     every batch ends with a padding record (valid format 6). Damage to
//     the length of the last durable record is then told from a torn
//     write: a non-zero padding header always follows that record, which a
//     shortened length leaves as data after the record's claimed end and a
//     lengthened one swallows (the damaged-length test below).
//   - Torn tails are cut, damage is reported. BookKeeper stops reading a
//     file at any short read or zero length and never repairs; a later file
//     can then follow a torn one. keeper cuts a torn tail when it opens the
//     journal, before it starts a new file, and reports damage anywhere
//     else (below) instead of skipping the rest of a file.
//   - lastMark is written atomically (tmp, fsync, rename, fsync dir);
//     BookKeeper overwrites it in place. A damaged lastMark is an error,
//     where BookKeeper skips it.
//   - Journal files are never reused (journalReuseFiles). There is no
//     force-write thread: Sync is a call, made by the driver after Flush,
//     and records appended while it runs make the next batch.
//
// # Torn tails and corruption
//
// A crash in the middle of appending leaves the last file with a torn
// tail, which Open cuts off; damage anywhere else may hold acknowledged
// records and is never cut silently. The rules that tell the two apart are
// shared with keeper's transaction log (package internal/durablelog;
// stated in docs/storage-recovery.md, "The durable-log rules"). In this
// format:
//
//   - the end marker is a zero length;
//   - a length above Config.MaxRecordBytes, or a pad length outside
//     [0, 2·MaxAlignmentBytes), is corrupt: a torn length is a prefix of
//     the real one followed by zeros, so it is never larger;
//   - a v7 record whose checksum matches is complete; if its body does not
//     then decode (too short, or a special record whose value length is
//     wrong), it is corrupt. A v5/v6 record is taken as complete when it
//     lies inside the file and its body decodes (see "What v6 cannot see"
//     below). A padding record is complete when it lies inside the file
//     and its padding is zero;
//   - any other record claims the bytes up to where it says it ends, and
//     is torn only if zeros follow from there and it is not a complete
//     record with a damaged length field (in v7: no shorter body of at
//     least 16 bytes matches its checksum; in v5/v6: no valid padding
//     record starts inside it). Negative lengths other than the padding
//     marker claim only their own 4 bytes: a torn padding marker reads as
//     one;
//   - a header cut short is a prefix of a v6 or v7 header. Versions below 5
//     (no 512-byte header) are not read.
//
// Torn and corrupt outcomes are *RecordError values naming the file and
// offset, matching ErrTorn or ErrCorrupt. Replay stops at either; Open
// truncates the last file where a torn record starts, or removes it if
// its header is torn.
//
// What v6 cannot see. Without a checksum, a record whose length field
// reached the disk but whose body was cut short, inside the preallocated
// zeros, reads as a whole record with zeros at its end; so does one whose
// length was cut so that it claims only zeros. Replay returns such a
// record (at most one, at the very end of the data) as BookKeeper would.
// It can only be a record no Sync covered, so no add it carried was
// acknowledged, but its bytes are wrong. Damage inside a v6 record body is
// not detected at all. Both are why keeper writes v7.
package journal
