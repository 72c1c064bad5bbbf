package autorecovery

import (
	"context"
	"log/slog"
	"maps"
	"sync"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// rackSource reads the bookies' racks: the static ones, and the rack
// document's for the bookies they do not place. If the document cannot
// be read or decoded, the last information read stays.
type rackSource struct {
	static map[ledger.BookieID]string
	path   string

	mu   sync.Mutex // guards last
	last map[ledger.BookieID]string
}

func (r *rackSource) load(ctx context.Context, store *metadata.Store, log *slog.Logger) map[ledger.BookieID]string {
	racks := maps.Clone(r.static)
	if r.path != "" {
		doc, err := store.RackInfo(ctx, r.path)
		if err != nil {
			log.Warn("rack information unreadable; keeping the last read", "err", err)
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.last
		}
		if racks == nil && len(doc) > 0 {
			racks = make(map[ledger.BookieID]string, len(doc))
		}
		for b, loc := range doc {
			if _, static := racks[b]; !static {
				racks[b] = loc
			}
		}
	}
	r.mu.Lock()
	r.last = racks
	r.mu.Unlock()
	return racks
}
