package entrystore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Bounds on the ledger record's variable fields. A master key is a SHA-1
// digest (20 bytes) and an explicit LAC body is ledgerId, LAC and a digest
// of at most 20 bytes (docs/bookkeeper-protocol.md §6.3, §6.4); the bounds leave room and stop a
// damaged record from claiming megabytes.
const (
	maxMasterKeyBytes   = 256
	maxExplicitLACBytes = 1024
	ledgerRecordVersion = 1
)

// Ledger record flags.
const (
	flagFenced   = 1 << 0
	flagKeyBound = 1 << 1
	knownFlags   = flagFenced | flagKeyBound
)

// ledgerInfo is what the store knows about one ledger. The Store's mu
// guards it. The first three fields are persisted (the ledger record);
// the rest is rebuilt after a restart.
type ledgerInfo struct {
	fenced      bool
	masterKey   []byte // nil: not bound yet
	explicitLAC []byte // nil: none received

	lac        int64 // greatest LAC piggybacked on an added entry; valid if lacKnown
	lacKnown   bool
	lacDerived bool // lac accounts for the last stored entry (cold start)
}

// encodeLedgerRecord returns the persisted form of info:
//
//	version u8 = 1 | flags u8 | keyLen u16 | key | lacLen u16 | explicitLAC
func encodeLedgerRecord(info *ledgerInfo) []byte {
	var flags byte
	if info.fenced {
		flags |= flagFenced
	}
	if info.masterKey != nil {
		flags |= flagKeyBound
	}
	b := make([]byte, 0, 6+len(info.masterKey)+len(info.explicitLAC))
	b = append(b, ledgerRecordVersion, flags)
	b = binary.BigEndian.AppendUint16(b, uint16(len(info.masterKey)))
	b = append(b, info.masterKey...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(info.explicitLAC)))
	return append(b, info.explicitLAC...)
}

// decodeLedgerRecord parses a ledger record; damage is ErrCorrupt.
func decodeLedgerRecord(b []byte) (*ledgerInfo, error) {
	bad := func(why string) (*ledgerInfo, error) {
		return nil, fmt.Errorf("%w: ledger record: %s", ErrCorrupt, why)
	}
	if len(b) < 6 {
		return bad("short")
	}
	if b[0] != ledgerRecordVersion {
		return bad(fmt.Sprintf("unknown version %d", b[0]))
	}
	flags := b[1]
	if flags&^knownFlags != 0 {
		return bad(fmt.Sprintf("unknown flags %#x", flags))
	}
	info := &ledgerInfo{fenced: flags&flagFenced != 0}
	keyLen := int(binary.BigEndian.Uint16(b[2:4]))
	if keyLen > maxMasterKeyBytes || len(b) < 6+keyLen || (keyLen > 0 && flags&flagKeyBound == 0) {
		return bad(fmt.Sprintf("master key of %d bytes", keyLen))
	}
	if flags&flagKeyBound != 0 {
		info.masterKey = append([]byte{}, b[4:4+keyLen]...)
	}
	rest := b[4+keyLen:]
	lacLen := int(binary.BigEndian.Uint16(rest[0:2]))
	if lacLen > maxExplicitLACBytes || len(rest) != 2+lacLen {
		return bad(fmt.Sprintf("explicit LAC of %d bytes in %d", lacLen, len(rest)-2))
	}
	if lacLen > 0 {
		info.explicitLAC = bytes.Clone(rest[2:])
	}
	return info, nil
}

// loadLedgers reads every ledger record into s.ledgers.
func (s *Store) loadLedgers() error {
	lower := []byte{prefixLedger}
	iter, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: []byte{prefixLedger + 1}})
	if err != nil {
		return fmt.Errorf("entrystore: read ledger records: %w", err)
	}
	defer iter.Close()
	for ok := iter.First(); ok; ok = iter.Next() {
		k := iter.Key()
		if len(k) != 9 {
			return fmt.Errorf("%w: ledger record key %x", ErrCorrupt, k)
		}
		id := int64(binary.BigEndian.Uint64(k[1:9]))
		v, err := iter.ValueAndErr()
		if err != nil {
			return fmt.Errorf("entrystore: read ledger %d record: %w", id, err)
		}
		info, err := decodeLedgerRecord(v)
		if err != nil {
			return fmt.Errorf("ledger %d: %w", id, err)
		}
		s.ledgers[id] = info
	}
	if err := iter.Error(); err != nil {
		return fmt.Errorf("entrystore: read ledger records: %w", err)
	}
	return nil
}

// ledgerLocked returns ledger's info, creating it (to be persisted by the
// next Flush) if create is set. Caller holds mu.
func (s *Store) ledgerLocked(ledgerID int64, create bool) *ledgerInfo {
	info := s.ledgers[ledgerID]
	if info == nil && create {
		info = &ledgerInfo{}
		s.ledgers[ledgerID] = info
		s.dirty[ledgerID] = true
	}
	return info
}

// takeDirtyLocked returns the records changed since the last call, by
// ledger, and forgets them. Caller holds mu.
func (s *Store) takeDirtyLocked() map[int64][]byte {
	out := make(map[int64][]byte, len(s.dirty))
	for id := range s.dirty {
		if info := s.ledgers[id]; info != nil {
			out[id] = encodeLedgerRecord(info)
		}
	}
	clear(s.dirty)
	return out
}

// metaOp runs fn on ledger's info under mu, creating the ledger if needed,
// and marks it for the next Flush if fn reports a change.
func (s *Store) metaOp(ledgerID int64, fn func(*ledgerInfo) (changed bool, err error)) error {
	if ledgerID < 0 {
		return fmt.Errorf("entrystore: ledger id %d is negative", ledgerID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return err
	}
	changed, err := fn(s.ledgerLocked(ledgerID, true))
	if changed {
		s.dirty[ledgerID] = true
	}
	return err
}

// SetMasterKey binds ledger to key on first contact (creating the ledger)
// and afterwards checks that key matches, returning an error matching
// ErrMasterKeyMismatch if not. Like every metadata change it is persisted
// by the next Flush; until then the journal's master-key record is what
// makes it durable.
func (s *Store) SetMasterKey(ledgerID int64, key []byte) error {
	if len(key) > maxMasterKeyBytes {
		return fmt.Errorf("entrystore: master key of %d bytes (max %d)", len(key), maxMasterKeyBytes)
	}
	return s.metaOp(ledgerID, func(info *ledgerInfo) (bool, error) {
		if info.masterKey == nil {
			info.masterKey = append([]byte{}, key...)
			return true, nil
		}
		if !bytes.Equal(info.masterKey, key) {
			return false, fmt.Errorf("%w: ledger %d", ErrMasterKeyMismatch, ledgerID)
		}
		return false, nil
	})
}

// Fence sets ledger's fenced flag, creating the ledger if needed (a fence
// may reach a bookie before any entry does). The bookie must journal the
// fence and answer only once that record is durable (docs/bookkeeper-protocol.md §7.7).
func (s *Store) Fence(ledgerID int64) error {
	return s.metaOp(ledgerID, func(info *ledgerInfo) (bool, error) {
		changed := !info.fenced
		info.fenced = true
		return changed, nil
	})
}

// IsFenced reports whether ledger is fenced; an unknown ledger is not.
func (s *Store) IsFenced(ledgerID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := s.ledgers[ledgerID]
	return info != nil && info.fenced
}

// HasLedger reports whether the store knows ledger (has an entry, a
// master key, a fence or an explicit LAC for it).
func (s *Store) HasLedger(ledgerID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ledgers[ledgerID] != nil
}

// SetExplicitLAC stores the last explicit-LAC body a writer sent for ledger
// (docs/bookkeeper-protocol.md §6.4: ledgerId, LAC, digest), creating the ledger if needed. The
// store keeps the body opaque; the bookie checks it.
func (s *Store) SetExplicitLAC(ledgerID int64, body []byte) error {
	if len(body) == 0 || len(body) > maxExplicitLACBytes {
		return fmt.Errorf("entrystore: explicit LAC body of %d bytes (want 1..%d)", len(body), maxExplicitLACBytes)
	}
	return s.metaOp(ledgerID, func(info *ledgerInfo) (bool, error) {
		info.explicitLAC = append([]byte{}, body...)
		return true, nil
	})
}

// ExplicitLAC returns a copy of ledger's last explicit-LAC body, nil if
// none was received, or an error matching ErrNoLedger.
func (s *Store) ExplicitLAC(ledgerID int64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := s.ledgers[ledgerID]
	if info == nil {
		return nil, fmt.Errorf("%w: ledger %d", ErrNoLedger, ledgerID)
	}
	return bytes.Clone(info.explicitLAC), nil
}

// Ledgers returns the ledgers the store knows, sorted. GC's caller takes
// this snapshot before it lists the metadata store (see GC).
func (s *Store) Ledgers() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.ledgers))
}

// LAC returns the bookie's last-add-confirmed for ledger: the greatest LAC
// piggybacked on the entries it stored. After a restart it is derived from
// the ledger's last stored entry (docs/bookkeeper-protocol.md §7.4). It returns an error matching
// ErrNoLedger or ErrNoEntry (a ledger without entries) when the bookie has
// nothing to derive it from, and read errors as they are.
func (s *Store) LAC(ledgerID int64) (int64, error) {
	s.mu.Lock()
	info := s.ledgers[ledgerID]
	if info != nil && info.lacDerived {
		lac := info.lac
		s.mu.Unlock()
		return lac, nil
	}
	s.mu.Unlock()
	if info == nil {
		return 0, fmt.Errorf("%w: ledger %d", ErrNoLedger, ledgerID)
	}
	last, err := s.get(ledgerID, LastEntry, false)
	if err != nil {
		return 0, err
	}
	_, _, lac := entryIDs(last)
	s.mu.Lock()
	defer s.mu.Unlock()
	if info := s.ledgers[ledgerID]; info != nil {
		info.noteLAC(lac)
		info.lacDerived = true
		return info.lac, nil
	}
	return lac, nil
}

// noteLAC raises the ledger's LAC to lac.
func (info *ledgerInfo) noteLAC(lac int64) {
	if !info.lacKnown || lac > info.lac {
		info.lac, info.lacKnown = lac, true
	}
}
