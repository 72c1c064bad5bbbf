package journal

import (
	"errors"

	"keeper/internal/durablelog"
)

var (
	// ErrTorn means the journal's last file ends part-way through a record
	// (or its header): the writer stopped mid-append, before a Sync covered
	// the record, so it was never acknowledged. Open cuts it off.
	ErrTorn = errors.New("journal: torn record at the end of the journal")

	// ErrCorrupt means data the journal may have acknowledged is damaged or
	// missing: a checksum failure, a malformed record, damage before the end
	// of the journal, or a file the log mark names that is not there. It is
	// never repaired automatically; an operator decides.
	ErrCorrupt = errors.New("journal: corrupt journal")

	// ErrClosed is returned by every call on a closed Journal.
	ErrClosed = errors.New("journal: closed")
)

// RecordError says where a journal is damaged. errors.Is matches it
// against its Err: ErrTorn or ErrCorrupt. It is the error type the txn
// log reports too, from the rules both logs share (package durablelog).
type RecordError = durablelog.RecordError
