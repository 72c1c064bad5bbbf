// Package zkcore is ZooKeeper's service logic as a deterministic state
// machine: it turns client requests into transactions (prep), applies
// committed transactions to the tree, and produces the replies and watch
// notifications each connection must receive, in the order it must receive
// them.
//
// A Server does no I/O and reads no clock. A driver feeds it input —
//
//	Connect   a ConnectRequest on a new connection
//	Request   a decoded request frame
//	Apply     a committed transaction (after it is durable)
//	Tick      the passage of time (session expiry, container reaping)
//	Disconnect a socket that went away
//
// — and carries out the work it returns from Ready:
//
//  1. Persist Proposals (in order) and, once they are durable, feed each to
//     Apply. Only then may their replies be sent: a reply promises the
//     write is durable.
//  2. Send each Send's bytes on its connection, in order; close it after
//     if Close is set.
//
// Ordering rules it keeps (docs/zookeeper-protocol.md §1.4, §3.6): replies on a connection leave
// in the order its requests arrived; a read waits for every earlier write
// of its connection to be applied; the notifications a write triggers are
// queued before that write's reply and before any later reply.
//
// Writes are validated against the committed tree overlaid with the
// effects of writes prepared but not yet applied (ZooKeeper's
// "outstanding changes"), so that many writes can be in flight at once.
// Quota limits (Config.EnforceQuota) are the exception: as in ZooKeeper,
// they are checked against the committed tree and its zookeeper_stats
// alone (quota.go).
package zkcore
