// Package entrystore is a bookie's ledger storage, after BookKeeper's
// DbLedgerStorage (docs/bookkeeper-protocol.md §7.4, §7.5, §8.3): entries go into a
// write cache, are flushed sorted by (ledger, entry) into append-only entry
// logs, and are found again through an index of (ledger, entry) -> location
// kept in pebble, alongside one small record per ledger (master key, fenced
// flag, explicit LAC).
//
// # Directories
//
//	<dir>/current/                one per Config.Dirs; ledger L -> Dirs[L mod n]
//	    0.log 1.log ... 1f.log    entry logs, named by id in lowercase hex
//	    lastId                    the id of the last log created here, hex + "\n"
//	<IndexDir>/current/index/     the pebble database (IndexDir defaults to Dirs[0])
//
// Log ids are unique across directories: Open takes the next id from the
// greatest lastId and log id of all directories. lastId is replaced
// atomically (tmp, fsync, rename, fsync dir) before a log is created, so an
// id is never reused even after its log was collected.
//
// # Entry log format
//
// Integers are big-endian, as everywhere in BookKeeper.
//
//	offset 0     +--------------------------------------------------------+
//	             | "BKLO" | version i32 = 2 | ledgersMapOffset i64         |
//	             | ledgersCount i32 | zeros to offset 1024                |
//	offset 1024  +--------------------------------------------------------+
//	             | size u32 | crc32c u32 | entry (size bytes)             | record
//	             +--------------------------------------------------------+
//	             | ... more entry records ...                             |
//	mapOffset    +--------------------------------------------------------+
//	             | size u32 | crc32c u32 | -1 i64 | -2 i64 | count i32     | map chunk
//	             |   count x ( ledgerId i64 | bytes i64 )                 | (<= 10,000 pairs)
//	             +--------------------------------------------------------+
//	             | ... more map chunks ...                                | end of file
//	             +--------------------------------------------------------+
//
// An entry is the stored form of docs/bookkeeper-protocol.md §6.4 (ledgerId, entryId, LAC,
// length, digest, payload); entries of all ledgers of the directory are
// interleaved, each flush's sorted by (ledger, entry). The CRC-32C covers
// the entry bytes; a damaged size field changes the span it is checked
// over, so it is caught too.
//
// A log is sealed when it reaches Config.EntryLogMaxBytes (and at Close):
// its ledgers map, the record bytes (headers included) of every ledger in
// it, is appended as chunk records, the file is fsynced, then the header's
// ledgersMapOffset (where the first chunk's size field starts; 0 while
// unsealed) and ledgersCount are patched in and the file is fsynced again.
// GC learns each log's usage from its map without reading the log.
//
// Difference from BookKeeper (whose header version is 1): BookKeeper's
// records are `size | entry` with no checksum, and a bookie does not check
// entry digests, so a flipped bit is served as data. Keeper's version 2
// adds the record CRC so that the store itself can tell damage from data,
// and it refuses version 1 logs.
//
// # Index
//
// One pebble database holds both of BookKeeper's RocksDB tables, under key
// prefixes, so that an entry's location and its ledger's record commit in
// one batch:
//
//	'e' | ledgerId u64 | entryId u64  ->  location u64 = logId << 32 | offset
//	'l' | ledgerId u64                ->  ledger record
//
// offset is where the entry bytes start (the record header is the 8 bytes
// before it). The last entry of a ledger is the last key below
// ('e', ledgerId, 1<<63). The ledger record is keeper's own, versioned
// encoding of BookKeeper's LedgerData (exists is implied by the key):
//
//	version u8 = 1 | flags u8 (1 fenced, 2 key bound) | keyLen u16 | masterKey | lacLen u16 | explicitLAC
//
// Every ledger record is also held in memory (about 100 bytes a ledger),
// so metadata calls never touch the disk. The bookie-known LAC (the
// greatest LAC piggybacked on an added entry) is not persisted: after a
// restart it is derived from the ledger's last stored entry.
//
// pebble reads and writes through its own vfs.FS (Config.IndexFS), not
// keeper's: pebble's interface is much larger than keeper's (hard links,
// locks, directory handles, disk usage, prefetch, file reuse), so an
// adapter would be neither small nor obviously faithful. Tests give pebble
// its crashable MemFS and crash it at the same moment as keeper's MemFS.
//
// # Write path and checkpoint
//
// Add copies the entry into the active write cache half. When the half is
// full and the other is empty they swap; when both hold entries Add
// returns ErrCacheFull and the bookie must flush (BookKeeper throttles).
//
// Flush swaps the halves and writes the flushed half in this order:
//
//  1. append its entries, sorted, to the directories' current logs
//     (rolling logs that fill up);
//  2. fsync the logs;
//  3. commit one pebble batch, synced: the entries' locations and the
//     ledger records changed since the last Flush;
//  4. empty the half.
//
// So the index never names bytes that are not durable, and a failure at
// any step leaves the previous state intact (plus garbage in the logs).
// A failed write or sync poisons the store: the error is sticky, later
// writes return it, reads go on. The bookie's checkpoint (docs/bookkeeper-protocol.md §7.3,
// Appendix A item 8) wraps Flush:
//
//	mark := journal.LastMark() // before: every entry journaled so far was Added first
//	err := store.Flush()       // entry logs fsynced, then the index committed synced
//	if err == nil { persist(mark) } // only now may journal files before mark go
//
// After a crash, the entries and metadata changes of the write cache are
// lost from the store but not from the journal: replaying the journal from
// the persisted mark calls Add, SetMasterKey, Fence and SetExplicitLAC
// again, all of which are idempotent (an Add of a stored entry replaces
// it).
//
// # Read path
//
// Get looks in the write cache halves, then the read cache, then the index
// and the entry log. A miss in the log reads ReadAheadBytes in one go and
// puts the ledger's following entries found in that span (up to 100) in
// the read cache.
//
// Get answers ErrNoEntry or ErrNoLedger only when the store never held the
// entry or ledger (or deleted it). Everything else is an error: a failed
// read, a record whose checksum fails or that names another entry, an
// index location outside its log (ErrCorrupt). Recovery counts NoSuchEntry
// answers to decide that an entry was never acknowledged, so reporting
// damage as absence would let it truncate acknowledged data (Appendix A
// item 1).
//
// # Torn tails and damage
//
// Only the newest log of a directory is written, so only it may end in a
// torn record. The scanner judges a record at offset off of a file of size
// S, W being the offset just past the file's last non-zero byte:
//
//  1. off == S: the end (for a sealed log, the map pairs must add up to
//     ledgersCount).
//  2. Fewer than 8 bytes left: torn.
//  3. A size outside [24, MaxEntryBytes]: torn if W <= off+8 (only the
//     header was being written; covers an all-zero tail), else corrupt.
//  4. A complete record whose CRC matches is good; then an entry must name
//     non-negative ids, come before any map chunk and, in a sealed log, end
//     by ledgersMapOffset; a chunk must be well formed. Otherwise corrupt.
//  5. A record that runs past S or fails its CRC is torn if W is before
//     its end (nothing after it was written and its own last bytes are
//     missing or zero) and no prefix of its bytes ending at or before W
//     carries its CRC (that would be a complete record whose size field is
//     damaged, perhaps swallowing the records after it); else corrupt.
//  6. A bad file header is torn if the file's non-zero bytes are a prefix
//     of a fresh header; else corrupt.
//
// Rules 2, 3, 5 and 6 say torn only for the newest log of a directory, and
// only while it is unsealed; anywhere else the same findings are corrupt.
// As in package txnlog, the rules assume a crash keeps a prefix of a file's
// unsynced writes (vfs.MemFS.CrashClone models this).
//
// Open repairs each directory's newest log: it cuts a torn tail (or an
// interrupted ledgers map) and seals the log, or removes it if it holds no
// record. Nothing cut was ever indexed, because the index is committed only
// after the log's fsync. A log found corrupt is left untouched and marked
// damaged: Open goes on, intact entries stay readable, damaged ones read as
// ErrCorrupt, and GC and compaction never touch the log. The Scanner is
// exported for tools (`keeper tool entrylog dump`).
//
// # Garbage collection and compaction
//
// GC deletes the ledgers the caller found dead (see GC for the snapshot
// rule of Appendix A item 9) and removes the sealed logs none of whose
// ledgers still exist. Compact rewrites the live entries of sealed logs
// whose live ratio (live bytes / total bytes, from the ledgers maps) is
// below a threshold: 0.2 for minor and 0.8 for major compaction. Each step
// copies a bounded amount into the current log, fsyncs it, commits the new
// locations synced, and only after the last step removes the old file; a
// crash in between leaves both copies, the index naming one of them. Steps
// hold the store only briefly, so Add and Flush go on between them.
//
// # Concurrency and determinism
//
// The package starts no goroutines (pebble runs its own) and keeps no
// clock: the bookie decides when to Flush, GC and Compact. Entry logs and
// lastId files go through keeper's vfs.FS only. Disk usage comes from
// statfs(2) (Config.DiskUsage overrides it).
package entrystore
