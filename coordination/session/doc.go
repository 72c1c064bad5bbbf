// Package session is the session table: which sessions are alive, their
// negotiated timeouts, and when each expires (docs/zookeeper-protocol.md §6).
//
// The table is pure. Time comes in as nowMs parameters: milliseconds from a
// monotonic clock the driver owns (the JVM uses nanoTime/1e6 the same way),
// never wall time. Nothing here sleeps or runs timers; the driver asks
// NextExpiryMs when to wake and then calls Expire.
//
// Expiry is bucketed by tick, as in ZooKeeper's ExpiryQueue. Every touch
// moves a session into the bucket
//
//	expiresAtMs = (nowMs + timeoutMs) / tickMs * tickMs + tickMs
//
// so a session lives for more than timeoutMs and at most timeoutMs+tickMs
// after its last touch, and all sessions of one bucket expire together.
// A touch costs O(1): buckets are a map from expiry time to a set of ids.
//
// Session ids and passwords follow ZooKeeper exactly (InitialID, Password),
// so clients, and servers of either implementation, agree on them.
package session
