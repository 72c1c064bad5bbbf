package autorecovery

import (
	"context"
	"slices"

	"keeper/ledgerstore/ledger"
)

// PlacementCheck is what the auditor's last placement policy check found
// (BookKeeper's auditor gauges NUM_LEDGERS_NOT_ADHERING_TO_PLACEMENT_POLICY
// and the closed ledgers it audited).
type PlacementCheck struct {
	Runs int64 // checks completed since the daemon started
	// NotAdhering counts the closed ledgers with a segment whose ensemble
	// does not meet the placement policy
	// (NUM_LEDGERS_NOT_ADHERING_TO_PLACEMENT_POLICY).
	NotAdhering int
	// Audited counts the closed ledgers checked.
	Audited int
}

// placementCheck is auditorPeriodicPlacementPolicyCheckInterval's check,
// as BookKeeper's auditor runs it: every closed ledger's segments are
// asked of the placement policy, with the racks as they are now and the
// bookies registered now (a bookie no longer registered has no known
// rack). It marks nothing: it counts and warns.
func placementCheck(mds map[int64]ledger.Metadata, policy ledger.PlacementPolicy, c ledger.Candidates) (
	res PlacementCheck, bad map[int64][]int64) {
	ids := make([]int64, 0, len(mds))
	for id := range mds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	bad = map[int64][]int64{}
	for _, id := range ids {
		md := mds[id]
		if md.State != ledger.StateClosed {
			continue
		}
		res.Audited++
		for _, seg := range md.Segments {
			if !policy.Adheres(seg.Bookies, md.WriteQuorum, c) {
				bad[id] = append(bad[id], seg.FirstEntryID)
			}
		}
		if len(bad[id]) > 0 {
			res.NotAdhering++
		}
	}
	return res, bad
}

// checkPlacement runs the placement check over the tree as it is now.
func (a *auditor) checkPlacement(ctx context.Context) {
	mds, err := readAll(ctx, a.store)
	if err != nil {
		a.log.Warn("placement check: cannot read the ledgers", "err", err)
		return
	}
	reg, err := a.store.Bookies(ctx)
	if err != nil {
		a.log.Warn("placement check: cannot read the registry", "err", err)
		return
	}
	c := ledger.Candidates{Available: append(slices.Clone(reg.Writable), reg.ReadOnly...), ReadOnly: reg.ReadOnly,
		Racks: a.racks.load(ctx, a.store, a.log)}
	res, bad := placementCheck(mds, a.cfg.Placement, c)
	for id, firsts := range bad {
		a.log.Warn("ledger does not adhere to the placement policy", "ledger", id, "segments", firsts)
	}
	a.log.Info("placement check done", "audited", res.Audited, "notAdhering", res.NotAdhering)
	if a.placed != nil {
		a.placed(res)
	}
}
