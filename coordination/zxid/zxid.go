// Package zxid defines ZooKeeper transaction ids.
//
// A zxid is a 64-bit number: the high 32 bits are the epoch of the leader
// that proposed the transaction, the low 32 bits a counter that restarts at
// zero in each epoch. Zxids order every change the service ever made.
package zxid

import "fmt"

// ID is a zxid. It is signed because the wire and disk formats carry it as a
// jute long; valid zxids are never negative, and -1 is used on the wire to
// mean "none".
type ID int64

// Epoch is a Zab epoch: the high 32 bits of a zxid.
type Epoch uint32

// None is the zxid the protocol sends where no zxid applies.
const None ID = -1

// Make builds the zxid with the given epoch and counter.
func Make(e Epoch, counter uint32) ID { return ID(uint64(e)<<32 | uint64(counter)) }

// Epoch returns the epoch part of z.
func (z ID) Epoch() Epoch { return Epoch(uint64(z) >> 32) }

// Counter returns the counter part of z.
func (z ID) Counter() uint32 { return uint32(z) }

// String formats z as ZooKeeper's logs do: 0x followed by lowercase hex.
func (z ID) String() string { return fmt.Sprintf("0x%x", int64(z)) }
