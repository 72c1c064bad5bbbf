package bkproto

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

// TestStatusCodes pins the wire numbers and names of every status
// (BookkeeperProtocol.proto's StatusCode).
func TestStatusCodes(t *testing.T) {
	for _, tc := range []struct {
		code     StatusCode
		number   int32
		name     string
		sentinel error
	}{
		{StatusCode_EOK, 0, "EOK", nil},
		{StatusCode_ENOLEDGER, 402, "ENOLEDGER", ErrNoLedger},
		{StatusCode_ENOENTRY, 403, "ENOENTRY", ErrNoEntry},
		{StatusCode_EBADREQ, 404, "EBADREQ", ErrBadRequest},
		{StatusCode_EIO, 501, "EIO", ErrIO},
		{StatusCode_EUA, 502, "EUA", ErrUnauthorized},
		{StatusCode_EBADVERSION, 503, "EBADVERSION", ErrBadVersion},
		{StatusCode_EFENCED, 504, "EFENCED", ErrFenced},
		{StatusCode_EREADONLY, 505, "EREADONLY", ErrReadOnly},
		{StatusCode_ETOOMANYREQUESTS, 506, "ETOOMANYREQUESTS", ErrTooManyRequests},
		{StatusCode_EUNKNOWNLEDGERSTATE, 507, "EUNKNOWNLEDGERSTATE", ErrUnknownLedgerState},
	} {
		if int32(tc.code) != tc.number || tc.code.String() != tc.name {
			t.Errorf("%v = %d, want %s = %d", tc.code, int32(tc.code), tc.name, tc.number)
		}
		if !KnownStatus(tc.code) {
			t.Errorf("%v not known", tc.code)
		}
		err := ErrorOf(tc.code)
		if err != tc.sentinel {
			t.Errorf("ErrorOf(%v) = %v, want %v", tc.code, err, tc.sentinel)
		}
		if StatusOf(err) != tc.code {
			t.Errorf("StatusOf(ErrorOf(%v)) = %v", tc.code, StatusOf(err))
		}
		if tc.sentinel != nil {
			wrapped := fmt.Errorf("reading ledger 3: %w", Errorf(tc.code, "entry %d", 4))
			if !errors.Is(wrapped, tc.sentinel) || StatusOf(wrapped) != tc.code {
				t.Errorf("%v: wrapped error %v not matched", tc.code, wrapped)
			}
		}
	}
}

func TestStatusOfUnexpected(t *testing.T) {
	if got := StatusOf(io.ErrUnexpectedEOF); got != StatusCode_EIO {
		t.Fatalf("StatusOf(non-status error) = %v, want EIO (never an absence)", got)
	}
	if got := StatusOf(nil); got != StatusCode_EOK {
		t.Fatalf("StatusOf(nil) = %v", got)
	}
	unknown := ErrorOf(StatusCode(999))
	if StatusOf(unknown) != 999 || KnownStatus(999) {
		t.Fatalf("unknown status: %v", unknown)
	}
	if errors.Is(Errorf(StatusCode_ENOENTRY, "x"), ErrNoLedger) {
		t.Fatal("ENOENTRY matched ErrNoLedger")
	}
	if errors.Is(ErrNoEntry, Errorf(StatusCode_ENOENTRY, "detail")) {
		t.Fatal("a target with a detail must not match as a sentinel")
	}
	if got := Errorf(StatusCode_EFENCED, "ledger %d", 7).Error(); got != "bookie: EFENCED: ledger 7" {
		t.Fatalf("Error() = %q", got)
	}
	if got := ErrFenced.Error(); got != "bookie: EFENCED" {
		t.Fatalf("Error() = %q", got)
	}
}
