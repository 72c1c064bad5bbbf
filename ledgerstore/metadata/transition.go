package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
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
func CheckUpdate(prev, next LedgerMetadata) error {
	if err := checkUpdate(prev, next); err != nil {
		return fmt.Errorf("%w: %w", ErrIllegalUpdate, err)
	}
	return nil
}

func checkUpdate(prev, next LedgerMetadata) error {
	if err := prev.Validate(); err != nil {
		return fmt.Errorf("current metadata: %w", err)
	}
	if err := next.Validate(); err != nil {
		return fmt.Errorf("proposed metadata: %w", err)
	}
	if err := checkImmutable(prev, next); err != nil {
		return err
	}
	switch {
	case prev.State == StateClosed:
		if next.State != StateClosed || !next.Equal(withCToken(prev, next.CToken)) {
			return errors.New("the ledger is closed")
		}
		return nil
	case next.State == StateOpen && prev.State != StateOpen:
		return fmt.Errorf("%v -> OPEN", prev.State)
	}
	n := len(prev.Ensembles)
	if len(next.Ensembles) < n || !slices.EqualFunc(prev.Ensembles[:n-1], next.Ensembles[:n-1], segmentEqual) {
		return errors.New("only the last ensemble may change")
	}
	if last, got := prev.Ensembles[n-1].FirstEntryID, next.Ensembles[n-1].FirstEntryID; last != got {
		return fmt.Errorf("the last ensemble starts at entry %d, the proposal at %d", last, got)
	}
	return nil
}

// checkImmutable compares the fields fixed at creation.
func checkImmutable(prev, next LedgerMetadata) error {
	switch {
	case prev.EnsembleSize != next.EnsembleSize || prev.WriteQuorumSize != next.WriteQuorumSize ||
		prev.AckQuorumSize != next.AckQuorumSize:
		return fmt.Errorf("quorums changed from E=%d Qw=%d Qa=%d to E=%d Qw=%d Qa=%d",
			prev.EnsembleSize, prev.WriteQuorumSize, prev.AckQuorumSize,
			next.EnsembleSize, next.WriteQuorumSize, next.AckQuorumSize)
	case prev.DigestType != next.DigestType || !bytes.Equal(prev.Password, next.Password):
		return errors.New("digest type or password changed")
	case prev.CreationTimeMs != next.CreationTimeMs || prev.StoreCreationTime != next.StoreCreationTime:
		return errors.New("creation time changed")
	case !maps.EqualFunc(prev.CustomMetadata, next.CustomMetadata, bytes.Equal):
		return errors.New("custom metadata changed")
	}
	return nil
}

func withCToken(md LedgerMetadata, cToken int64) LedgerMetadata {
	md.CToken = cToken
	return md
}
