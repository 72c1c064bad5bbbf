package metadata

import (
	"context"
	"errors"
	"fmt"

	"keeper/coordination/zkproto"
	"keeper/ledgerstore/ledger"
)

// Outcomes of cookie operations that callers branch on.
var (
	// ErrNoCookie means the bookie has no cookie in the metadata store.
	ErrNoCookie = errors.New("metadata: no cookie for the bookie")
	// ErrCookieExists means CreateCookie found a cookie already there.
	ErrCookieExists = errors.New("metadata: the bookie already has a cookie")
)

// CookiePath returns the znode of bookie id's cookie: root/cookies/<id>.
func (s *Store) CookiePath(id ledger.BookieID) string {
	return s.root + "/" + cookiesNode + "/" + string(id)
}

// CookieBookies lists the bookies that have a cookie: every bookie the
// cluster knows, running or not, as BookKeeper's registration client
// counts them (getAllBookies). Names that are not bookie ids are skipped.
func (s *Store) CookieBookies(ctx context.Context) ([]ledger.BookieID, error) {
	p := s.root + "/" + cookiesNode
	names, _, err := s.conn.Children(ctx, p)
	if errors.Is(err, zkproto.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("metadata: list %s: %w", p, err)
	}
	return s.bookieIDs(names), nil
}

// Cookie returns bookie id's cookie as stored (the bookie package parses
// it, docs/bookkeeper-protocol.md §8.2) and its znode version, or ErrNoCookie.
func (s *Store) Cookie(ctx context.Context, id ledger.BookieID) ([]byte, Version, error) {
	if err := id.Validate(); err != nil {
		return nil, 0, err
	}
	p := s.CookiePath(id)
	data, stat, err := s.conn.Get(ctx, p)
	switch {
	case errors.Is(err, zkproto.ErrNoNode):
		return nil, 0, fmt.Errorf("metadata: read %s: %w", p, ErrNoCookie)
	case err != nil:
		return nil, 0, fmt.Errorf("metadata: read %s: %w", p, err)
	}
	return data, Version(stat.Version), nil
}

// CreateCookie stores a new bookie's cookie, creating the cookies znode if
// this is the cluster's first bookie, and returns its version (0). A
// cookie already there gives ErrCookieExists: a bookie's cookie is written
// once, when its disks are first stamped.
func (s *Store) CreateCookie(ctx context.Context, id ledger.BookieID, data []byte) (Version, error) {
	if err := id.Validate(); err != nil {
		return 0, err
	}
	p := s.CookiePath(id)
	_, err := s.createFullPath(ctx, p, data, 0)
	switch {
	case errors.Is(err, zkproto.ErrNodeExists):
		return 0, fmt.Errorf("metadata: create %s: %w", p, ErrCookieExists)
	case err != nil:
		return 0, fmt.Errorf("metadata: create %s: %w", p, err)
	}
	return 0, nil
}
