// Package bookie is keeper's storage server: a BookKeeper-compatible
// bookie speaking the v3 and v2 protocols (docs/bookkeeper-protocol.md §6.1,
// §6.2) on one port, with a
// group-commit journal (package journal), entry logs and an index
// (package entrystore), registration and cookies in a ZooKeeper-compatible
// metadata store, a disk monitor, and garbage collection.
//
// It is a tier-3 driver: the only place with sockets, timers and
// goroutines. Per connection a reader decodes frames (bkproto) and a
// writer sends responses; one goroutine per journal directory runs the
// group commit; one each runs checkpoints, the disk monitor and GC with
// compaction; parked long polls and fence completions have short-lived
// goroutines of their own.
//
// A connection is v3 until a frame is not a v3 Request; from then on it is
// v2 for good, as in BookKeeper. bkproto translates each v2 packet into
// the v3 request it stands for, so both protocols run the same handlers
// (master key, fence, durability, limits), and only the response is
// encoded in the connection's protocol (call.v2).
//
// # Write path
//
// An add (docs/bookkeeper-protocol.md §7.2) takes the ledger's lock, binds or checks the master
// key (EUA), checks the fence (EFENCED, unless RECOVERY_ADD), inserts the
// entry into ledger storage (readable at once, waking long polls), queues
// a master-key record on the ledger's first contact and then the entry's
// record for its journal (ledger L uses journal L mod n), and releases the
// lock. The journal goroutine appends queued records, closes a batch as
// soon as nothing more is queued (or, with journalFlushWhenQueueEmpty=false,
// once journalMaxGroupWaitMSec has passed since its oldest record), or when
// more than journalBufferedWritesThreshold bytes are buffered, fsyncs it,
// and only then sends the batch's responses; the records queued during the
// fsync make the next batch (natural group commit). A fence (READ_ENTRY with FENCE_LEDGER)
// sets the flag in storage and journals a fence record under the same
// lock, and reads and answers only once that record is durable, whatever
// the answer (NoSuchEntry included). WRITE_LAC stores the body and
// journals it the same way. FORCE_LEDGER answers after the journal's next
// sync. The ledger lock makes an add either precede a concurrent fence in
// the journal and in storage, or see it.
//
// # Checkpoint and restart
//
// Every flushInterval, and whenever the write cache fills, a checkpoint
// (docs/bookkeeper-protocol.md §7.3, Appendix A item 8) captures each journal's durable mark,
// flushes ledger storage (entry logs, then the index, synced), writes the
// marks to lastMark in every ledger directory's current/ (lastMark.<i>
// with several journals), and removes the journal files before them but
// journalMaxBackups. A restart opens each journal (cutting a torn tail),
// replays it from its mark into storage (entries, master keys, fences,
// explicit LACs), checkpoints, and only then serves and registers.
//
// # Metadata layout
//
// Under the ledgers root (default /ledgers, docs/bookkeeper-protocol.md §5.2):
//
//	LAYOUT                  "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"
//	INSTANCEID              the cluster's UUID
//	available/<id>          EPHEMERAL: this bookie while writable
//	available/readonly/<id> EPHEMERAL: this bookie while read-only
//	cookies/<id>            PERSISTENT: the cookie
//	00/0000/L0001 ...       ledger metadata (hierarchical manager); read by GC only
//
// The bookie reaches all of it through package metadata, over a session
// of its own (metadata.Dial). If the root does not exist it creates root,
// available, available/readonly and INSTANCEID (a random UUID) in one
// multi-op, then LAYOUT, as `bookkeeper shell metaformat` would
// (metadata.Store.Init), so that a fresh keeper cluster needs no separate
// format step. An existing tree is used as it is (a missing available,
// readonly or LAYOUT node is created), with the layout its LAYOUT names.
//
// The registration znode's data is what BookKeeper 4.12 and later write
// (metadata.RegistrationData): a BookieServiceInfoFormat protobuf
// (binary) with a "bookie-rpc" endpoint (id "bookie", the advertised host
// and the port) and, with metrics on, an "http" endpoint; the properties
// map is empty. Older BookKeeper versions wrote no data and ignore it. A
// znode left by a crashed process's session is waited out, up to twice the
// session timeout (BookKeeper waits one timeout). If the znode goes while
// the bookie runs (its session expired) it registers again on the new
// session (BookKeeper shuts down instead) (metadata.Registration).
//
// The bookie id defaults to host:port (docs/bookkeeper-protocol.md §8.2): advertisedAddress, or
// the listening host, or the first non-loopback IPv4 address, with the
// listening port. bookieId overrides it.
//
// # Cookies
//
// A cookie (layout 5) binds the bookie id, its directories and the
// cluster's INSTANCEID. It is stored in each journal, ledger and index
// directory as current/VERSION and at <root>/cookies/<id>, as text:
//
//	5
//	bookieHost: "10.0.0.7:3181"
//	journalDir: "/data/journal"
//	ledgerDirs: "2\t/data/ledgers1\t/data/ledgers2"
//	instanceId: "3f5c1a42-..."
//
// (the protobuf text of CookieFormat, as Java's TextFormat prints it;
// journalDir joins several directories with ',', ledgerDirs and
// indexDirs are "<count>\t<dir>..."). Start-up applies the decision table
// of docs/bookkeeper-protocol.md §8.2 (see checkCookies): a new bookie (no metadata cookie, all
// directories empty) stamps every directory and then the metadata store;
// a wiped or swapped disk, a lost metadata cookie, a changed bookie id or
// directory list, or another cluster's instance id refuses the start with
// an error matching ErrInvalidCookie that says which. Storage expansion
// (allowStorageExpansion) is not supported. Directory cookies are written
// atomically (BookKeeper overwrites in place).
//
// # Disks, read-only mode and garbage collection
//
// Every diskCheckInterval the bookie measures its ledger directories: when
// all are above diskUsageThreshold it turns read-only (adds and explicit
// LACs get EREADONLY; reads, fences and recovery adds go on) and moves its
// registration to available/readonly; once a directory is below
// diskUsageLwmThreshold it turns writable again. Above
// diskUsageWarnThreshold major compaction is suspended. A journal or
// storage failure turns it read-only for good (readOnlyModeEnabled=false:
// it stops). An operator may turn it read-only too, and suspend either
// compaction, through the HTTP admin API (SetReadOnly, SuspendCompaction). Every gcWaitTime, GC snapshots the local ledgers, lists the
// metadata store's ledgers (metadata.Store.List: any error, any odd
// znode in the ledger tree and any unknown child of the root keeps
// everything), confirms each missing one with a direct read of its znode,
// and deletes the rest locally; entry logs without live data are removed.
// Minor and major compaction run at their intervals and thresholds, a step
// of a few MB at a time, so adds go on (docs/bookkeeper-protocol.md §8.3).
//
// # Configuration
//
// ParseProperties and ConfigFromProperties read BookKeeper's
// bookkeeper.conf. The keys applied: bookiePort, bookieId,
// advertisedAddress, journalDirectories (journalDirectory),
// ledgerDirectories, indexDirectories (one), metadataServiceUri (zk
// schemes) or zkServers, zkLedgersRootPath, zkTimeout, journalSyncData,
// journalMaxGroupWaitMSec, journalBufferedWritesThreshold,
// journalBufferedEntriesThreshold, journalFlushWhenQueueEmpty,
// journalAdaptiveGroupWrites (both values behave alike),
// journalFormatVersionToWrite (6 or 7), journalMaxSizeMB,
// journalPreAllocSizeMB, journalAlignmentSize, journalMaxBackups,
// journalPageCacheFlushIntervalMSec, flushInterval, diskUsageThreshold,
// diskUsageWarnThreshold, diskUsageLwmThreshold, diskCheckInterval,
// readOnlyModeEnabled, gcWaitTime, minor/majorCompactionThreshold and
// Interval, nettyMaxFrameSizeBytes, logSizeLimit,
// dbStorage_writeCacheMaxSizeMb, dbStorage_readAheadCacheMaxSizeMb,
// prometheusStatsHttpAddress and prometheusStatsHttpPort (metrics are
// served only when the port is set), httpServerEnabled, httpServerPort and
// httpServerHost (the HTTP admin API, package httpadmin,
// docs/bookie-http.md), and the connection limits:
// maxPendingAddRequestsPerThread and maxPendingReadRequestsPerThread (per
// connection), waitTimeoutOnResponseBackpressureMs, and keeper's own
// maxPendingRequestBytesPerConnection, maxUnsentResponseBytesPerConnection
// and maxPendingConnectionBytes (see Config), and BookKeeper's TLS keys
// (tlsProviderFactoryClass, tlsKeyStore*, tlsTrustStore*,
// tlsCertificatePath, tlsClientAuthentication, ...; docs/bookie-tls.md).
// Keys that protect data or access are refused unless their value asks for
// nothing (TLS keys keeper does not read, httpServer TLS keys, bookie and
// client auth providers, authorizedRoles, permittedStartupUsers,
// zkEnableSecurity, dataIntegrityChecking, localConsistencyCheckOnStartup;
// docs/configuration.md). Other keys are ignored.
//
// # Memory under load
//
// What the bookie holds for its clients is bounded (limits.go): per
// connection, the requests in progress (10,000 adds and 10,000 reads, 16
// MiB) and the responses not yet written (4 MiB, plus one response); in
// all, 256 MiB, past which a connection moves only one request at a time.
// A request counts until its response is written to the socket. Past a
// bound the bookie stops reading the connection, so TCP pushes back on the
// client. A connection whose socket takes no responses for 30 s is closed.
//
// # Differences from BookKeeper
//
//   - GET_LIST_OF_ENTRIES_OF_LEDGER answers EBADREQ, and so does START_TLS
//     on a bookie without TLS (tls.go has the one with it). AUTH is
//     answered as by a bookie without an auth provider (EOK,
//     AuthDisabledPlugin). v2's BATCH_READ_ENTRY is served as in 4.17,
//     bounded by the frame limit (maxBatchReadSize is not a setting).
//   - DEFERRED_SYNC adds are acknowledged after their sync like any other
//     (stronger than required); FORCE_LEDGER then costs one more sync.
//   - The journal is written in format 7 (checksummed) unless
//     journalFormatVersionToWrite=6; entry logs are keeper's version 2.
//   - NoSuchEntry/NoSuchLedger only when the store certainly never held
//     the entry; read and checksum errors are EIO (docs/bookkeeper-protocol.md Appendix A item 1).
//   - A fence of a ledger without entries is answered only once durable.
//   - GC always confirms a deletion with a direct metadata read
//     (verifyMetadataOnGc). Minor compaction also runs on full disks.
//   - maxPending{Add,Read}RequestsPerThread bound each connection's
//     requests in progress, and past them the bookie stops reading the
//     connection; BookKeeper bounds each worker thread's queue and fails
//     the excess with ETOOMANYREQUESTS. A client that takes no responses
//     is closed after waitTimeoutOnResponseBackpressureMs (default 30 s;
//     BookKeeper's default waits forever, and without
//     closeChannelOnResponseTimeout it drops responses instead).
package bookie
