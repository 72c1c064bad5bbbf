// Package autorecovery keeps every entry of every ledger at its write
// quorum after a bookie is lost for good, as BookKeeper's autorecovery
// does, with BookKeeper's own state in the metadata store so that
// BookKeeper's tools and daemons see the same thing (docs/autorecovery.md,
// docs/bookkeeper-protocol.md §8.4).
//
// Three parts, each a driver over metadata.Store:
//
//   - Manager holds the under-replication tree: markers
//     underreplication/ledgers/<hhhh>/<hhhh>/<hhhh>/<hhhh>/urL<id> (text
//     UnderreplicatedLedgerFormat), the workers' ephemeral locks
//     underreplication/locks/urL<id> (text LockDataFormat), the LAYOUT
//     znode, the disable switch and lostBookieRecoveryDelay.
//   - The auditor, one per cluster, elected by ephemeral sequential votes
//     under underreplication/auditorelection (lowest wins), watches the
//     bookie registry and, once a bookie has been gone for
//     lostBookieRecoveryDelay, marks every ledger with a segment on it.
//   - Replication workers, one per autorecovery process, take a marked
//     ledger's lock, copy each fragment that lives on a lost bookie from
//     a surviving replica to a bookie outside the fragment's ensemble
//     (RECOVERY_ADD, with the ledger's master key), swap the bookie in
//     that segment by compare-and-set on the ledger metadata, and delete
//     the marker. The last segment of a ledger still open is left to its
//     writer for openLedgerRereplicationGracePeriod; after that the
//     worker recovers (fences and closes) the ledger first.
//
// Daemon runs an elector (and the auditor while elected) and a worker
// together: what `keeper autorecovery` runs, and what a bookie runs with
// autoRecoveryDaemonEnabled.
package autorecovery
