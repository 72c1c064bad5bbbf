package metadata

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"keeper/coordination/zkproto"
)

// ParseLayoutData returns the layout a LAYOUT znode's content names: the
// inverse of Layout.LayoutData. Format 1 layouts name the hierarchical
// manager by type ("hierarchical"). Any other manager (the legacy flat
// one, a custom factory) is an error wrapping ErrLayoutMismatch: keeper
// cannot walk its tree.
func ParseLayoutData(data []byte) (Layout, error) {
	for _, l := range []Layout{LayoutHierarchical, LayoutLongHierarchical} {
		if err := l.checkLayoutData(data); err == nil {
			return l, nil
		} else if !errors.Is(err, ErrLayoutMismatch) {
			return 0, err
		}
	}
	head, _, _ := strings.Cut(string(data), "\n")
	if _, err := strconv.Atoi(head); err != nil {
		return 0, fmt.Errorf("metadata: LAYOUT %q: unreadable", data)
	}
	return 0, fmt.Errorf("%w: LAYOUT %q names a ledger manager keeper does not know", ErrLayoutMismatch, data)
}

// StoredLayout returns the layout the tree's LAYOUT znode names; found is
// false if the tree has none yet. A process that only reads the tree (a
// bookie, which lists it for garbage collection) uses it to open its Store
// with the layout the cluster was formatted with.
func (s *Store) StoredLayout(ctx context.Context) (layout Layout, found bool, err error) {
	p := s.root + "/" + layoutNode
	data, _, err := s.conn.Get(ctx, p)
	switch {
	case errors.Is(err, zkproto.ErrNoNode):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("metadata: read %s: %w", p, err)
	}
	layout, err = ParseLayoutData(data)
	return layout, err == nil, err
}

// Exists reports whether ledger id's metadata znode exists. Garbage
// collection asks it of every ledger a listing left out before deleting
// the ledger's data (BookKeeper's verifyMetadataOnGc): only "no such
// znode" counts as gone; any error must count as "keep".
func (s *Store) Exists(ctx context.Context, id int64) (bool, error) {
	if err := checkID(id); err != nil {
		return false, err
	}
	p := s.LedgerPath(id)
	_, ok, err := s.conn.Exists(ctx, p)
	if err != nil {
		return false, fmt.Errorf("metadata: check ledger %d: %w", id, err)
	}
	return ok, nil
}
