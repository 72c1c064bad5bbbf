package ledgerclient

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"keeper/coordination/zkclient"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
	"keeper/ledgerstore/metadata"
)

// TestRackAwarePlacement writes Pulsar's rack document, creates ledgers
// with the rack-aware policy reading it, and checks that every write
// quorum spans both racks; then stops a bookie and checks that the
// ensemble change takes the spare bookie of the same rack.
func TestRackAwarePlacement(t *testing.T) {
	cl := ledgertest.Start(t, 6)
	ctx := testCtx(t)
	rackOf := map[ledger.BookieID]string{}
	doc := map[string]map[string]map[string]string{"default": {}}
	for i, id := range cl.IDs() {
		rack := []string{"/r1", "/r2"}[i%2]
		rackOf[ledger.BookieID(id)] = rack
		doc["default"][id] = map[string]string{"rack": strings.TrimPrefix(rack, "/"), "hostname": "h"}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(cl, 21)
	cfg.AddTimeout = time.Minute // a change must come from the dead connection, not a timeout
	cfg.RackInfoPath = metadata.DefaultRackInfoPath
	c := newClient(t, cfg)
	if _, _, err := c.conn.Create(ctx, metadata.DefaultRackInfoPath, data, zkclient.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		w, err := c.Create(ctx, CreateOptions{Ensemble: 4, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
		if err != nil {
			t.Fatal(err)
		}
		ens := w.Metadata().Segments[0].Bookies
		for i := range ens {
			if rackOf[ens[i]] == rackOf[ens[(i+1)%4]] {
				t.Fatalf("ensemble %v: positions %d and %d share rack %s", ens, i, (i+1)%4, rackOf[ens[i]])
			}
		}
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w, err := c.Create(ctx, CreateOptions{Ensemble: 4, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	first := w.Metadata().Segments[0].Bookies
	if _, err := w.Append(ctx, payload(w.ID(), 0)); err != nil {
		t.Fatal(err)
	}
	cl.Stop(cl.Index(string(first[0])))
	for e := int64(1); e <= 4; e++ { // entry 4's write set starts at position 0: its add forces the change
		if _, err := w.Append(ctx, payload(w.ID(), e)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	last := w.Metadata().LastSegment().Bookies
	if last[0] == first[0] || rackOf[last[0]] != rackOf[first[0]] {
		t.Fatalf("replaced %s (%s) by %s (%s): want the same rack", first[0], rackOf[first[0]], last[0], rackOf[last[0]])
	}
}

// TestEnforcedRacksRefuseCreate checks that with the racks enforced and
// no rack information a create fails rather than placing at random.
func TestEnforcedRacksRefuseCreate(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	cfg := testConfig(cl, 22)
	cfg.Placement = ledger.PlacementPolicy{EnforceMinNumRacksPerWriteQuorum: true}
	c := newClient(t, cfg)
	if _, err := c.Create(testCtx(t), CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2}); !errors.Is(err, ledger.ErrNotEnoughBookies) {
		t.Fatalf("create with enforced racks and one rack: %v, want ErrNotEnoughBookies", err)
	}
}

func TestPlacementFromProperties(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  PlacementSettings
		err   string
	}{
		{"defaults", map[string]string{}, PlacementSettings{}, ""},
		{"rack-aware, enforced, Pulsar's racks", map[string]string{
			"ensemblePlacementPolicy":   "org.apache.bookkeeper.client.RackawareEnsemblePlacementPolicy",
			"minNumRacksPerWriteQuorum": "3", "enforceMinNumRacksPerWriteQuorum": "true",
			"reppDnsResolverClass": "org.apache.pulsar.bookie.rackawareness.BookieRackAffinityMapping"},
			PlacementSettings{Policy: ledger.PlacementPolicy{MinNumRacksPerWriteQuorum: 3,
				EnforceMinNumRacksPerWriteQuorum: true}, RackInfoPath: "/bookies"}, ""},
		{"region-aware, legacy resolver", map[string]string{
			"ensemblePlacementPolicy": "org.apache.bookkeeper.client.RegionAwareEnsemblePlacementPolicy",
			"reppDnsResolverClass":    "org.apache.pulsar.zookeeper.ZkBookieRackAffinityMapping"},
			PlacementSettings{Policy: ledger.PlacementPolicy{Kind: ledger.RegionAware}, RackInfoPath: "/bookies"}, ""},
		{"random", map[string]string{"ensemblePlacementPolicy": "org.apache.bookkeeper.client.DefaultEnsemblePlacementPolicy"},
			PlacementSettings{Policy: ledger.PlacementPolicy{Kind: ledger.Random}}, ""},
		{"script resolver without a script", map[string]string{
			"reppDnsResolverClass": "org.apache.bookkeeper.net.ScriptBasedMapping", "networkTopologyScriptFileName": ""},
			PlacementSettings{}, ""},
		{"fault domains off", map[string]string{"enforceMinNumFaultDomainsForWrite": "false"}, PlacementSettings{}, ""},
		{"zone-aware is refused", map[string]string{
			"ensemblePlacementPolicy": "org.apache.bookkeeper.client.ZoneawareEnsemblePlacementPolicy"}, PlacementSettings{},
			"ensemblePlacementPolicy"},
		{"a script is refused", map[string]string{"networkTopologyScriptFileName": "/etc/topo.sh"}, PlacementSettings{},
			"networkTopologyScriptFileName"},
		{"an unknown resolver is refused", map[string]string{"reppDnsResolverClass": "com.example.Racks"},
			PlacementSettings{}, "reppDnsResolverClass"},
		{"fault domains enforced is refused", map[string]string{"enforceMinNumFaultDomainsForWrite": "true"},
			PlacementSettings{}, "enforceMinNumFaultDomainsForWrite"},
		{"region durability is refused", map[string]string{"reppRegionsToWrite": "east;west"}, PlacementSettings{},
			"reppRegionsToWrite"},
		{"bad rack count", map[string]string{"minNumRacksPerWriteQuorum": "0"}, PlacementSettings{},
			"minNumRacksPerWriteQuorum"},
		{"bad bool", map[string]string{"enforceMinNumRacksPerWriteQuorum": "yes"}, PlacementSettings{},
			"enforceMinNumRacksPerWriteQuorum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, used, err := PlacementFromProperties(tc.props)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("PlacementFromProperties = %+v, %v; want %+v", got, err, tc.want)
			}
			for k := range tc.props {
				if !slices.Contains(used, k) {
					t.Errorf("key %s not reported as used", k)
				}
			}
		})
	}
}
