package ledger

import "errors"

// Sentinels for errors.Is. Errors from this package wrap them with detail.
var (
	// ErrOutcomeUnknown marks a failed add that was sent to at least one
	// bookie: the entry may or may not be in the ledger once it is closed
	// (docs/bookkeeper-protocol.md Appendix A, pitfall 7). Recovery can and does keep such
	// entries. It always comes together with the cause (ErrLedgerFenced,
	// ErrLedgerClosed, ErrNotEnoughBookies, ...). A failed add without it
	// was never sent.
	ErrOutcomeUnknown = errors.New("ledger: add outcome unknown")

	// ErrLedgerFenced means another client opened the ledger with recovery:
	// a bookie answered EFENCED, or the metadata is IN_RECOVERY. The writer
	// is finished.
	ErrLedgerFenced = errors.New("ledger: fenced by another client")

	// ErrLedgerClosed means the ledger is closed: by this writer's Close,
	// or by another client's recovery (then a writer's Close reports it when
	// the recorded end differs from its own).
	ErrLedgerClosed = errors.New("ledger: closed")

	// ErrNotEnoughBookies means placement found too few writable bookies
	// outside the ensemble. A writer that cannot replace a failed bookie is
	// finished, as in the Java client.
	ErrNotEnoughBookies = errors.New("ledger: not enough bookies")

	// ErrTooManyPending means the writer already has its maximum of
	// unacknowledged adds; the add was not sent. Retry after completions.
	ErrTooManyPending = errors.New("ledger: too many pending adds")

	// ErrReadBeyondLAC means a read asked for entries above the LAC (open
	// ledger) or the last entry (closed ledger). Such entries may be dropped
	// by recovery, so they are never served (docs/bookkeeper-protocol.md §3.2).
	ErrReadBeyondLAC = errors.New("ledger: read beyond last add confirmed")

	// ErrEntryUnavailable means every replica of an entry failed to return a
	// valid copy. The entry may still exist; a later read may succeed.
	ErrEntryUnavailable = errors.New("ledger: no replica returned the entry")

	// ErrEntryMissing means a quorum of bookies explicitly denied holding an
	// entry that the protocol says was acknowledged. More bookies lost data
	// than the ledger tolerates; recovery stops instead of truncating.
	ErrEntryMissing = errors.New("ledger: acknowledged entry denied by a coverage quorum")

	// ErrMetadataConflict means the metadata changed in a way this client
	// cannot reconcile (for example, another client rewrote the last
	// ensemble of an open ledger). The operation is abandoned.
	ErrMetadataConflict = errors.New("ledger: conflicting metadata update")
)
