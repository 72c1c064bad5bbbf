package ledgerclient

import (
	"fmt"
	"slices"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// fromStore converts stored metadata and its znode version into the state
// machines' view. Metadata of format version 1 names no digest type; like
// the Java client's default, such a ledger is read as CRC32. The result is
// validated: the machines assume valid metadata.
func fromStore(md metadata.LedgerMetadata, v metadata.Version) (ledger.Metadata, error) {
	m := ledger.Metadata{
		Version:      int64(v),
		EnsembleSize: md.EnsembleSize,
		WriteQuorum:  md.WriteQuorumSize,
		AckQuorum:    md.AckQuorumSize,
		State:        ledger.State(md.State),
		LastEntryID:  md.LastEntryID,
		Length:       md.LengthBytes,
		Segments:     make([]ledger.Segment, len(md.Ensembles)),
		DigestType:   md.DigestType,
		Password:     slices.Clone(md.Password),
		CTimeMillis:  md.CreationTimeMs,
		CToken:       md.CToken,
	}
	if m.DigestType == 0 {
		m.DigestType = bkproto.DigestCRC32
	}
	for i, s := range md.Ensembles {
		m.Segments[i] = ledger.Segment{FirstEntryID: s.FirstEntryID, Bookies: toLedgerIDs(s.Ensemble)}
	}
	if md.CustomMetadata != nil {
		m.Custom = make(map[string][]byte, len(md.CustomMetadata))
		for k, v := range md.CustomMetadata {
			m.Custom[k] = slices.Clone(v)
		}
	}
	if err := m.Validate(); err != nil {
		return ledger.Metadata{}, fmt.Errorf("ledgerclient: stored metadata: %w", err)
	}
	return m, nil
}

// toStore returns base, the stored metadata m was derived from, with the
// fields a writer or a recovery changes taken from m: state, last entry,
// length and ensembles. Everything else (format details, creation time,
// cToken, custom metadata, a legacy absent digest type) stays as stored,
// so a rewrite never loses what the state machines do not model.
func toStore(base metadata.LedgerMetadata, m ledger.Metadata) metadata.LedgerMetadata {
	out := base.Clone()
	out.State = metadata.State(m.State)
	out.LastEntryID = m.LastEntryID
	out.LengthBytes = m.Length
	if m.State != ledger.StateClosed {
		out.LastEntryID, out.LengthBytes = metadata.NoEntry, 0
	}
	out.Ensembles = make([]metadata.Segment, len(m.Segments))
	for i, s := range m.Segments {
		out.Ensembles[i] = metadata.Segment{FirstEntryID: s.FirstEntryID, Ensemble: toStoreIDs(s.Bookies)}
	}
	return out
}

func toLedgerIDs(ids []metadata.BookieID) []ledger.BookieID {
	out := make([]ledger.BookieID, len(ids))
	for i, id := range ids {
		out[i] = ledger.BookieID(id)
	}
	return out
}

func toStoreIDs(ids []ledger.BookieID) []metadata.BookieID {
	out := make([]metadata.BookieID, len(ids))
	for i, id := range ids {
		out[i] = metadata.BookieID(id)
	}
	return out
}

// candidates turns the bookie registry into the machines' view: every
// registered bookie is available, and the read-only ones are never chosen
// for a new ensemble or a replacement.
func candidates(reg metadata.Registry) ledger.Candidates {
	c := ledger.Candidates{ReadOnly: toLedgerIDs(reg.ReadOnly)}
	c.Available = append(toLedgerIDs(reg.Writable), c.ReadOnly...)
	slices.Sort(c.Available)
	c.Available = slices.Compact(c.Available)
	return c
}
