package entrystore

import (
	"errors"
	"fmt"
)

var (
	// ErrNoLedger means the bookie has never stored anything for the
	// ledger (or has deleted it): no entry, no master key, no fence. It is
	// returned only when that is certain; a failed read is never reported
	// as ErrNoLedger (docs/bookkeeper-protocol.md Appendix A item 1).
	ErrNoLedger = errors.New("entrystore: no such ledger")

	// ErrNoEntry means the ledger is known but the bookie never stored the
	// entry (or the ledger has no entries, for a last-entry lookup). Like
	// ErrNoLedger it is an answer, never the result of a failed read.
	ErrNoEntry = errors.New("entrystore: no such entry")

	// ErrCorrupt means stored data failed its checks: a record checksum, an
	// impossible length, an entry whose header names another entry, an
	// index location outside its entry log. The data may have been
	// acknowledged, so it is an error, never absence.
	ErrCorrupt = errors.New("entrystore: corrupt data")

	// ErrTorn means the newest entry log of a directory ends part-way
	// through a record: a flush was interrupted before its fsync, so the
	// record was never indexed. Open cuts it off.
	ErrTorn = errors.New("entrystore: torn record at the end of an entry log")

	// ErrCacheFull means both halves of the write cache are full: the
	// caller must Flush (or wait for the flush in progress) and retry. It
	// is BookKeeper's throttled write.
	ErrCacheFull = errors.New("entrystore: write cache full")

	// ErrMasterKeyMismatch means a request carried a master key other than
	// the one the ledger is bound to (BookKeeper's EUA, unauthorized).
	ErrMasterKeyMismatch = errors.New("entrystore: master key mismatch")

	// ErrFenced means a normal add reached a fenced ledger
	// (AddEntry; BookKeeper's EFENCED).
	ErrFenced = errors.New("entrystore: ledger fenced")

	// ErrBadEntry means Add was given bytes that are not an entry in stored
	// form for the ledger and entry id it names.
	ErrBadEntry = errors.New("entrystore: malformed entry")

	// ErrClosed is returned by every call on a closed Store.
	ErrClosed = errors.New("entrystore: store closed")
)

// RecordError says where an entry log is damaged. errors.Is matches it
// against Err: ErrTorn or ErrCorrupt.
type RecordError struct {
	File   string // the entry log's path
	Offset int64  // where the damaged record (or the file header, 0) starts
	Reason string // what is wrong, for people
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%v: %s at offset %d: %s", e.Err, e.File, e.Offset, e.Reason)
}

// Unwrap returns Err.
func (e *RecordError) Unwrap() error { return e.Err }
