package metadata

import (
	"context"
	"errors"
	"fmt"

	"keeper/coordination/zkproto"
	"keeper/ledgerstore/ledger"
)

// DefaultRackInfoPath is the znode where Apache Pulsar's
// BookieRackAffinityMapping keeps the bookies' racks, at the root of the
// metadata service (not under the ledgers root).
const DefaultRackInfoPath = "/bookies"

// RackInfo reads the rack document at path (ledger.ParseRackInfo). A
// missing znode is no information: every bookie is in the policy's
// default rack.
func (s *Store) RackInfo(ctx context.Context, path string) (map[ledger.BookieID]string, error) {
	data, _, err := s.conn.Get(ctx, path)
	if errors.Is(err, zkproto.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("metadata: read %s: %w", path, err)
	}
	racks, err := ledger.ParseRackInfo(data)
	if err != nil {
		return nil, fmt.Errorf("metadata: %s: %w", path, err)
	}
	return racks, nil
}
