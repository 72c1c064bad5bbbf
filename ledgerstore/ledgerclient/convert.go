package ledgerclient

import (
	"fmt"
	"slices"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// fromStore returns stored metadata with its znode version, checked
// against the state machines' invariants: they assume valid metadata.
// Metadata of format version 1 names no digest type; the machines read
// such a ledger's entries as CRC32 (ledger.Metadata.Digest).
func fromStore(md ledger.Metadata, v metadata.Version) (ledger.Metadata, error) {
	md = md.Clone()
	md.Version = int64(v)
	if err := md.Validate(); err != nil {
		return ledger.Metadata{}, fmt.Errorf("ledgerclient: stored metadata: %w", err)
	}
	return md, nil
}

// toStore returns base, the stored metadata m was derived from, with the
// fields a writer or a recovery changes taken from m: state, last entry,
// length and ensembles. Everything else (format details, creation time,
// cToken, custom metadata, a legacy absent digest type) stays as stored,
// so a rewrite never changes what the state machines do not decide.
func toStore(base, m ledger.Metadata) ledger.Metadata {
	out := base.Clone()
	out.State = m.State
	out.LastEntryID = m.LastEntryID
	out.Length = m.Length
	if m.State != ledger.StateClosed {
		out.LastEntryID, out.Length = ledger.NoEntry, 0
	}
	out.Segments = m.Clone().Segments
	return out
}

// candidates turns the bookie registry into the machines' view: every
// registered bookie is available, and the read-only ones are never chosen
// for a new ensemble or a replacement. racks is shared, never changed.
func candidates(reg metadata.Registry, racks map[ledger.BookieID]string) ledger.Candidates {
	c := ledger.Candidates{ReadOnly: slices.Clone(reg.ReadOnly), Racks: racks}
	c.Available = append(slices.Clone(reg.Writable), c.ReadOnly...)
	slices.Sort(c.Available)
	c.Available = slices.Compact(c.Available)
	return c
}
