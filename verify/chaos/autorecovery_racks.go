package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"keeper/coordination/zkclient"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// Scenario 13's racks. Six bookies in three racks of two, the rack-aware
// policy with minNumRacksPerWriteQuorum=2 enforced, E3/Qw2 ledgers: the
// write sets of an E3/Qw2 ensemble are the pairs of adjacent positions
// (0,1), (1,2) and (2,0), so every ensemble must take its three bookies
// from three different racks. When one bookie dies for good, the other
// bookie of its rack is never in an ensemble that held the dead one, so
// the replacement rule (the lost bookie's rack first,
// docs/bookkeeper-protocol.md §8.6) keeps every pair in two racks, both
// for the writer's own ensemble change and for the replication workers.
// With four bookies, or two racks, some loss would leave no bookie that
// keeps the rule, and enforcement would refuse the replacement.
const (
	arRacks          = 3
	arBookiesPerRack = 2
	arMinRacks       = 2
	// pulsarRackResolver is Pulsar's reppDnsResolverClass, which reads the
	// racks from the /bookies znode.
	pulsarRackResolver = "org.apache.pulsar.bookie.rackawareness.BookieRackAffinityMapping"
)

// arPlacementConf are the bookies' placement lines: what their
// autorecovery workers choose replacements by.
var arPlacementConf = []string{
	"ensemblePlacementPolicy=" + ledger.RackAwareClass,
	"minNumRacksPerWriteQuorum=" + strconv.Itoa(arMinRacks),
	"enforceMinNumRacksPerWriteQuorum=true",
	"reppDnsResolverClass=" + pulsarRackResolver,
}

// arPolicy is the writer's placement policy, the bookies' own.
var arPolicy = ledger.PlacementPolicy{Kind: ledger.RackAware, MinNumRacksPerWriteQuorum: arMinRacks,
	EnforceMinNumRacksPerWriteQuorum: true}

// arRackOf is bookie i's rack: bookies 0 and 3 in /rack1, 1 and 4 in
// /rack2, 2 and 5 in /rack3.
func arRackOf(i int) string { return "/rack" + strconv.Itoa(i%arRacks+1) }

// writeRackInfo stores the racks as Pulsar's rack document in /bookies
// (docs/bookkeeper-protocol.md §8.6, "Racks") and returns them. The
// bookies' workers and the writer read it afresh at every choice.
func writeRackInfo(ctx context.Context, r *LedgerRun) (map[ledger.BookieID]string, error) {
	racks := map[ledger.BookieID]string{}
	group := map[string]map[string]string{}
	for _, b := range r.Bookies.List {
		rack := arRackOf(b.Index)
		racks[ledger.BookieID(b.ID)] = rack
		group[b.ID] = map[string]string{"rack": strings.TrimPrefix(rack, "/"), "hostname": "127.0.0.1"}
	}
	doc, err := json.Marshal(map[string]map[string]map[string]string{"default": group})
	if err != nil {
		return nil, err
	}
	zk, err := r.ZKAddrs(harnessNode)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := zkclient.Dial(ctx, zk[0], zkclient.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, _, err := conn.Create(ctx, metadata.DefaultRackInfoPath, doc, zkclient.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create %s: %w", metadata.DefaultRackInfoPath, err)
	}
	return racks, nil
}

// rackViolations returns what breaks the rack rule in md: every write set
// of every segment that holds entries must be on live bookies and span
// min(Qw, minRacks) racks (a bookie with no rack counts as breaking it,
// as enforcement never uses the default rack). It looks at the first E
// entries of each segment, which between them have every write set the
// segment has, and returns how many write sets it looked at.
func rackViolations(md ledger.Metadata, racks map[ledger.BookieID]string, live func(ledger.BookieID) bool,
	minRacks int) (sets int, out []string) {
	need := min(md.WriteQuorum, minRacks)
	for i, seg := range md.Segments {
		last := md.LastEntryID
		if i+1 < len(md.Segments) {
			last = md.Segments[i+1].FirstEntryID - 1
		}
		for e := seg.FirstEntryID; e <= last && e < seg.FirstEntryID+int64(md.EnsembleSize); e++ {
			ws := md.WriteSetBookies(e)
			sets++
			var inRacks []string
			for _, b := range ws {
				if !live(b) {
					out = append(out, fmt.Sprintf("segment %d, entry %d: write set %v has %s, not live", seg.FirstEntryID, e, ws, b))
				}
				if rack := racks[b]; rack == "" {
					out = append(out, fmt.Sprintf("segment %d, entry %d: write set %v has %s, in no rack", seg.FirstEntryID, e, ws, b))
				} else if !slices.Contains(inRacks, rack) {
					inRacks = append(inRacks, rack)
				}
			}
			if len(inRacks) < need {
				out = append(out, fmt.Sprintf("segment %d, entry %d: write set %v spans racks %v, want %d",
					seg.FirstEntryID, e, ws, inRacks, need))
			}
		}
	}
	return sets, out
}

// checkRacks reports a ledger whose write sets, after autorecovery, break
// the rack rule or name a bookie that is not registered; it returns how
// many write sets it looked at.
func checkRacks(ctx context.Context, r *LedgerRun, store *metadata.Store, wl *WrittenLedger,
	racks map[ledger.BookieID]string, reg metadata.Registry) int {
	md, _, err := store.Read(ctx, wl.ID)
	if err != nil {
		r.Report.Violate("bk-placement", "ledger %d: read the metadata: %v", wl.ID, err)
		return 0
	}
	live := func(b ledger.BookieID) bool {
		return slices.Contains(reg.Writable, b) || slices.Contains(reg.ReadOnly, b)
	}
	sets, bad := rackViolations(md, racks, live, arMinRacks)
	if len(bad) > 0 {
		r.Report.Violate("bk-placement", "ledger %d: %d problems with the rack rule after autorecovery: %v",
			wl.ID, len(bad), bad[:min(len(bad), 5)])
	}
	return sets
}
