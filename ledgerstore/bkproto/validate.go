package bkproto

import (
	"encoding/binary"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// MasterKeyBytes is the length of a master key (a SHA-1 digest).
const MasterKeyBytes = 20

// LastAddConfirmed is the entry id that asks a bookie for the last entry it
// holds (a LAC read), and the LAC of a ledger with no confirmed entry.
const LastAddConfirmed int64 = -1

// WriteFlagDeferredSync is the AddRequest.writeFlags bit that lets a bookie
// acknowledge before its journal syncs (BP-14); FORCE_LEDGER syncs later.
const WriteFlagDeferredSync int32 = 0x1

// knownWriteFlags is every writeFlags bit the protocol defines.
const knownWriteFlags = WriteFlagDeferredSync

// ValidateRequest checks that a Request is well formed for its operation,
// beyond what proto2 `required` already enforces. It returns nil or an
// *Error whose status is the one a Java bookie answers with:
//
//   - EBADVERSION if the header's version is not 3;
//   - EBADREQ for an operation with no request slot (RANGE_*, BATCH_READ_ENTRY
//     or an unknown number), a missing sub-request, a sub-request in another
//     operation's slot, or bad fields: negative ledger ids, entry ids below
//     -1 (below 0 for adds), unknown flags or write-flag bits, a master key
//     that is not 20 bytes, an entry or LAC body too short for its header or
//     naming another ledger or entry, or a long-poll timeout without
//     previousLAC;
//   - EUA for a fencing read without a master key.
func ValidateRequest(req *Request) error {
	h := req.GetHeader()
	if h == nil {
		return Errorf(StatusCode_EBADREQ, "request without header")
	}
	if h.GetVersion() != ProtocolVersionV3 {
		return Errorf(StatusCode_EBADVERSION, "protocol version %d", int32(h.GetVersion()))
	}
	op := h.GetOperation()
	if err := checkSlots(req.ProtoReflect(), op); err != nil {
		return err
	}
	switch op {
	case OperationType_READ_ENTRY:
		return validateRead(req.ReadRequest)
	case OperationType_ADD_ENTRY:
		return validateAdd(req.AddRequest)
	case OperationType_WRITE_LAC:
		return validateWriteLac(req.WriteLacRequest)
	case OperationType_READ_LAC:
		return checkLedgerID(req.ReadLacRequest.GetLedgerId())
	case OperationType_FORCE_LEDGER:
		return checkLedgerID(req.ForceLedgerRequest.GetLedgerId())
	case OperationType_GET_LIST_OF_ENTRIES_OF_LEDGER:
		return checkLedgerID(req.GetListOfEntriesOfLedgerRequest.GetLedgerId())
	}
	return nil // AUTH, START_TLS, GET_BOOKIE_INFO: proto2 checks suffice
}

// ValidateResponse checks that a Response is well formed: version 3, a
// status the protocol defines, no sub-response outside the operation's slot,
// and, when the status is EOK, the operation's sub-response present with a
// defined status of its own. It returns nil or an *Error (EBADVERSION or
// EBADREQ) describing the fault.
func ValidateResponse(resp *Response) error {
	h := resp.GetHeader()
	if h == nil {
		return Errorf(StatusCode_EBADREQ, "response without header")
	}
	if h.GetVersion() != ProtocolVersionV3 {
		return Errorf(StatusCode_EBADVERSION, "protocol version %d", int32(h.GetVersion()))
	}
	if !KnownStatus(resp.GetStatus()) {
		return Errorf(StatusCode_EBADREQ, "unknown status %d", int32(resp.GetStatus()))
	}
	op := h.GetOperation()
	m := resp.ProtoReflect()
	if resp.GetStatus() == StatusCode_EOK {
		if err := checkSlots(m, op); err != nil {
			return err
		}
	} else if count, _ := setSlots(m); count > 0 {
		if err := checkSlots(m, op); err != nil {
			return err // a failed request may carry its own sub-response, and no other
		}
	}
	if s := ResponseStatus(resp); !KnownStatus(s) {
		return Errorf(StatusCode_EBADREQ, "%v response with unknown status %d", op, int32(s))
	}
	return nil
}

// slotNumber returns the field number of op's sub-request slot in Request,
// which is also its sub-response slot in Response.
func slotNumber(op OperationType) (protoreflect.FieldNumber, bool) {
	switch op {
	case OperationType_READ_ENTRY:
		return 100, true
	case OperationType_ADD_ENTRY:
		return 101, true
	case OperationType_AUTH:
		return 102, true
	case OperationType_WRITE_LAC:
		return 103, true
	case OperationType_READ_LAC:
		return 104, true
	case OperationType_GET_BOOKIE_INFO:
		return 105, true
	case OperationType_START_TLS:
		return 106, true
	case OperationType_FORCE_LEDGER:
		return 107, true
	case OperationType_GET_LIST_OF_ENTRIES_OF_LEDGER:
		return 108, true
	}
	return 0, false
}

// setSlots counts the sub-message slots (fields 100..199) set in m and
// returns the number of one of them.
func setSlots(m protoreflect.Message) (count int, last protoreflect.FieldNumber) {
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if n := fd.Number(); n >= 100 && n < 200 {
			count++
			last = n
		}
		return true
	})
	return count, last
}

// checkSlots requires op to have a slot, and that slot to be the only one
// set in m.
func checkSlots(m protoreflect.Message, op OperationType) error {
	want, ok := slotNumber(op)
	if !ok {
		return Errorf(StatusCode_EBADREQ, "unsupported operation %v", op)
	}
	switch count, got := setSlots(m); {
	case count == 0:
		return Errorf(StatusCode_EBADREQ, "%v without its sub-message", op)
	case count > 1 || got != want:
		return Errorf(StatusCode_EBADREQ, "%v with %d sub-messages (field %d set, want only %d)", op, count, got, want)
	}
	return nil
}

func validateRead(r *ReadRequest) error {
	if err := checkLedgerID(r.GetLedgerId()); err != nil {
		return err
	}
	if e := r.GetEntryId(); e < LastAddConfirmed {
		return Errorf(StatusCode_EBADREQ, "read of entry %d", e)
	}
	if r.Flag != nil {
		switch f := r.GetFlag(); f {
		case ReadRequest_FENCE_LEDGER:
			if r.MasterKey == nil {
				return Errorf(StatusCode_EUA, "fencing read of ledger %d without master key", r.GetLedgerId())
			}
		case ReadRequest_ENTRY_PIGGYBACK:
		default:
			return Errorf(StatusCode_EBADREQ, "unknown read flag %d", int32(f))
		}
	}
	if r.MasterKey != nil && len(r.MasterKey) != MasterKeyBytes {
		return Errorf(StatusCode_EBADREQ, "master key of %d bytes", len(r.MasterKey))
	}
	if r.PreviousLAC != nil && r.GetPreviousLAC() < LastAddConfirmed {
		return Errorf(StatusCode_EBADREQ, "previousLAC %d", r.GetPreviousLAC())
	}
	if r.TimeOut != nil {
		if r.PreviousLAC == nil {
			return Errorf(StatusCode_EBADREQ, "long-poll timeout without previousLAC")
		}
		if r.GetTimeOut() < 0 {
			return Errorf(StatusCode_EBADREQ, "long-poll timeout %d ms", r.GetTimeOut())
		}
	}
	return nil
}

func validateAdd(r *AddRequest) error {
	ledgerID, entryID := r.GetLedgerId(), r.GetEntryId()
	if err := checkLedgerID(ledgerID); err != nil {
		return err
	}
	if entryID < 0 {
		return Errorf(StatusCode_EBADREQ, "add of entry %d", entryID)
	}
	if r.Flag != nil && r.GetFlag() != AddRequest_RECOVERY_ADD {
		return Errorf(StatusCode_EBADREQ, "unknown add flag %d", int32(r.GetFlag()))
	}
	if f := r.GetWriteFlags(); f&^knownWriteFlags != 0 {
		return Errorf(StatusCode_EBADREQ, "unknown write flags %#x", f)
	}
	if len(r.MasterKey) != MasterKeyBytes {
		return Errorf(StatusCode_EBADREQ, "master key of %d bytes", len(r.MasterKey))
	}
	hdr, err := ParseEntryHeader(r.Body)
	if err != nil {
		return Errorf(StatusCode_EBADREQ, "add body: %v", err)
	}
	if hdr.LedgerID != ledgerID || hdr.EntryID != entryID {
		return Errorf(StatusCode_EBADREQ, "add of %d/%d with a body for %d/%d",
			ledgerID, entryID, hdr.LedgerID, hdr.EntryID)
	}
	return nil
}

func validateWriteLac(r *WriteLacRequest) error {
	ledgerID, lac := r.GetLedgerId(), r.GetLac()
	if err := checkLedgerID(ledgerID); err != nil {
		return err
	}
	if lac < LastAddConfirmed {
		return Errorf(StatusCode_EBADREQ, "explicit LAC %d", lac)
	}
	if len(r.MasterKey) != MasterKeyBytes {
		return Errorf(StatusCode_EBADREQ, "master key of %d bytes", len(r.MasterKey))
	}
	if len(r.Body) < LACHeaderBytes {
		return Errorf(StatusCode_EBADREQ, "LAC body of %d bytes", len(r.Body))
	}
	bodyLedger := int64(binary.BigEndian.Uint64(r.Body[0:8]))
	bodyLAC := int64(binary.BigEndian.Uint64(r.Body[8:16]))
	if bodyLedger != ledgerID || bodyLAC != lac {
		return Errorf(StatusCode_EBADREQ, "LAC %d of ledger %d with a body for LAC %d of ledger %d",
			lac, ledgerID, bodyLAC, bodyLedger)
	}
	return nil
}

// checkLedgerID rejects negative ledger ids: ids are 63-bit, the sign bit
// is never set (docs/bookkeeper-protocol.md §5.4).
func checkLedgerID(id int64) error {
	if id < 0 {
		return Errorf(StatusCode_EBADREQ, "ledger id %d", id)
	}
	return nil
}
