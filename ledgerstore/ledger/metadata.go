package ledger

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"keeper/ledgerstore/bkproto"
)

// BookieID names a bookie as ledger metadata does: "host:port", or an
// opaque id (BP-41).
type BookieID string

// Validate checks id against BookKeeper's rule (BookieId.validateBookieId):
// one or more of the characters a-z, 0-9, ':' through '_' (which takes in
// A-Z and ";<=>?@[\]^"), '.' and '-', and not "readonly" in any case,
// which names the metadata store's directory of read-only bookies.
func (id BookieID) Validate() error {
	if id == "" || strings.EqualFold(string(id), "readonly") {
		return fmt.Errorf("ledger: invalid bookie id %q", string(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= ':' && c <= '_' || c == '.' || c == '-'
		if !ok {
			return fmt.Errorf("ledger: invalid bookie id %q: byte %#x at %d", string(id), c, i)
		}
	}
	return nil
}

// NoEntry is the entry id of "no entry": the LastEntryID of an empty
// closed ledger, and of every ledger that is not closed.
const NoEntry int64 = -1

// State is a ledger's metadata state (docs/bookkeeper-protocol.md §1.2). The numbers are those of
// LedgerMetadataFormat.State. No transition leads back to StateOpen.
type State int8

// The ledger states.
const (
	StateOpen       State = 1 // one writer may add entries and change the last ensemble
	StateInRecovery State = 2 // a client is recovering the ledger; writers are fenced
	StateClosed     State = 3 // LastEntryID and Length are final
)

func (s State) String() string {
	switch s {
	case StateOpen:
		return "OPEN"
	case StateInRecovery:
		return "IN_RECOVERY"
	case StateClosed:
		return "CLOSED"
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// Segment is one ensemble of a ledger: it serves the entries from
// FirstEntryID up to the next segment's FirstEntryID − 1 (the last segment:
// all later entries). Bookies has EnsembleSize members; an entry's write set
// is named by positions in it (Placement).
type Segment struct {
	FirstEntryID int64
	Bookies      []BookieID
}

// Equal reports whether s and o start at the same entry with the same
// bookies in the same positions.
func (s Segment) Equal(o Segment) bool {
	return s.FirstEntryID == o.FirstEntryID && slices.Equal(s.Bookies, o.Bookies)
}

// Metadata is one ledger's metadata (docs/bookkeeper-protocol.md §5.1),
// the Go form of BookKeeper's LedgerMetadataFormat: what the state
// machines read and write, and what the metadata store encodes. The ledger
// id is not part of it: it is the znode's path.
//
// Version is the store's version of the value, opaque here: a MetadataWrite
// is a compare-and-set expecting it.
//
// A Metadata holds slices and a map; Clone it before changing a copy that
// another goroutine may read.
type Metadata struct {
	Version int64
	// FormatVersion is the stored format the metadata was decoded from (1,
	// 2 or 3; 0 for metadata built in memory). The store always writes 3.
	FormatVersion int

	EnsembleSize int // E
	WriteQuorum  int // Qw; stored in the field named quorumSize
	AckQuorum    int // Qa

	State State
	// LastEntryID is the closed ledger's last entry (NoEntry if it is
	// empty). The store keeps NoEntry while the ledger is not closed.
	LastEntryID int64
	// Length is the closed ledger's total payload bytes; 0 in the store
	// while the ledger is not closed.
	Length int64

	// Segments is sorted by FirstEntryID, strictly increasing, and starts
	// at 0. It stands for the metadata's firstEntryId → ensemble map.
	Segments []Segment

	// DigestType is the entries' digest. Zero means the stored metadata
	// names none (format 1 only); such a ledger's entries are read as
	// CRC32, the Java client's default (Digest).
	DigestType bkproto.DigestType
	// Password is the ledger password, stored in clear. Empty is allowed.
	Password []byte

	// CTimeMillis is the creation time in milliseconds since the epoch.
	// StoreCreationTime says whether the stored metadata records it; when
	// it does not, the store fills it from the znode's ctime, as
	// BookKeeper does.
	CTimeMillis       int64
	StoreCreationTime bool
	// CToken is the creator's random token (0 if none), which lets a create
	// retried after a lost reply recognise its own znode.
	CToken int64
	// Custom holds the application's tags. It is nil when empty.
	Custom map[string][]byte
}

// Digest returns the digest the ledger's entries carry: DigestType, or
// CRC32 for metadata that names none.
func (m Metadata) Digest() bkproto.DigestType {
	if m.DigestType == 0 {
		return bkproto.DigestCRC32
	}
	return m.DigestType
}

// Equal reports whether m and o hold the same metadata. Version and
// FormatVersion are ignored: they say where m came from, not what it is.
func (m Metadata) Equal(o Metadata) bool {
	return m.EnsembleSize == o.EnsembleSize && m.WriteQuorum == o.WriteQuorum &&
		m.AckQuorum == o.AckQuorum && m.State == o.State &&
		m.LastEntryID == o.LastEntryID && m.Length == o.Length &&
		sameSegments(m.Segments, o.Segments) &&
		m.DigestType == o.DigestType && bytes.Equal(m.Password, o.Password) &&
		m.CTimeMillis == o.CTimeMillis && m.StoreCreationTime == o.StoreCreationTime &&
		maps.EqualFunc(m.Custom, o.Custom, bytes.Equal) && m.CToken == o.CToken
}

// Clone returns a deep copy of m: the copy shares no slice or map with it.
func (m Metadata) Clone() Metadata {
	c := m
	c.Segments = make([]Segment, len(m.Segments))
	for i, s := range m.Segments {
		c.Segments[i] = Segment{FirstEntryID: s.FirstEntryID, Bookies: slices.Clone(s.Bookies)}
	}
	c.Password = slices.Clone(m.Password)
	if m.Custom != nil {
		c.Custom = make(map[string][]byte, len(m.Custom))
		for k, v := range m.Custom {
			c.Custom[k] = slices.Clone(v)
		}
	}
	return c
}

// Validate checks the invariants every ledger's metadata keeps: E ≥ Qw ≥
// Qa ≥ 1, a known digest type, a known state, segments starting at 0 with
// strictly increasing keys and E distinct bookies each, and a closed
// ledger's LastEntryID ≥ −1.
func (m Metadata) Validate() error {
	if _, err := NewPlacement(m.EnsembleSize, m.WriteQuorum, m.AckQuorum); err != nil {
		return err
	}
	if _, ok := bkproto.DigestBytes(m.Digest()); !ok {
		return fmt.Errorf("ledger: unknown digest type %d", int32(m.DigestType))
	}
	if m.State < StateOpen || m.State > StateClosed {
		return fmt.Errorf("ledger: unknown state %d", int8(m.State))
	}
	if len(m.Segments) == 0 || m.Segments[0].FirstEntryID != 0 {
		return fmt.Errorf("ledger: segments must start at entry 0")
	}
	for i, s := range m.Segments {
		if i > 0 && s.FirstEntryID <= m.Segments[i-1].FirstEntryID {
			return fmt.Errorf("ledger: segment keys %d then %d do not increase",
				m.Segments[i-1].FirstEntryID, s.FirstEntryID)
		}
		if len(s.Bookies) != m.EnsembleSize {
			return fmt.Errorf("ledger: segment %d has %d bookies, ensemble size %d",
				s.FirstEntryID, len(s.Bookies), m.EnsembleSize)
		}
		if hasDuplicate(s.Bookies) {
			return fmt.Errorf("ledger: segment %d names a bookie twice: %v", s.FirstEntryID, s.Bookies)
		}
	}
	if m.State == StateClosed && m.LastEntryID < -1 {
		return fmt.Errorf("ledger: closed with last entry %d", m.LastEntryID)
	}
	return nil
}

// Placement returns the striping of m's entries. m must be valid.
func (m Metadata) Placement() Placement {
	return Placement{EnsembleSize: m.EnsembleSize, WriteQuorum: m.WriteQuorum, AckQuorum: m.AckQuorum}
}

// LastSegment returns the segment new entries go to. m must have one.
func (m Metadata) LastSegment() Segment {
	return m.Segments[len(m.Segments)-1]
}

// SegmentFor returns the segment that holds entryID: the one with the
// greatest FirstEntryID ≤ entryID. ok is false for a negative id.
func (m Metadata) SegmentFor(entryID int64) (s Segment, ok bool) {
	i, found := slices.BinarySearchFunc(m.Segments, entryID, func(s Segment, e int64) int {
		switch {
		case s.FirstEntryID < e:
			return -1
		case s.FirstEntryID > e:
			return 1
		}
		return 0
	})
	if !found {
		i--
	}
	if i < 0 {
		return Segment{}, false
	}
	return m.Segments[i], true
}

// WriteSetBookies returns the bookies of entryID's write set, in write-set
// order, from the segment that holds it.
func (m Metadata) WriteSetBookies(entryID int64) []BookieID {
	s, ok := m.SegmentFor(entryID)
	if !ok {
		return nil
	}
	p := m.Placement()
	out := make([]BookieID, p.WriteQuorum)
	for k := range out {
		out[k] = s.Bookies[p.Position(entryID, k)]
	}
	return out
}

// sameContent reports whether a and b agree on everything a writer or a
// recovery writes (state, last entry, length and segments). A driver that
// lost the answer to a compare-and-set re-reads the metadata; this tells
// whether the write it sent is the one that landed.
func sameContent(a, b Metadata) bool {
	if a.State != b.State || a.LastEntryID != b.LastEntryID || a.Length != b.Length ||
		len(a.Segments) != len(b.Segments) {
		return false
	}
	for i := range a.Segments {
		if a.Segments[i].FirstEntryID != b.Segments[i].FirstEntryID ||
			!slices.Equal(a.Segments[i].Bookies, b.Segments[i].Bookies) {
			return false
		}
	}
	return true
}

// sameSegments reports whether a and b have equal segment maps.
func sameSegments(a, b []Segment) bool { return slices.EqualFunc(a, b, Segment.Equal) }

func hasDuplicate(bs []BookieID) bool {
	s := slices.Clone(bs)
	slices.Sort(s)
	return len(slices.Compact(s)) != len(bs)
}

// CreateConfig describes a new ledger (docs/bookkeeper-protocol.md §2.1).
type CreateConfig struct {
	EnsembleSize int // E
	WriteQuorum  int // Qw
	AckQuorum    int // Qa
	// DigestType defaults to CRC32C when zero (the enum has no zero value).
	DigestType bkproto.DigestType
	Password   []byte
	Custom     map[string][]byte
}

// NewMetadata returns the metadata of a new ledger on ensemble: state
// OPEN, one segment at entry 0, LastEntryID −1, Version 0 (the driver
// creates it with a create-if-absent, not a compare-and-set). The driver
// adds CTimeMillis and CToken.
func NewMetadata(cfg CreateConfig, ensemble []BookieID) (Metadata, error) {
	if cfg.DigestType == 0 {
		cfg.DigestType = bkproto.DigestCRC32C
	}
	m := Metadata{
		EnsembleSize: cfg.EnsembleSize,
		WriteQuorum:  cfg.WriteQuorum,
		AckQuorum:    cfg.AckQuorum,
		State:        StateOpen,
		LastEntryID:  -1,
		Segments:     []Segment{{FirstEntryID: 0, Bookies: slices.Clone(ensemble)}},
		DigestType:   cfg.DigestType,
		Password:     slices.Clone(cfg.Password),
		Custom:       maps.Clone(cfg.Custom),
	}
	if err := m.Validate(); err != nil {
		return Metadata{}, err
	}
	return m, nil
}

// Candidates is the driver's view of the registered bookies, from which
// ensembles and replacements are chosen.
type Candidates struct {
	Available []BookieID // every registered bookie, writable or not
	ReadOnly  []BookieID // registered read-only: never chosen
	// Racks maps bookies to their network location ("/rack", or
	// "/region/rack" for the region-aware policy); a bookie not in it is
	// in the policy's default rack (PlacementPolicy.DefaultLocation).
	Racks map[BookieID]string
}

// Only returns c with only the bookies in allowed (and their racks); an
// empty allowed allows every one.
func (c Candidates) Only(allowed []BookieID) Candidates {
	if len(allowed) == 0 {
		return c
	}
	keep := func(ids []BookieID) []BookieID {
		var out []BookieID
		for _, id := range ids {
			if slices.Contains(allowed, id) {
				out = append(out, id)
			}
		}
		return out
	}
	c.Available, c.ReadOnly = keep(c.Available), keep(c.ReadOnly)
	return c // Racks kept: locations of bookies left out are never asked for
}

// ChooseBookies picks n distinct bookies from c.Available that are neither
// read-only nor in exclude (docs/bookkeeper-protocol.md §2.1, §2.3). The choice depends only on
// the arguments: the pool is sorted and then shuffled with rng (nil: no
// shuffle, the first n in sorted order). It returns ErrNotEnoughBookies if
// fewer than n qualify.
func ChooseBookies(n int, c Candidates, exclude []BookieID, rng *rand.Rand) ([]BookieID, error) {
	pool := slices.Clone(c.Available)
	slices.Sort(pool)
	pool = slices.Compact(pool)
	pool = slices.DeleteFunc(pool, func(b BookieID) bool {
		return slices.Contains(c.ReadOnly, b) || slices.Contains(exclude, b)
	})
	if len(pool) < n {
		return nil, fmt.Errorf("%w: need %d, %d writable and not excluded", ErrNotEnoughBookies, n, len(pool))
	}
	if rng != nil {
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	}
	return pool[:n:n], nil
}
