package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"keeper/ledgerstore/ledger"
)

// ErrIllegalUpdate means a proposed metadata is not a legal successor of
// the current one under the ledger state machine (docs/bookkeeper-protocol.md §1.2).
var ErrIllegalUpdate = errors.New("metadata: illegal ledger metadata update")

// CheckUpdate reports whether next may replace prev under the rules a
// writer, a recovering reader and a closer follow (docs/bookkeeper-protocol.md §1.2, §1.6 I3 and
// I7). Both must Validate.
//
//   - E, Qw, Qa, digest type, password, creation time and custom metadata
//     never change. (The cToken may: BookKeeper drops it on rewrites.)
//   - The state moves OPEN -> OPEN, IN_RECOVERY or CLOSED, and IN_RECOVERY
//     -> IN_RECOVERY or CLOSED. Nothing goes back to OPEN.
//   - A CLOSED ledger is immutable: CLOSED -> CLOSED only with identical
//     metadata, which makes a repeated close succeed (idempotent close).
//   - While the ledger is not closed, every segment but the last stays as
//     it is; the last may get other bookies under the same key (an ensemble
//     replaced), and new segments may follow it.
//
// Re-replication, which swaps a bookie inside any segment, and the
// administrative force-recovery path (CLOSED -> IN_RECOVERY) are outside
// these rules; their callers check their own.
func CheckUpdate(prev, next ledger.Metadata) error {
	if err := checkUpdate(prev, next); err != nil {
		return fmt.Errorf("%w: %w", ErrIllegalUpdate, err)
	}
	return nil
}

func checkUpdate(prev, next ledger.Metadata) error {
	if err := Validate(prev); err != nil {
		return fmt.Errorf("current metadata: %w", err)
	}
	if err := Validate(next); err != nil {
		return fmt.Errorf("proposed metadata: %w", err)
	}
	if err := checkImmutable(prev, next); err != nil {
		return err
	}
	switch {
	case prev.State == ledger.StateClosed:
		if next.State != ledger.StateClosed || !next.Equal(withCToken(prev, next.CToken)) {
			return errors.New("the ledger is closed")
		}
		return nil
	case next.State == ledger.StateOpen && prev.State != ledger.StateOpen:
		return fmt.Errorf("%v -> OPEN", prev.State)
	}
	n := len(prev.Segments)
	if len(next.Segments) < n || !slices.EqualFunc(prev.Segments[:n-1], next.Segments[:n-1], ledger.Segment.Equal) {
		return errors.New("only the last ensemble may change")
	}
	if last, got := prev.Segments[n-1].FirstEntryID, next.Segments[n-1].FirstEntryID; last != got {
		return fmt.Errorf("the last ensemble starts at entry %d, the proposal at %d", last, got)
	}
	return nil
}

// checkImmutable compares the fields fixed at creation.
func checkImmutable(prev, next ledger.Metadata) error {
	switch {
	case prev.EnsembleSize != next.EnsembleSize || prev.WriteQuorum != next.WriteQuorum ||
		prev.AckQuorum != next.AckQuorum:
		return fmt.Errorf("quorums changed from E=%d Qw=%d Qa=%d to E=%d Qw=%d Qa=%d",
			prev.EnsembleSize, prev.WriteQuorum, prev.AckQuorum,
			next.EnsembleSize, next.WriteQuorum, next.AckQuorum)
	case prev.DigestType != next.DigestType || !bytes.Equal(prev.Password, next.Password):
		return errors.New("digest type or password changed")
	case prev.CTimeMillis != next.CTimeMillis || prev.StoreCreationTime != next.StoreCreationTime:
		return errors.New("creation time changed")
	case !maps.EqualFunc(prev.Custom, next.Custom, bytes.Equal):
		return errors.New("custom metadata changed")
	}
	return nil
}

func withCToken(md ledger.Metadata, cToken int64) ledger.Metadata {
	md.CToken = cToken
	return md
}
