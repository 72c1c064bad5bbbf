package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
)

func TestPlacementFlags(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "racks")
	if err := os.WriteFile(good, []byte("# racks\n10.0.0.1:3181 /dc1/r1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("10.0.0.1:3181\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		f    placementFlags
		err  string
		want ledger.PlacementPolicy
	}{
		{"defaults", placementFlags{policy: ledger.RackAwareClass, minRacks: 2}, "",
			ledger.PlacementPolicy{MinNumRacksPerWriteQuorum: 2}},
		{"region-aware, enforced, with a mapping",
			placementFlags{policy: ledger.RegionAwareClass, minRacks: 3, enforce: true, racks: good, rackInfo: "/bookies"}, "",
			ledger.PlacementPolicy{Kind: ledger.RegionAware, MinNumRacksPerWriteQuorum: 3, EnforceMinNumRacksPerWriteQuorum: true}},
		{"unknown class", placementFlags{policy: "org.example.Mine", minRacks: 2}, "--ensemble-placement-policy", ledger.PlacementPolicy{}},
		{"no racks", placementFlags{policy: ledger.RackAwareClass, minRacks: 0}, "--min-racks-per-write-quorum", ledger.PlacementPolicy{}},
		{"bad mapping", placementFlags{policy: ledger.RackAwareClass, minRacks: 2, racks: bad}, "--rack-mapping", ledger.PlacementPolicy{}},
		{"missing mapping", placementFlags{policy: ledger.RackAwareClass, minRacks: 2, racks: filepath.Join(dir, "none")},
			"--rack-mapping", ledger.PlacementPolicy{}},
	} {
		var cfg ledgerclient.Config
		err := tt.f.apply(&cfg)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want an error naming %s", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || cfg.Placement != tt.want || cfg.RackInfoPath != tt.f.rackInfo {
			t.Errorf("%s: %+v, %v", tt.name, cfg, err)
		}
		if tt.f.racks != "" && cfg.Racks["10.0.0.1:3181"] != "/dc1/r1" {
			t.Errorf("%s: racks %v", tt.name, cfg.Racks)
		}
	}
}
