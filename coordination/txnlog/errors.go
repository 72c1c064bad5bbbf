package txnlog

import (
	"errors"

	"keeper/internal/durablelog"
)

var (
	// ErrTorn means the log's last file ends part-way through a record (or
	// its header): the writer stopped mid-append, so the record was never
	// synced and never acknowledged. RepairTornTail (and Open) cut it off.
	ErrTorn = errors.New("txnlog: torn record at the end of the log")

	// ErrCorrupt means data the log may have acknowledged is damaged: a
	// checksum failure, an undecodable payload or zxids out of order, or
	// any damage before the end of the log. It is never repaired
	// automatically; an operator decides (for example by truncating the
	// log and letting the leader resend the rest).
	ErrCorrupt = errors.New("txnlog: corrupt log")

	// ErrClosed is returned by every call on a closed Log.
	ErrClosed = errors.New("txnlog: log closed")
)

// RecordError says where the log is damaged. errors.Is matches it against
// its Err: ErrTorn, ErrCorrupt, or (for an intact record of a type keeper
// cannot decode) txn.ErrUnknownType. It is the error type the bookie
// journal reports too, from the rules both logs share (package durablelog).
type RecordError = durablelog.RecordError
