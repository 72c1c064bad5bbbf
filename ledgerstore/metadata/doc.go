// Package metadata keeps BookKeeper ledger metadata and reads the bookie
// registry in a ZooKeeper-compatible coordination service, through keeper's
// own client (a zkclient.Session, which reattaches its session to another
// server after a lost connection and opens a new one after an expiry). It
// uses BookKeeper's own znode layout and
// byte formats, so keeper's ledger client, keeper's bookies and Apache
// BookKeeper's Java clients and bookies can share one tree. The reference
// is docs/bookkeeper-protocol.md §5 (and §1.2 for the state machine).
//
// Every metadata update is a compare-and-set on the znode's version: Write
// fails with ErrBadVersion when the metadata changed since the caller read
// it, and the caller re-reads and re-decides (docs/bookkeeper-protocol.md §5.5). CheckUpdate holds
// the state machine's rules for the caller to apply to what it read.
//
// A Store runs goroutines only for its watches (Watch, WatchBookies) and
// registrations; each ends with its context (or Registration.Close), with
// Store.Close, or with the session's Close. A watch the session lost (it
// expired) fires with zkclient.StateExpired, and the loop arms it again on
// the new session, re-reading what it follows.
//
// The bookie side of the tree lives here too, so both sides share one
// format: Dial opens a session of a process's own; Registration publishes
// a bookie under available/ (RegistrationData is the inverse of
// ServiceAddress) and keeps it there across session expiries; Cookie and
// CreateCookie hold a bookie's cookie; StoredLayout, List and Exists let
// its garbage collector walk the tree the cluster was formatted with.
//
// # The tree
//
//	/ledgers                       the root (Config.Root)
//	├── LAYOUT                     "2\n<ledger manager factory class>:1"
//	├── INSTANCEID                 the cluster's UUID, made by Init
//	├── available/<bookieId>       writable bookies (ephemeral)
//	│   └── readonly/<bookieId>    read-only bookies (ephemeral)
//	├── cookies/<bookieId>         bookie cookies (the bookie writes them)
//	├── idgen/ID-<seq>             short id generator (ephemeral, deleted at once)
//	├── idgen-long/HOB-<hi>/ID-<seq>  long id generator, once short ids run out
//	├── 00/0000/L0001              ledger 1 (hierarchical layout, id < 2^31-1)
//	└── 000/0000/0021/4748/L3648   ledger 2^31 (ids >= 2^31-1; every id in
//	                               the long hierarchical layout)
//
// A ledger znode's path is its id in decimal, ten digits split 2-4-4 or
// nineteen split 3-4-4-4-4, the leaf prefixed with "L" (Layout.Path).
// Empty directories left by Delete are pruned.
//
// # Ledger metadata bytes
//
// Encode writes format version 3; Decode reads versions 1 to 3.
//
//	+----------------------------------+--------+------------------------------+
//	| "BookieMetadataFormatVersion\t3\n" | varint | LedgerMetadataFormat message |
//	|            (30 bytes)            | length |  (protobuf binary, proto2)   |
//	+----------------------------------+--------+------------------------------+
//
// The message is bkproto.LedgerMetadataFormat: 1 quorumSize (Qw),
// 2 ensembleSize, 3 length, 4 lastEntryId, 5 state, 6 segment {1
// ensembleMember..., 2 firstEntryId}, 7 digestType, 8 password,
// 9 ackQuorumSize, 10 ctime, 11 customMetadata {1 key, 2 value},
// 12 cToken. As in BookKeeper, fields 3, 4, 9 and 12 are always written
// (lastEntryId -1 and length 0 unless the ledger is closed), 7 and 8
// whenever the metadata has a digest type, 10 only if the creation time is
// stored.
//
// Version 2 has the same header with "2", then the message in protobuf
// text format. Version 1 has "1", then lines: Qw, E, length, one line per
// ensemble ("firstEntryId\tbookie\tbookie..."), and "lastEntryId\tCLOSED"
// for a closed ledger ("-102\tCLOSED" for one in recovery).
//
// # Ledger ids
//
// NewLedgerID mints ids as BookKeeper's hierarchical ledger managers do:
// the sequence number of an ephemeral sequential znode root/idgen/ID-
// (deleted at once), and once those reach 2^31-1, (hi << 32) | seq from
// root/idgen-long/HOB-<hi>/ID-. Ids are never reused.
package metadata
