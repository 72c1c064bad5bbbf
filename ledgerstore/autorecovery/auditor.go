package autorecovery

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// lostBookie is a bookie the auditor has seen gone.
type lostBookie struct {
	since   time.Time
	audited bool // its ledgers were marked since it went
}

// auditor is the cluster's one auditor while its process holds the lowest
// vote (BookKeeper's Auditor): it marks the ledgers of bookies gone for
// lostBookieRecoveryDelay.
type auditor struct {
	cfg   Config
	mgr   *Manager
	store *metadata.Store
	log   *slog.Logger
	// marked counts the markers written, for tests and the daemon's owner.
	marked func(n int)
	// placed receives each placement check's result.
	placed func(PlacementCheck)
	racks  *rackSource
}

// run audits until ctx ends.
func (a *auditor) run(ctx context.Context) {
	if err := a.mgr.InitDelay(ctx, int(a.cfg.LostBookieRecoveryDelay/time.Second)); err != nil {
		a.log.Warn("auditor cannot store lostBookieRecoveryDelay", "err", err)
	}
	delay, delayChanged := a.delay(ctx)
	regs := a.store.WatchBookies(ctx)
	lost := map[ledger.BookieID]*lostBookie{}
	var live []ledger.BookieID
	first := true
	bookieCheck := ticker(a.cfg.AuditorPeriodicBookieCheckInterval)
	allCheck := ticker(a.cfg.AuditorPeriodicCheckInterval)
	placement := ticker(a.cfg.AuditorPeriodicPlacementPolicyCheckInterval)
	defer stopTicker(bookieCheck)
	defer stopTicker(allCheck)
	defer stopTicker(placement)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due := a.nextDue(lost, delay)
		timer.Reset(max(time.Until(due), 0))
		select {
		case <-ctx.Done():
			return
		case reg, ok := <-regs:
			if !ok {
				return
			}
			now := time.Now()
			next := append(slices.Clone(reg.Writable), reg.ReadOnly...)
			for _, b := range live {
				if !slices.Contains(next, b) && lost[b] == nil {
					a.log.Info("bookie gone", "bookie", b, "delay", delay)
					lost[b] = &lostBookie{since: now}
				}
			}
			for _, b := range next {
				delete(lost, b)
			}
			live = next
			if first {
				// Bookies that were gone before this auditor started.
				first = false
				for _, b := range a.indexBookies(ctx) {
					if !slices.Contains(live, b) && lost[b] == nil {
						lost[b] = &lostBookie{since: now}
					}
				}
			}
		case <-delayChanged:
			prev := delay
			delay, delayChanged = a.delay(ctx)
			a.log.Info("lostBookieRecoveryDelay changed", "delay", delay)
			if delay == 0 || delay == prev {
				// Written back unchanged (or set to 0): BookKeeper's
				// signal to audit every lost bookie now (triggeraudit),
				// found afresh, as the registry's news of a loss may not
				// have reached this loop yet.
				a.findLost(ctx, lost)
				a.audit(ctx, lost, func(*lostBookie) bool { return true })
			}
		case <-timer.C:
			a.audit(ctx, lost, func(l *lostBookie) bool { return !l.audited && !time.Now().Before(l.since.Add(delay)) })
		case <-tickerC(bookieCheck):
			a.findLost(ctx, lost)
			a.audit(ctx, lost, func(*lostBookie) bool { return true })
		case <-tickerC(allCheck):
			a.findLost(ctx, lost)
			a.audit(ctx, lost, func(*lostBookie) bool { return true })
			a.checkAll(ctx)
		case <-tickerC(placement):
			a.checkPlacement(ctx)
		}
	}
}

// nextDue returns when the next lost bookie's delay ends (far away if no
// bookie waits).
func (a *auditor) nextDue(lost map[ledger.BookieID]*lostBookie, delay time.Duration) time.Time {
	due := time.Now().Add(time.Hour)
	for _, l := range lost {
		if !l.audited && l.since.Add(delay).Before(due) {
			due = l.since.Add(delay)
		}
	}
	return due
}

// delay reads lostBookieRecoveryDelay from the tree (the configured value
// if the tree has none or it does not decode) and watches it.
func (a *auditor) delay(ctx context.Context) (time.Duration, <-chan struct{}) {
	seconds, ok, changed, err := a.mgr.Delay(ctx)
	if err != nil {
		a.log.Warn("auditor cannot read lostBookieRecoveryDelay; using the configured one", "err", err)
	}
	if !ok || err != nil || seconds < 0 {
		return a.cfg.LostBookieRecoveryDelay, changed
	}
	return time.Duration(seconds) * time.Second, changed
}

// audit marks every ledger with a segment on a lost bookie that pick
// chooses, and records those bookies as audited if it succeeds. It asks
// the registry once more first: a bookie back by now is not lost.
func (a *auditor) audit(ctx context.Context, lost map[ledger.BookieID]*lostBookie, pick func(*lostBookie) bool) {
	reg, err := a.store.Bookies(ctx)
	if err != nil {
		a.log.Warn("audit: cannot read the registry", "err", err)
		return
	}
	var bookies []ledger.BookieID
	for b, l := range lost {
		if pick(l) && !slices.Contains(reg.Writable, b) && !slices.Contains(reg.ReadOnly, b) {
			bookies = append(bookies, b)
		}
	}
	if len(bookies) == 0 {
		return
	}
	slices.Sort(bookies)
	n, err := MarkBookies(ctx, a.store, a.mgr, bookies)
	if err != nil {
		a.log.Warn("audit failed; the next one retries", "bookies", bookies, "err", err)
		return
	}
	a.log.Info("audit marked the ledgers of lost bookies", "bookies", bookies, "ledgers", n)
	for _, b := range bookies {
		lost[b].audited = true
	}
	if a.marked != nil {
		a.marked(n)
	}
}

// findLost adds to lost every bookie named in a ledger's metadata that the
// registry does not list, as BookKeeper's full bookie audit finds them:
// from the metadata and the registry as they are now, not from the
// registry changes this auditor has seen so far.
func (a *auditor) findLost(ctx context.Context, lost map[ledger.BookieID]*lostBookie) {
	reg, err := a.store.Bookies(ctx)
	if err != nil {
		a.log.Warn("auditor cannot read the registry", "err", err)
		return
	}
	now := time.Now()
	for _, b := range a.indexBookies(ctx) {
		if !slices.Contains(reg.Writable, b) && !slices.Contains(reg.ReadOnly, b) && lost[b] == nil {
			lost[b] = &lostBookie{since: now}
		}
	}
}

// indexBookies returns every bookie named in any ledger's metadata.
func (a *auditor) indexBookies(ctx context.Context) []ledger.BookieID {
	mds, err := readAll(ctx, a.store)
	if err != nil {
		a.log.Warn("auditor cannot read the ledgers", "err", err)
	}
	var out []ledger.BookieID
	for _, md := range mds {
		for _, seg := range md.Segments {
			for _, b := range seg.Bookies {
				if !slices.Contains(out, b) {
					out = append(out, b)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// readAll reads the metadata of every ledger (the auditor's index, built
// afresh each time as BookKeeper's BookieLedgerIndexer does). Ledgers
// deleted during the walk are left out; what was read comes back even with
// an error.
func readAll(ctx context.Context, store *metadata.Store) (map[int64]ledger.Metadata, error) {
	ids, err := store.List(ctx)
	out := make(map[int64]ledger.Metadata, len(ids))
	for _, id := range ids {
		md, _, rerr := store.Read(ctx, id)
		if errors.Is(rerr, metadata.ErrNoLedger) {
			continue
		}
		if rerr != nil {
			return out, rerr
		}
		out[id] = md
	}
	return out, err
}

// MarkBookies marks under-replicated every ledger that has any of bookies
// in any segment, listing which of them it has, and returns how many it
// marked. The auditor calls it for bookies gone past the delay; the
// recover and decommission tools call it for the bookie they are given.
func MarkBookies(ctx context.Context, store *metadata.Store, mgr *Manager, bookies []ledger.BookieID) (int, error) {
	mds, err := readAll(ctx, store)
	if err != nil {
		return 0, err
	}
	on := ledgersOn(mds, func(b ledger.BookieID) bool { return slices.Contains(bookies, b) })
	ids := make([]int64, 0, len(on))
	for id := range on {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := mgr.Mark(ctx, id, on[id]); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

func ticker(d time.Duration) *time.Ticker {
	if d <= 0 {
		return nil
	}
	return time.NewTicker(d)
}

func stopTicker(t *time.Ticker) {
	if t != nil {
		t.Stop()
	}
}

// tickerC returns t's channel, or nil (never ready) for no ticker.
func tickerC(t *time.Ticker) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

// LedgersOn returns the ledgers that have bookie b in any segment, sorted:
// what decommissioning b waits to see empty.
func LedgersOn(ctx context.Context, store *metadata.Store, b ledger.BookieID) ([]int64, error) {
	mds, err := readAll(ctx, store)
	if err != nil {
		return nil, err
	}
	on := ledgersOn(mds, func(x ledger.BookieID) bool { return x == b })
	ids := make([]int64, 0, len(on))
	for id := range on {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// checkAll is the periodic check of every ledger (auditorPeriodicCheckInterval):
// it samples each final fragment on a live bookie (checker.go) and marks the
// ledgers whose live bookies lack entries they should hold.
func (a *auditor) checkAll(ctx context.Context) {
	mds, err := readAll(ctx, a.store)
	if err != nil {
		a.log.Warn("ledger check: cannot read the ledgers", "err", err)
		return
	}
	reg, err := a.store.Bookies(ctx)
	if err != nil {
		a.log.Warn("ledger check: cannot read the registry", "err", err)
		return
	}
	live := func(b ledger.BookieID) bool {
		return slices.Contains(reg.Writable, b) || slices.Contains(reg.ReadOnly, b)
	}
	c := newConns(a.store, a.cfg.Client)
	defer c.close()
	ids := make([]int64, 0, len(mds))
	for id := range mds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	marked := 0
	for _, id := range ids {
		var replicas []string
		for _, f := range c.missingFragments(ctx, id, mds[id], live) {
			if !slices.Contains(replicas, string(f.bookie)) {
				replicas = append(replicas, string(f.bookie))
			}
		}
		if len(replicas) == 0 {
			continue
		}
		if err := a.mgr.Mark(ctx, id, replicas); err != nil {
			a.log.Warn("ledger check: cannot mark", "ledger", id, "err", err)
			return
		}
		marked++
	}
	if marked > 0 {
		a.log.Info("ledger check marked ledgers whose bookies lack entries", "ledgers", marked)
		if a.marked != nil {
			a.marked(marked)
		}
	}
}
