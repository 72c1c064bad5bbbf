package autorecovery

import (
	"context"
	"errors"
	"slices"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
)

// missingFragments returns the final fragments of md held by live bookies
// that lack the first or the last entry of their share, as BookKeeper's
// ledger checker samples them: the bookie answers ENOENTRY or ENOLEDGER,
// or returns a copy whose digest is wrong. A bookie that cannot be asked
// (a lost connection, a timeout) proves nothing and is left alone.
func (c *conns) missingFragments(ctx context.Context, id int64, md ledger.Metadata,
	live func(ledger.BookieID) bool) []fragment {
	p := md.Placement()
	macKey := bkproto.MacKey(md.Password)
	var out []fragment
	for i, seg := range md.Segments {
		last, final := segmentEnd(md, i)
		if !final {
			continue
		}
		for pos, b := range seg.Bookies {
			if !live(b) {
				continue
			}
			f := fragment{segment: i, first: seg.FirstEntryID, last: last, pos: pos, bookie: b}
			entries := f.entries(p)
			if len(entries) == 0 {
				continue
			}
			for _, e := range slices.Compact([]int64{entries[0], entries[len(entries)-1]}) {
				if c.lacks(ctx, b, id, e, md.Digest(), macKey[:]) {
					out = append(out, f)
					break
				}
			}
		}
	}
	return out
}

// lacks reports whether bookie b provably lacks a good copy of entry e.
func (c *conns) lacks(ctx context.Context, b ledger.BookieID, id, e int64, digest bkproto.DigestType, macKey []byte) bool {
	cl, err := c.get(ctx, b)
	if err != nil {
		return false
	}
	resp, err := cl.Read(ctx, id, e)
	switch {
	case errors.Is(err, bkproto.ErrNoEntry), errors.Is(err, bkproto.ErrNoLedger):
		return true
	case err != nil:
		c.failed(b, cl, err)
		return false
	}
	_, err = bkproto.DecodeEntry(resp.GetBody(), digest, macKey, id, e)
	return err != nil
}
