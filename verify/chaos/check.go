package chaos

import (
	"context"
	"fmt"
	"time"

	"keeper/coordination/zxid"
)

// check runs every common check and the workloads' and scenario's own
// against the committed history, and records the figures.
func (r *Run) check(ctx context.Context, c *Committed, final Hash, digests []DigestSample) {
	rep := r.Report
	for _, p := range c.Problems {
		rep.Violate("history", "%s", p)
	}
	if d, ok := c.DigestAt(zxid.ID(final.Zxid)); !ok || d != final.Digest {
		rep.Violate("digest", "the servers agree on digest %d at %#x; replaying the logs gives %d", final.Digest, final.Zxid, d)
	}
	t0 := time.Now()
	writes := resolveWrites(r.History, c, rep)
	if r.Scenario.LinearPrefix != "" {
		n := CheckLinearizable(writes, r.Scenario.LinearPrefix, rep)
		rep.Figure("linearized", "%d", n)
	}
	CheckWriteOrder(writes, rep)
	reads := CheckReads(r.History, c, rep)
	CheckSessionOrder(r.History, rep)
	if pairs, stale := CheckSyncReads(r.History); pairs > 0 {
		rep.Figure("sync-reads-stale", "%d/%d", stale, pairs)
		if stale > 0 && r.Scenario.StrictSyncReads {
			rep.Violate("sync-reads", "%d of %d sync-then-getData pairs read data older than a write that finished before the sync", stale, pairs)
		}
	}
	cfg := r.Cluster.cfg
	slack := time.Duration(cfg.SyncLimit*cfg.TickMs+2*cfg.TickMs) * time.Millisecond
	sf := CheckSessions(r.History, c, rep, slack)
	wf := CheckWatches(r.History, c, rep)
	r.Logf("history checks took %v", time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	nodes := CheckTrees(ctx, r.Cluster.Running(), c, rep)
	r.Logf("tree walks took %v", time.Since(t0).Round(time.Millisecond))
	mismatches := CheckDigests(digests, c, rep)
	for _, w := range r.Scenario.Workloads {
		w.Check(r, c)
	}
	if r.Scenario.Check != nil {
		r.Scenario.Check(ctx, r, c)
	}
	unknown := 0
	for _, o := range r.History.Ops() {
		if o.Unknown {
			unknown++
		}
	}
	rep.Figure("txns", "%d", len(c.Txns))
	rep.Figure("reads", "%d", reads)
	rep.Figure("unknown", "%d", unknown)
	rep.Figure("nodes", "%d", nodes)
	rep.Figure("digests", "%d/%d", len(digests)-mismatches, len(digests))
	if wf.Registered > 0 {
		rep.Figure("watches", "%d/%d/%d", wf.Registered, wf.Fired, wf.Events)
	}
	if sf.Expired > 0 {
		rep.Figure("expired", "%d", sf.Expired)
		rep.Figure("expiry-late", "%s/%s", roundMs(sf.ExpiryP50), roundMs(sf.ExpiryP99))
	}
}

func roundMs(d interface{ Milliseconds() int64 }) string {
	return fmt.Sprintf("%dms", d.Milliseconds())
}
