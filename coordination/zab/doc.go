// Package zab implements Zab, ZooKeeper's atomic broadcast protocol, as a
// deterministic state machine: fast leader election, discovery,
// synchronisation and broadcast (docs/zookeeper-protocol.md §10), with leaders, followers and
// observers.
//
// A Node never touches disks, sockets, clocks or goroutines. The caller
// feeds it input — Step for messages (and for a link that went down), Tick
// for the passage of time, Propose for new transactions on the leader — and
// carries out the work it hands back from Ready, in this order:
//
//  1. Truncate the log to Truncate when non-nil, or replace the state
//     machine and the log with the snapshot the leader streamed when
//     InstallSnapshot is set; then append Entries and sync.
//  2. Persist State (acceptedEpoch, currentEpoch) when non-nil, only once
//     step 1 is durable. A learner's sync arrives in one batch with the
//     currentEpoch of the new leader: were the epoch durable first, a
//     crash in between would leave a new epoch over an old log, a
//     candidate that can win an election without txns a quorum committed
//     (ZOOKEEPER-3911, -4643, -4646). Nothing needs State before the log:
//     acceptedEpoch, and a leader's currentEpoch, are promises to peers,
//     which only Messages make. Persist Config (the active and the
//     last-seen configuration) at the same point: an ACK of a
//     reconfiguration, or a COMMITANDACTIVATE, promises it is durable.
//  3. Close the links in Disconnect, then send Messages, in order per
//     destination: a message may promise the peer that the steps above are
//     done (an ACK promises the entry is on disk, ACKEPOCH that
//     acceptedEpoch is, the ACK of NEWLEADER that the synced log and the
//     new currentEpoch are).
//  4. Apply Committed to the state machine, in order.
//
// A learner keeps what the leader sends during synchronisation (DIFF,
// TRUNC or SNAP, and the txns and commits that follow) in memory until
// NEWLEADER, and hands it out in NEWLEADER's batch: a sync from a leader
// that never gets established leaves no trace on disk.
//
// Then call Advance with the same Ready.
//
// Zxids: epoch in the high 32 bits, a counter in the low 32 (package zxid).
// A new leader's first proposal is epoch<<32 | 1.
//
// Payloads are opaque: the caller encodes its transactions (ZooKeeper's
// txn records) and Zab orders and replicates the bytes. Links between peers
// are reliable and FIFO while they are up (TCP); a link that fails is
// reported with a MsgDisconnected step, after which a learner rejoins by
// running discovery and synchronisation again, as Apache ZooKeeper does.
// Election notifications may be lost freely: they are retransmitted.
//
// The ensemble's configuration changes through reconfiguration txns, which
// a ReconfigCodec recognises (Membership, docs/zookeeper-protocol.md
// §10.6): one in flight at a time, committed with a quorum of the old and
// of the new configuration, activated on commit.
package zab
