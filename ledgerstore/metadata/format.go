package metadata

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
)

// ErrMalformed means stored or proposed metadata breaks the format's rules:
// bytes that do not decode, or a Metadata that Validate rejects.
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

// NewOpen returns the metadata of a new OPEN ledger whose first ensemble
// serves from entry 0. E is len(ensemble).
func NewOpen(ensemble []ledger.BookieID, writeQuorum, ackQuorum int, digest bkproto.DigestType, password []byte) ledger.Metadata {
	return ledger.Metadata{
		EnsembleSize: len(ensemble),
		WriteQuorum:  writeQuorum,
		AckQuorum:    ackQuorum,
		State:        ledger.StateOpen,
		LastEntryID:  ledger.NoEntry,
		Segments:     []ledger.Segment{{FirstEntryID: 0, Bookies: slices.Clone(ensemble)}},
		DigestType:   digest,
		Password:     slices.Clone(password),
	}
}

// Validate checks the rules every ledger's metadata obeys, the ones
// BookKeeper's metadata builder enforces and a few that no correct writer
// breaks:
//   - 1 <= Qa <= Qw <= E;
//   - at least one segment; FirstEntryID >= 0 and strictly increasing;
//     every ensemble has E valid bookie ids, none twice;
//   - a known state; LastEntryID = ledger.NoEntry and Length = 0 unless
//     CLOSED; LastEntryID >= ledger.NoEntry and Length >= 0 when CLOSED;
//   - a known digest type, or none (0) with no password.
//
// Decode applies the same rules, so what Decode returns, Encode writes.
func Validate(md ledger.Metadata) error {
	if err := validate(md); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

func validate(md ledger.Metadata) error {
	e, qw, qa := md.EnsembleSize, md.WriteQuorum, md.AckQuorum
	if qa < 1 || qa > qw || qw > e || e > math.MaxInt32 {
		return fmt.Errorf("quorums E=%d Qw=%d Qa=%d: need 1 <= Qa <= Qw <= E", e, qw, qa)
	}
	if err := validateEnsembles(md); err != nil {
		return err
	}
	switch md.State {
	case ledger.StateOpen, ledger.StateInRecovery:
		if md.LastEntryID != ledger.NoEntry || md.Length != 0 {
			return fmt.Errorf("%v ledger with lastEntryId %d and length %d: only a closed ledger has them",
				md.State, md.LastEntryID, md.Length)
		}
	case ledger.StateClosed:
		if md.LastEntryID < ledger.NoEntry || md.Length < 0 {
			return fmt.Errorf("closed ledger with lastEntryId %d and length %d", md.LastEntryID, md.Length)
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

func validateEnsembles(md ledger.Metadata) error {
	if len(md.Segments) == 0 {
		return errors.New("no ensembles")
	}
	for i, s := range md.Segments {
		if s.FirstEntryID < 0 || i > 0 && s.FirstEntryID <= md.Segments[i-1].FirstEntryID {
			return fmt.Errorf("ensemble %d starts at entry %d: keys must be >= 0 and strictly increasing",
				i, s.FirstEntryID)
		}
		if len(s.Bookies) != md.EnsembleSize {
			return fmt.Errorf("ensemble at entry %d has %d bookies, want E=%d",
				s.FirstEntryID, len(s.Bookies), md.EnsembleSize)
		}
		for j, b := range s.Bookies {
			if err := b.Validate(); err != nil {
				return err
			}
			if slices.Contains(s.Bookies[:j], b) {
				return fmt.Errorf("ensemble at entry %d lists bookie %s twice", s.FirstEntryID, b)
			}
		}
	}
	return nil
}
