package journal

import (
	"errors"
	"fmt"
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
// against its Err: ErrTorn or ErrCorrupt.
type RecordError struct {
	File   string // the journal file's path
	Offset int64  // where the damaged record (or the file header, 0) starts
	Reason string // what is wrong, for people
	Err    error
}

// Error says what is wrong and where.
func (e *RecordError) Error() string {
	return fmt.Sprintf("%v: %s at offset %d: %s", e.Err, e.File, e.Offset, e.Reason)
}

// Unwrap returns Err.
func (e *RecordError) Unwrap() error { return e.Err }
