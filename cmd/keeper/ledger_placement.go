package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
)

// placementFlags are the placement settings of `keeper ledger`, named
// after BookKeeper's client keys (docs/bookkeeper-protocol.md §8.6).
type placementFlags struct {
	policy   string
	minRacks int
	enforce  bool
	rackInfo string
	racks    string
}

func (p *placementFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&p.policy, "ensemble-placement-policy", ledger.RackAwareClass,
		"placement policy class (ensemblePlacementPolicy): "+ledger.RackAwareClass+", "+
			ledger.RegionAwareClass+" or "+ledger.RandomClass)
	fs.IntVar(&p.minRacks, "min-racks-per-write-quorum", ledger.DefaultMinNumRacksPerWriteQuorum,
		"racks each write quorum should span (minNumRacksPerWriteQuorum)")
	fs.BoolVar(&p.enforce, "enforce-min-racks-per-write-quorum", false,
		"refuse ensembles that cannot span the racks (enforceMinNumRacksPerWriteQuorum)")
	fs.StringVar(&p.rackInfo, "rack-info-znode", "",
		"znode of Pulsar's bookie rack document, e.g. /bookies (empty: none)")
	fs.StringVar(&p.racks, "rack-mapping", "",
		"file of 'bookie /rack' lines placing bookies statically (wins over the rack document)")
}

// apply puts the flags' settings into cfg.
func (p *placementFlags) apply(cfg *ledgerclient.Config) error {
	kind, err := ledger.PolicyByClass(p.policy)
	if err != nil {
		return fmt.Errorf("--ensemble-placement-policy: %w", err)
	}
	if p.minRacks < 1 {
		return fmt.Errorf("--min-racks-per-write-quorum %d: want at least 1", p.minRacks)
	}
	cfg.Placement = ledger.PlacementPolicy{Kind: kind, MinNumRacksPerWriteQuorum: p.minRacks,
		EnforceMinNumRacksPerWriteQuorum: p.enforce}
	cfg.RackInfoPath = p.rackInfo
	if p.racks != "" {
		data, err := os.ReadFile(p.racks)
		if err != nil {
			return fmt.Errorf("--rack-mapping: %w", err)
		}
		if cfg.Racks, err = ledger.ParseStaticRacks(string(data)); err != nil {
			return fmt.Errorf("--rack-mapping %s: %w", p.racks, err)
		}
	}
	return nil
}
