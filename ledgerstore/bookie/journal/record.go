package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"keeper/internal/invariants"
)

// Kind says what a record is, from its entry id.
type Kind uint8

// The kinds of record.
const (
	KindEntry       Kind = iota + 1 // entry id ≥ 0: an entry in its stored form
	KindMasterKey                   // EntryIDMasterKey
	KindFence                       // EntryIDFence
	KindExplicitLAC                 // EntryIDExplicitLAC
	KindUnknown                     // any other negative entry id; replay skips it
)

var kindNames = [...]string{"invalid", "entry", "master-key", "fence", "explicit-lac", "unknown"}

// String names the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Record is one journal record: its body exactly as journaled, without the
// length (and checksum) in front. Every body starts with ledgerId and
// entryId (int64 each); what follows depends on the kind:
//
//	entry         the rest of the entry's stored form (LAC, length, digest, payload)
//	master key    int32 keyLen | key
//	fence         nothing
//	explicit LAC  int32 lacLen | LAC body
//
// Build records with the constructors or DecodeRecord; the zero Record is
// invalid. A Record does not own its body: one from DecodeRecord or Replay
// aliases the caller's or the reader's buffer.
type Record struct {
	body []byte
	// sum, if summed, is the CRC-32C of body, computed by whoever built
	// the record (NewEntryRecordSummed), so that a FormatV7 Append need
	// not read the body a second time.
	sum    uint32
	summed bool
}

// NewEntryRecord returns the record of an entry, given the entry's stored
// form (docs/bookkeeper-protocol.md §6.4), which begins with ledgerId and entryId ≥ 0. The record
// aliases stored.
func NewEntryRecord(stored []byte) (Record, error) {
	r, err := DecodeRecord(stored)
	if err != nil {
		return Record{}, err
	}
	if r.Kind() != KindEntry {
		return Record{}, fmt.Errorf("journal: entry record with entry id %d, want ≥ 0", r.EntryID())
	}
	return r, nil
}

// NewEntryRecordSummed is NewEntryRecord for a caller that already holds
// the CRC-32C (Castagnoli) of stored, as the entry store computes it for
// its own record: a FormatV7 journal then writes sum instead of
// computing it again. A wrong sum makes a record replay refuses as
// corrupt; builds with the invariants tag check it.
func NewEntryRecordSummed(stored []byte, sum uint32) (Record, error) {
	r, err := NewEntryRecord(stored)
	if err != nil {
		return Record{}, err
	}
	if invariants.Enabled {
		got := crc32.Checksum(stored, castagnoli)
		invariants.Assertf(got == sum, "journal: entry record given checksum %#x, body sums to %#x", sum, got)
	}
	r.sum, r.summed = sum, true
	return r, nil
}

// NewMasterKeyRecord returns the record that restores ledgerID's master key
// on replay.
func NewMasterKeyRecord(ledgerID int64, key []byte) Record {
	return Record{body: appendSpecial(nil, ledgerID, EntryIDMasterKey, key)}
}

// NewFenceRecord returns the record that restores ledgerID's fenced flag on
// replay.
func NewFenceRecord(ledgerID int64) Record {
	return Record{body: appendIDs(make([]byte, 0, IDsBytes), ledgerID, EntryIDFence)}
}

// appendIDs appends the ledgerId and entryId every record body starts with.
func appendIDs(b []byte, ledgerID, entryID int64) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(ledgerID))
	return binary.BigEndian.AppendUint64(b, uint64(entryID))
}

// NewExplicitLACRecord returns the record that restores ledgerID's explicit
// LAC on replay; lacBody is the LAC body the client sent (ledgerId, lac,
// digest).
func NewExplicitLACRecord(ledgerID int64, lacBody []byte) Record {
	return Record{body: appendSpecial(nil, ledgerID, EntryIDExplicitLAC, lacBody)}
}

// appendSpecial appends the body of a special record that carries a value
// with an int32 length.
func appendSpecial(b []byte, ledgerID, entryID int64, value []byte) []byte {
	b = appendIDs(b, ledgerID, entryID)
	b = binary.BigEndian.AppendUint32(b, uint32(len(value)))
	return append(b, value...)
}

// errShortBody and the other decode errors describe bodies that no writer
// produces; the reader turns them into ErrTorn or ErrCorrupt.
var errShortBody = errors.New("journal: record body shorter than ledgerId and entryId")

// DecodeRecord checks body, a record body as journaled, and returns it as a
// Record aliasing body. A master-key or explicit-LAC record must hold
// exactly the value its length announces. Unknown special records are
// accepted as they are (KindUnknown), as BookKeeper skips them.
func DecodeRecord(body []byte) (Record, error) {
	if len(body) < IDsBytes {
		return Record{}, fmt.Errorf("%w: %d bytes", errShortBody, len(body))
	}
	r := Record{body: body}
	switch r.Kind() {
	case KindMasterKey, KindExplicitLAC:
		if len(body) < IDsBytes+4 {
			return Record{}, fmt.Errorf("journal: %v record of %d bytes has no value length", r.Kind(), len(body))
		}
		n := int64(int32(binary.BigEndian.Uint32(body[IDsBytes:])))
		if want := int64(len(body) - IDsBytes - 4); n != want {
			return Record{}, fmt.Errorf("journal: %v record announces %d value bytes and holds %d", r.Kind(), n, want)
		}
	case KindFence:
		if len(body) != IDsBytes {
			return Record{}, fmt.Errorf("journal: fence record of %d bytes, want %d", len(body), IDsBytes)
		}
	}
	return r, nil
}

// LedgerID returns the ledger the record belongs to. Like EntryID, it
// panics on the zero Record.
func (r Record) LedgerID() int64 { return int64(binary.BigEndian.Uint64(r.body[0:8])) }

// EntryID returns the entry id: ≥ 0 for an entry, negative for a special
// record.
func (r Record) EntryID() int64 { return int64(binary.BigEndian.Uint64(r.body[8:16])) }

// Kind returns what the record is.
func (r Record) Kind() Kind {
	if len(r.body) < IDsBytes {
		return 0
	}
	switch id := r.EntryID(); {
	case id >= 0:
		return KindEntry
	case id == EntryIDMasterKey:
		return KindMasterKey
	case id == EntryIDFence:
		return KindFence
	case id == EntryIDExplicitLAC:
		return KindExplicitLAC
	}
	return KindUnknown
}

// Body returns the record body as journaled. For an entry that is the
// entry's whole stored form, which is what replay re-inserts into ledger
// storage.
func (r Record) Body() []byte { return r.body }

// MasterKey returns the key of a master-key record, or nil.
func (r Record) MasterKey() []byte { return r.value(KindMasterKey) }

// ExplicitLAC returns the LAC body of an explicit-LAC record, or nil.
func (r Record) ExplicitLAC() []byte { return r.value(KindExplicitLAC) }

func (r Record) value(k Kind) []byte {
	if r.Kind() != k {
		return nil
	}
	return r.body[IDsBytes+4:]
}

// String describes the record for logs and test failures.
func (r Record) String() string {
	if r.Kind() == 0 {
		return "invalid record"
	}
	return fmt.Sprintf("%v ledger=%d entry=%d bytes=%d", r.Kind(), r.LedgerID(), r.EntryID(), len(r.body))
}
