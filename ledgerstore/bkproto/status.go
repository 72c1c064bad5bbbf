package bkproto

import (
	"errors"
	"fmt"
)

// Error is a request outcome carried as a StatusCode: the bookie returns one
// for an expected failure (no such entry, fenced, unauthorized) and turns it
// into the status of its response with StatusOf; a client turns a response's
// status back into one with ErrorOf. Branch on it with errors.Is and the
// sentinels below.
type Error struct {
	Status StatusCode
	Detail string // for messages and logs; empty in the sentinels
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return "bookie: " + e.Status.String()
	}
	return "bookie: " + e.Status.String() + ": " + e.Detail
}

// Is lets errors.Is(err, ErrFenced) match any *Error with that status,
// whatever its detail.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Detail == "" && t.Status == e.Status
}

// Errorf returns an *Error with the given status and a formatted detail.
func Errorf(status StatusCode, format string, args ...any) *Error {
	return &Error{Status: status, Detail: fmt.Sprintf(format, args...)}
}

// Sentinels for errors.Is, one per failure status. Return Errorf(status, ...)
// to add a detail.
var (
	// ErrNoLedger (ENOLEDGER): the bookie has no such ledger. In recovery it
	// counts as an explicit negative, so a bookie must send it only when it
	// truly holds nothing for the ledger.
	ErrNoLedger = &Error{Status: StatusCode_ENOLEDGER}
	// ErrNoEntry (ENOENTRY): the bookie never stored the entry. The same
	// care applies as for ErrNoLedger (docs/bookkeeper-protocol.md Appendix A, pitfall 1).
	ErrNoEntry = &Error{Status: StatusCode_ENOENTRY}
	// ErrBadRequest (EBADREQ): the request is malformed or unsupported.
	ErrBadRequest = &Error{Status: StatusCode_EBADREQ}
	// ErrIO (EIO): the bookie failed to read or write; the outcome is
	// unknown, never "absent".
	ErrIO = &Error{Status: StatusCode_EIO}
	// ErrUnauthorized (EUA): the master key does not match the one bound to
	// the ledger, or a fence came without one.
	ErrUnauthorized = &Error{Status: StatusCode_EUA}
	// ErrBadVersion (EBADVERSION): the header's protocol version is not 3.
	ErrBadVersion = &Error{Status: StatusCode_EBADVERSION}
	// ErrFenced (EFENCED): the ledger is fenced and the add was not a
	// recovery add.
	ErrFenced = &Error{Status: StatusCode_EFENCED}
	// ErrReadOnly (EREADONLY): the bookie is read-only and refuses writes.
	ErrReadOnly = &Error{Status: StatusCode_EREADONLY}
	// ErrTooManyRequests (ETOOMANYREQUESTS): the bookie is overloaded and
	// rejected the request without trying it.
	ErrTooManyRequests = &Error{Status: StatusCode_ETOOMANYREQUESTS}
	// ErrUnknownLedgerState (EUNKNOWNLEDGERSTATE): the bookie may have lost
	// data for the ledger (it is in limbo), so it can answer neither "have"
	// nor "never had".
	ErrUnknownLedgerState = &Error{Status: StatusCode_EUNKNOWNLEDGERSTATE}
)

// sentinels maps each failure status to its sentinel.
var sentinels = map[StatusCode]*Error{
	StatusCode_ENOLEDGER:           ErrNoLedger,
	StatusCode_ENOENTRY:            ErrNoEntry,
	StatusCode_EBADREQ:             ErrBadRequest,
	StatusCode_EIO:                 ErrIO,
	StatusCode_EUA:                 ErrUnauthorized,
	StatusCode_EBADVERSION:         ErrBadVersion,
	StatusCode_EFENCED:             ErrFenced,
	StatusCode_EREADONLY:           ErrReadOnly,
	StatusCode_ETOOMANYREQUESTS:    ErrTooManyRequests,
	StatusCode_EUNKNOWNLEDGERSTATE: ErrUnknownLedgerState,
}

// KnownStatus reports whether s is one of the StatusCode values the
// protocol defines. Go's protobuf runtime keeps unknown enum numbers as
// they are, so decoded messages can carry others.
func KnownStatus(s StatusCode) bool {
	_, ok := StatusCode_name[int32(s)]
	return ok
}

// StatusOf returns the status to send for err: EOK for nil, the status of
// an *Error, and EIO for anything else. An unexpected failure is reported
// as "outcome unknown", never as an absence (docs/bookkeeper-protocol.md Appendix A, pitfall 1).
func StatusOf(err error) StatusCode {
	if err == nil {
		return StatusCode_EOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return StatusCode_EIO
}

// ErrorOf returns the error a client reports for a received status: nil for
// EOK, the sentinel for a known failure, and a new *Error for a number the
// protocol does not define.
func ErrorOf(status StatusCode) error {
	if status == StatusCode_EOK {
		return nil
	}
	if e, ok := sentinels[status]; ok {
		return e
	}
	return &Error{Status: status}
}
