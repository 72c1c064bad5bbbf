// Package watch keeps the server's watch registrations and works out which
// connections a change notifies (docs/zookeeper-protocol.md §3).
//
// There are two tables, each mapping a path to the connections watching it
// with a set of modes per (path, connection):
//
//	table  filled by                                 modes
//	data   getData, exists, setWatches data/exist,   standard, persistent,
//	       addWatch persistent and recursive         recursive
//	child  getChildren(2), setWatches child,         standard, persistent
//	       addWatch persistent
//
// Standard watches are one-shot; persistent and recursive ones stay until
// removed or until the connection goes. A lookup in the data table also
// walks up through every ancestor of the path, where only recursive
// watches match; a count of recursive watches makes that walk free when
// there are none. Trigger returns each notified connection once, sorted,
// so the order of events is deterministic.
//
// Delivery is the caller's business, including the 3.8.4+/3.9.2+ rule that
// a connection without READ on the node gets no event (its one-shot watch
// is consumed all the same, which Trigger has already done).
//
// The Manager is pure and not safe for concurrent use: the server's apply
// loop owns it.
package watch
