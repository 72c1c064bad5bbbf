// Package jute implements the binary encoding that ZooKeeper uses for its
// client protocol, transaction log, snapshots and quorum traffic.
//
// Every value is written big-endian with no tags and no padding:
//
//	byte     1 byte
//	boolean  1 byte, 0 or 1 (any non-zero byte reads as true)
//	int      4 bytes, two's complement
//	long     8 bytes, two's complement
//	buffer   int length, then the bytes; length -1 is null, distinct from empty
//	ustring  as buffer, holding UTF-8 text; -1 is the null string
//	vector   int count (-1 = null), then the elements back to back
//	record   its fields in declaration order, concatenated
//
// An Encoder appends to a byte slice and cannot fail. A Decoder reads from a
// byte slice with a sticky error: after the first failure every read returns
// a zero value and Err reports the failure, so a record decoder can read all
// its fields and check once at the end. Every length read from the input is
// bounded, both by the configured maximum and by the bytes that remain, so
// corrupt input can never make a decoder allocate more than it was given.
package jute
