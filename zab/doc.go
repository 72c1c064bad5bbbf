// Package zab implements Zab, ZooKeeper's atomic broadcast protocol, as a
// deterministic state machine: fast leader election, discovery,
// synchronisation and broadcast (spec §10), with leaders, followers and
// observers.
//
// A Node never touches disks, sockets, clocks or goroutines. The caller
// feeds it input — Step for messages (and for a link that went down), Tick
// for the passage of time, Propose for new transactions on the leader — and
// carries out the work it hands back from Ready, in this order:
//
//  1. Persist State (acceptedEpoch, currentEpoch) when non-nil.
//  2. Truncate the log to Truncate when non-nil, or replace the state
//     machine and the log with the snapshot the leader streamed when
//     InstallSnapshot is set; then append Entries and sync.
//  3. Close the links in Disconnect, then send Messages, in order per
//     destination: a message may promise the peer that the steps above are
//     done (an ACK promises the entry is on disk, ACKEPOCH that
//     acceptedEpoch is).
//  4. Apply Committed to the state machine, in order.
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
package zab
