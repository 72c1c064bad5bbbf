package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"keeper/ledgerstore/bkproto"
)

// ErrMalformed means stored or proposed metadata breaks the format's rules:
// bytes that do not decode, or a LedgerMetadata that Validate rejects.
var ErrMalformed = errors.New("metadata: malformed ledger metadata")

// The metadata format versions (docs/bookkeeper-protocol.md §5.1). Encode always writes
// FormatVersion3; Decode reads all three.
const (
	// FormatVersion1 is the line-oriented text layout of BookKeeper 4.0-4.1.
	FormatVersion1 = 1
	// FormatVersion2 is LedgerMetadataFormat in protobuf text format
	// (BookKeeper 4.2-4.8).
	FormatVersion2 = 2
	// FormatVersion3 is LedgerMetadataFormat in protobuf binary,
	// varint-length-delimited (BookKeeper 4.9 and later).
	FormatVersion3 = 3
)

// State is a ledger's place in its life cycle (docs/bookkeeper-protocol.md §1.2). The values are
// those stored in LedgerMetadataFormat.state.
type State int32

// The ledger states. No transition leads back to StateOpen.
const (
	StateOpen       = State(bkproto.LedgerMetadataFormat_OPEN)
	StateInRecovery = State(bkproto.LedgerMetadataFormat_IN_RECOVERY)
	StateClosed     = State(bkproto.LedgerMetadataFormat_CLOSED)
)

// String returns the state's name as the protobuf enum spells it.
func (s State) String() string {
	switch s {
	case StateOpen:
		return "OPEN"
	case StateInRecovery:
		return "IN_RECOVERY"
	case StateClosed:
		return "CLOSED"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// NoEntry is the entry id of "no entry": the LastEntryID of an empty
// closed ledger, and of every ledger that is not closed.
const NoEntry int64 = -1

// BookieID names a bookie: "host:port", or since BP-41 an opaque string.
// It is the name of the bookie's registration znode and what ensembles list.
type BookieID string

// Validate checks id against BookKeeper's rule (BookieId.validateBookieId):
// one or more of the characters a-z, 0-9, ':' through '_' (which takes in
// A-Z and ";<=>?@[\]^"), '.' and '-', and not "readonly" in any case,
// which names the read-only registration directory.
func (id BookieID) Validate() error {
	if id == "" || strings.EqualFold(string(id), readOnlyNode) {
		return fmt.Errorf("metadata: invalid bookie id %q", string(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= ':' && c <= '_' || c == '.' || c == '-'
		if !ok {
			return fmt.Errorf("metadata: invalid bookie id %q: byte %#x at %d", string(id), c, i)
		}
	}
	return nil
}

// Segment is one ensemble of a ledger and the first entry it serves. It
// serves every entry from FirstEntryID up to the next segment's
// FirstEntryID (docs/bookkeeper-protocol.md §1.1).
type Segment struct {
	FirstEntryID int64
	// Ensemble lists the bookies by position; entry e goes to positions
	// (e+k) mod E for k in [0, Qw).
	Ensemble []BookieID
}

// LedgerMetadata is one ledger's metadata (docs/bookkeeper-protocol.md §5.1), the Go form of
// BookKeeper's LedgerMetadataFormat. The ledger id is not part of it: it is
// the znode's path.
//
// A LedgerMetadata holds slices and a map; Clone it before changing a copy
// that another goroutine may read.
type LedgerMetadata struct {
	// FormatVersion is the format the metadata was decoded from (1, 2 or 3;
	// 0 for metadata built in memory). Encode always writes version 3.
	FormatVersion int

	EnsembleSize    int // E
	WriteQuorumSize int // Qw; stored in the field named quorumSize
	AckQuorumSize   int // Qa

	State State
	// LastEntryID is the closed ledger's last entry (NoEntry if it is
	// empty). It is NoEntry while the ledger is not closed.
	LastEntryID int64
	// LengthBytes is the closed ledger's total payload. It is 0 while the
	// ledger is not closed.
	LengthBytes int64

	// Ensembles is the sorted map firstEntryId -> ensemble: FirstEntryID
	// strictly increases along the slice, and every ensemble has
	// EnsembleSize bookies.
	Ensembles []Segment

	// DigestType is the entry digest. Zero means the metadata stores no
	// digest type and no password, which only format 1 metadata does.
	DigestType bkproto.DigestType
	// Password is the ledger password, stored in clear. Empty is allowed.
	Password []byte

	// CreationTimeMs is the ledger's creation time in milliseconds since the
	// epoch. StoreCreationTime says whether the metadata itself records it;
	// when it does not, Store.Read fills CreationTimeMs from the znode's
	// ctime, as BookKeeper does.
	CreationTimeMs    int64
	StoreCreationTime bool

	// CustomMetadata holds the application's tags. It is nil when empty.
	CustomMetadata map[string][]byte

	// CToken is the creator's random token (0 if none), which lets a create
	// retried after a lost reply recognise its own znode.
	CToken int64
}

// NewOpen returns the metadata of a new OPEN ledger whose first ensemble
// serves from entry 0. E is len(ensemble).
func NewOpen(ensemble []BookieID, writeQuorum, ackQuorum int, digest bkproto.DigestType, password []byte) LedgerMetadata {
	return LedgerMetadata{
		EnsembleSize:    len(ensemble),
		WriteQuorumSize: writeQuorum,
		AckQuorumSize:   ackQuorum,
		State:           StateOpen,
		LastEntryID:     NoEntry,
		Ensembles:       []Segment{{FirstEntryID: 0, Ensemble: slices.Clone(ensemble)}},
		DigestType:      digest,
		Password:        slices.Clone(password),
	}
}

// Clone returns a deep copy of md.
func (md LedgerMetadata) Clone() LedgerMetadata {
	c := md
	c.Ensembles = make([]Segment, len(md.Ensembles))
	for i, s := range md.Ensembles {
		c.Ensembles[i] = Segment{FirstEntryID: s.FirstEntryID, Ensemble: slices.Clone(s.Ensemble)}
	}
	c.Password = slices.Clone(md.Password)
	if md.CustomMetadata != nil {
		c.CustomMetadata = make(map[string][]byte, len(md.CustomMetadata))
		for k, v := range md.CustomMetadata {
			c.CustomMetadata[k] = slices.Clone(v)
		}
	}
	return c
}

// Equal reports whether md and o hold the same metadata. FormatVersion is
// ignored: it says where md came from, not what it is.
func (md LedgerMetadata) Equal(o LedgerMetadata) bool {
	return md.EnsembleSize == o.EnsembleSize && md.WriteQuorumSize == o.WriteQuorumSize &&
		md.AckQuorumSize == o.AckQuorumSize && md.State == o.State &&
		md.LastEntryID == o.LastEntryID && md.LengthBytes == o.LengthBytes &&
		slices.EqualFunc(md.Ensembles, o.Ensembles, segmentEqual) &&
		md.DigestType == o.DigestType && bytes.Equal(md.Password, o.Password) &&
		md.CreationTimeMs == o.CreationTimeMs && md.StoreCreationTime == o.StoreCreationTime &&
		maps.EqualFunc(md.CustomMetadata, o.CustomMetadata, bytes.Equal) && md.CToken == o.CToken
}

func segmentEqual(a, b Segment) bool {
	return a.FirstEntryID == b.FirstEntryID && slices.Equal(a.Ensemble, b.Ensemble)
}

// EnsembleAt returns the ensemble that serves entryID: the one with the
// largest FirstEntryID not above it. It returns nil for an entry before the
// first segment. The slice is md's own.
func (md LedgerMetadata) EnsembleAt(entryID int64) []BookieID {
	i, found := slices.BinarySearchFunc(md.Ensembles, entryID, func(s Segment, e int64) int {
		switch {
		case s.FirstEntryID < e:
			return -1
		case s.FirstEntryID > e:
			return 1
		}
		return 0
	})
	if found {
		return md.Ensembles[i].Ensemble
	}
	if i == 0 {
		return nil
	}
	return md.Ensembles[i-1].Ensemble
}

// LastSegment returns the last segment, the only one a writer may change.
// It panics if md has no segments, which Validate rejects.
func (md LedgerMetadata) LastSegment() Segment {
	return md.Ensembles[len(md.Ensembles)-1]
}

// Validate checks the rules every ledger's metadata obeys, the ones
// BookKeeper's metadata builder enforces and a few that no correct writer
// breaks:
//   - 1 <= Qa <= Qw <= E;
//   - at least one segment; FirstEntryID >= 0 and strictly increasing;
//     every ensemble has E valid bookie ids, none twice;
//   - a known state; LastEntryID = NoEntry and LengthBytes = 0 unless
//     CLOSED; LastEntryID >= NoEntry and LengthBytes >= 0 when CLOSED;
//   - a known digest type, or none (0) with no password.
//
// Decode applies the same rules, so what Decode returns, Encode writes.
func (md LedgerMetadata) Validate() error {
	if err := md.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

func (md LedgerMetadata) validate() error {
	e, qw, qa := md.EnsembleSize, md.WriteQuorumSize, md.AckQuorumSize
	if qa < 1 || qa > qw || qw > e || e > math.MaxInt32 {
		return fmt.Errorf("quorums E=%d Qw=%d Qa=%d: need 1 <= Qa <= Qw <= E", e, qw, qa)
	}
	if err := md.validateEnsembles(); err != nil {
		return err
	}
	switch md.State {
	case StateOpen, StateInRecovery:
		if md.LastEntryID != NoEntry || md.LengthBytes != 0 {
			return fmt.Errorf("%v ledger with lastEntryId %d and length %d: only a closed ledger has them",
				md.State, md.LastEntryID, md.LengthBytes)
		}
	case StateClosed:
		if md.LastEntryID < NoEntry || md.LengthBytes < 0 {
			return fmt.Errorf("closed ledger with lastEntryId %d and length %d", md.LastEntryID, md.LengthBytes)
		}
	default:
		return fmt.Errorf("unknown state %v", md.State)
	}
	switch md.DigestType {
	case 0:
		if len(md.Password) > 0 {
			return errors.New("a password without a digest type")
		}
	case bkproto.DigestCRC32, bkproto.DigestHMAC, bkproto.DigestCRC32C, bkproto.DigestDummy:
	default:
		return fmt.Errorf("unknown digest type %d", int32(md.DigestType))
	}
	return nil
}

func (md LedgerMetadata) validateEnsembles() error {
	if len(md.Ensembles) == 0 {
		return errors.New("no ensembles")
	}
	for i, s := range md.Ensembles {
		if s.FirstEntryID < 0 || i > 0 && s.FirstEntryID <= md.Ensembles[i-1].FirstEntryID {
			return fmt.Errorf("ensemble %d starts at entry %d: keys must be >= 0 and strictly increasing",
				i, s.FirstEntryID)
		}
		if len(s.Ensemble) != md.EnsembleSize {
			return fmt.Errorf("ensemble at entry %d has %d bookies, want E=%d",
				s.FirstEntryID, len(s.Ensemble), md.EnsembleSize)
		}
		for j, b := range s.Ensemble {
			if err := b.Validate(); err != nil {
				return err
			}
			if slices.Contains(s.Ensemble[:j], b) {
				return fmt.Errorf("ensemble at entry %d lists bookie %s twice", s.FirstEntryID, b)
			}
		}
	}
	return nil
}
