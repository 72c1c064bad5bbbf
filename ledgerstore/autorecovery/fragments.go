package autorecovery

import (
	"keeper/ledgerstore/ledger"
)

// fragment is the part of one segment that lived on one bookie: the
// entries first..last of the segment whose write set holds position pos.
type fragment struct {
	segment     int   // index in Metadata.Segments
	first, last int64 // the segment's entries; last < first: none
	pos         int   // the bookie's position in the segment's ensemble
	bookie      ledger.BookieID
}

// segmentEnd returns the last entry of segment i and whether that end is
// final: every segment but the last ends where the next begins; the last
// ends at LastEntryID once the ledger is closed, and is open before.
func segmentEnd(md ledger.Metadata, i int) (last int64, final bool) {
	if i+1 < len(md.Segments) {
		return md.Segments[i+1].FirstEntryID - 1, true
	}
	if md.State == ledger.StateClosed {
		return md.LastEntryID, true
	}
	return 0, false
}

// lostFragments returns the fragments of md on bookies that are not live,
// for the segments whose end is final, and whether the open last segment
// (of a ledger not closed) has a bookie that is not live: BookKeeper leaves
// that one to the writer, which replaces the bookie itself when it next
// writes, and fences the ledger only after a grace period.
func lostFragments(md ledger.Metadata, live func(ledger.BookieID) bool) (lost []fragment, openMissing bool) {
	for i, seg := range md.Segments {
		last, final := segmentEnd(md, i)
		for pos, b := range seg.Bookies {
			if live(b) {
				continue
			}
			if !final {
				openMissing = true
				continue
			}
			lost = append(lost, fragment{segment: i, first: seg.FirstEntryID, last: last, pos: pos, bookie: b})
		}
	}
	return lost, openMissing
}

// entries returns the entries of f that its bookie held: those whose
// write set includes its position.
func (f fragment) entries(p ledger.Placement) []int64 {
	var out []int64
	for e := f.first; e <= f.last; e++ {
		if p.InWriteSet(e, f.pos) {
			out = append(out, e)
		}
	}
	return out
}

// sources returns the other bookies of entry e's write set in seg, in
// write-set order: where a copy of e can be read.
func sources(p ledger.Placement, seg ledger.Segment, e int64, pos int) []ledger.BookieID {
	var out []ledger.BookieID
	for _, q := range p.WriteSet(e) {
		if q != pos {
			out = append(out, seg.Bookies[q])
		}
	}
	return out
}

// ledgersOn returns, for each bookie in wanted, the ledgers (of mds, by
// id) that have it in any segment: the auditor's bookie → ledgers index.
func ledgersOn(mds map[int64]ledger.Metadata, wanted func(ledger.BookieID) bool) map[int64][]string {
	out := map[int64][]string{}
	for id, md := range mds {
		var found []string
		for _, seg := range md.Segments {
			for _, b := range seg.Bookies {
				if wanted(b) && !containsString(found, string(b)) {
					found = append(found, string(b))
				}
			}
		}
		if len(found) > 0 {
			out[id] = found
		}
	}
	return out
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
