// Package zkproto is ZooKeeper's client protocol: opcodes, result codes and
// their errors, the records clients and servers exchange, the session
// handshake and watch events. It encodes and decodes with package jute and
// does no I/O.
//
// A frame on the wire is a 4-byte big-endian length followed by that many
// bytes. After the handshake every request frame is
//
//	+-----------+-----------+---------------------------+
//	| xid int32 | op int32  | request record (by op)    |
//	+-----------+-----------+---------------------------+
//
// and every reply frame is
//
//	+-----------+------------+-----------+---------------------------+
//	| xid int32 | zxid int64 | err int32 | response record if err==0 |
//	+-----------+------------+-----------+---------------------------+
//
// The field layouts follow docs/zookeeper-protocol.md §0–§3, which
// names the Java classes they come from.
package zkproto
