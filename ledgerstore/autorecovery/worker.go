package autorecovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// maxDeferred bounds the ledgers one worker keeps locked while it waits:
// open ledgers in their grace period and ledgers backing off after a
// failure. Past it the worker releases a lock at once instead, and the
// ledger waits for its next turn unlocked.
const maxDeferred = 1024

// deferral is a locked ledger the worker comes back to at a set time.
type deferral struct {
	lock  Lock
	at    time.Time
	fence bool // the grace period of an open ledger: recover it if still needed
}

// worker is a replication worker (BookKeeper's ReplicationWorker).
type worker struct {
	cfg    Config
	mgr    *Manager
	store  *metadata.Store
	client *ledgerclient.Client
	conns  *conns
	log    *slog.Logger
	rng    *rand.Rand
	racks  *rackSource
	// beforeSwap, if set, runs between copying a fragment and the
	// compare-and-set that adopts the copy (tests race a writer there).
	beforeSwap func(ledgerID int64)

	deferred map[int64]deferral

	statsMu sync.Mutex // guards stats: the daemon's owner reads them
	stats   Stats
}

func (w *worker) count(f func(*Stats)) {
	w.statsMu.Lock()
	f(&w.stats)
	w.statsMu.Unlock()
}

func (w *worker) snapshot() Stats {
	w.statsMu.Lock()
	defer w.statsMu.Unlock()
	return w.stats
}

// Stats counts what a worker did.
type Stats struct {
	LedgersReplicated int
	FragmentsCopied   int
	EntriesCopied     int
	BytesCopied       int64
	SwapConflicts     int // compare-and-sets lost to another writer of the metadata
	LedgersFenced     int // open ledgers recovered after the grace period
}

func newWorker(cfg Config, mgr *Manager) *worker {
	return &worker{cfg: cfg, mgr: mgr, store: cfg.Store, client: cfg.Client, conns: newConns(cfg.Store, cfg.Client),
		log: cfg.Logger, rng: rand.New(rand.NewPCG(cfg.Seed, 0xa11ce)),
		racks: &rackSource{static: cfg.Racks, path: cfg.RackInfoPath}, deferred: map[int64]deferral{}}
}

// run takes marked ledgers and replicates them until ctx ends. It waits
// PollInterval between looks at an empty tree, and while replication is
// disabled it waits for the switch.
func (w *worker) run(ctx context.Context) {
	defer w.conns.close()
	defer w.releaseAll()
	var on bool
	var changed <-chan struct{} // armed watch on the switch; nil: none
	for ctx.Err() == nil {
		select {
		case <-changed:
			changed = nil
		default:
		}
		if changed == nil {
			// One armed watch at a time: the client keeps every watch
			// until its znode changes.
			var err error
			if on, changed, err = w.mgr.Enabled(ctx); err != nil {
				w.log.Warn("replication worker cannot read the switch", "err", err)
				changed = nil
				w.sleep(ctx, w.cfg.RereplicateBackoff)
				continue
			}
		}
		if !on {
			w.log.Info("ledger replication is disabled; waiting")
			select {
			case <-changed:
			case <-ctx.Done():
			}
			continue
		}
		if w.step(ctx) {
			continue
		}
		w.sleep(ctx, min(w.cfg.PollInterval, w.untilNextDeferral()))
	}
}

// step does one piece of work: a due deferral, or the next marked ledger.
// It reports whether it found any.
func (w *worker) step(ctx context.Context) bool {
	if d, ok := w.dueDeferral(); ok {
		delete(w.deferred, d.lock.LedgerID)
		if d.fence {
			w.fenceIfStillOpen(ctx, d.lock.LedgerID)
		}
		w.release(ctx, d.lock)
		return true
	}
	lock, ok, err := w.mgr.Acquire(ctx)
	if err != nil {
		w.log.Warn("replication worker cannot take work", "err", err)
		return false
	}
	if !ok {
		return false
	}
	w.handle(ctx, lock)
	return true
}

// handle replicates one locked ledger and then unmarks it, releases it, or
// keeps it locked for later.
func (w *worker) handle(ctx context.Context, lock Lock) {
	done, waitOpen, err := w.replicate(ctx, lock.LedgerID)
	switch {
	case err != nil:
		w.log.Warn("ledger replication failed; retrying later", "ledger", lock.LedgerID, "err", err)
		w.later(ctx, deferral{lock: lock, at: time.Now().Add(w.cfg.RereplicateBackoff)})
	case waitOpen:
		w.log.Info("ledger's open last segment misses a bookie; waiting for its writer",
			"ledger", lock.LedgerID, "grace", w.cfg.OpenLedgerRereplicationGracePeriod)
		w.later(ctx, deferral{lock: lock, at: time.Now().Add(w.cfg.OpenLedgerRereplicationGracePeriod), fence: true})
	case done:
		if err := w.mgr.MarkReplicated(ctx, lock); err != nil {
			w.log.Warn("cannot unmark a replicated ledger", "ledger", lock.LedgerID, "err", err)
		}
		w.count(func(s *Stats) { s.LedgersReplicated++ })
	}
}

// later keeps lock until d.at, or releases it at once past maxDeferred.
func (w *worker) later(ctx context.Context, d deferral) {
	if len(w.deferred) >= maxDeferred {
		w.release(ctx, d.lock)
		return
	}
	w.deferred[d.lock.LedgerID] = d
}

func (w *worker) dueDeferral() (deferral, bool) {
	now := time.Now()
	ids := make([]int64, 0, len(w.deferred))
	for id := range w.deferred {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if d := w.deferred[id]; !d.at.After(now) {
			return d, true
		}
	}
	return deferral{}, false
}

func (w *worker) untilNextDeferral() time.Duration {
	next := time.Duration(1<<63 - 1)
	for _, d := range w.deferred {
		next = min(next, time.Until(d.at))
	}
	return max(next, 0)
}

func (w *worker) release(ctx context.Context, l Lock) {
	if err := w.mgr.Release(ctx, l); err != nil {
		w.log.Warn("cannot release a ledger lock", "ledger", l.LedgerID, "err", err)
	}
}

// releaseAll gives up every lock still held, on the way out.
func (w *worker) releaseAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for id, d := range w.deferred {
		w.release(ctx, d.lock)
		delete(w.deferred, id)
	}
}

func (w *worker) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// liveBookies returns a test for "registered, writable or read-only".
func (w *worker) liveBookies(ctx context.Context) (func(ledger.BookieID) bool, metadata.Registry, error) {
	reg, err := w.store.Bookies(ctx)
	if err != nil {
		return nil, reg, err
	}
	return func(b ledger.BookieID) bool {
		return slices.Contains(reg.Writable, b) || slices.Contains(reg.ReadOnly, b)
	}, reg, nil
}

// replicate copies every final fragment of ledger id that lives on a
// bookie no longer registered, or on a live bookie that lacks it (the
// ledger checker's sample), and swaps the bookie out of its segment.
// done means nothing of the ledger is left on a lost bookie (or the
// ledger is gone); waitOpen means only the open last segment is, which
// the writer gets a grace period to fix.
func (w *worker) replicate(ctx context.Context, id int64) (done, waitOpen bool, err error) {
	md, _, err := w.store.Read(ctx, id)
	if errors.Is(err, metadata.ErrNoLedger) {
		return true, false, nil // deleted: nothing to replicate
	}
	if err != nil {
		return false, false, err
	}
	live, _, err := w.liveBookies(ctx)
	if err != nil {
		return false, false, err
	}
	lost, openMissing := lostFragments(md, live)
	lost = append(lost, w.conns.missingFragments(ctx, id, md, live)...)
	for _, f := range lost {
		if err := w.replaceFragment(ctx, id, f, live); err != nil {
			return false, false, err
		}
	}
	return !openMissing, openMissing, nil
}

// maxSwapRounds bounds the re-reads after lost compare-and-sets on one
// fragment: each loss means a writer or another worker changed the ledger
// meanwhile, which happens a handful of times at most.
const maxSwapRounds = 10

// replaceFragment copies fragment f to a bookie outside its segment's
// ensemble and swaps f's bookie for it by compare-and-set. A lost
// compare-and-set re-reads the metadata: if the segment no longer has the
// lost bookie at f's position, someone else replaced it and the copy is
// moot; if the target has joined the segment meanwhile, a new target is
// copied to; otherwise the swap is tried again on the new version.
func (w *worker) replaceFragment(ctx context.Context, id int64, f fragment, live func(ledger.BookieID) bool) error {
	var target ledger.BookieID
	var tried []ledger.BookieID
	for range maxSwapRounds {
		md, v, err := w.store.Read(ctx, id)
		if errors.Is(err, metadata.ErrNoLedger) {
			return nil
		}
		if err != nil {
			return err
		}
		i := slices.IndexFunc(md.Segments, func(s ledger.Segment) bool { return s.FirstEntryID == f.first })
		if i < 0 || md.Segments[i].Bookies[f.pos] != f.bookie {
			return nil // replaced by someone else
		}
		f.segment = i
		if last, final := segmentEnd(md, i); !final || last != f.last {
			return fmt.Errorf("autorecovery: ledger %d: the segment at %d changed its end", id, f.first)
		}
		seg := md.Segments[i]
		if target == "" || slices.Contains(seg.Bookies, target) {
			if target, err = w.chooseTarget(ctx, md.WriteQuorum, seg, f.pos, tried); err != nil {
				return fmt.Errorf("autorecovery: ledger %d: replace %s: %w", id, f.bookie, err)
			}
			tried = append(tried, target)
			start := time.Now()
			n, err := w.conns.copyFragment(ctx, id, md, f, target, live, w.cfg.EntryBatchSize)
			if err != nil {
				return err
			}
			w.count(func(s *Stats) { s.FragmentsCopied++; s.EntriesCopied += n.entries; s.BytesCopied += n.bytes })
			w.log.Info("copied a fragment", "ledger", id, "first", f.first, "last", f.last, "from", f.bookie,
				"to", target, "entries", n.entries, "bytes", n.bytes, "took", time.Since(start))
		}
		if w.beforeSwap != nil {
			w.beforeSwap(id)
		}
		next := md.Clone()
		next.Segments[i].Bookies[f.pos] = target
		_, err = w.store.Write(ctx, id, next, v)
		if err == nil {
			w.log.Info("replaced a lost bookie", "ledger", id, "segment", f.first, "lost", f.bookie, "by", target)
			return nil
		}
		if !errors.Is(err, metadata.ErrBadVersion) {
			return err
		}
		w.count(func(s *Stats) { s.SwapConflicts++ })
	}
	return fmt.Errorf("autorecovery: ledger %d: the metadata keeps changing under the swap", id)
}

// chooseTarget picks a writable bookie for position pos of the segment,
// outside its ensemble and the targets already tried, as the placement
// policy replaces a bookie (BookKeeper's replaceBookie): the rack-aware
// policy first looks in the lost bookie's rack.
func (w *worker) chooseTarget(ctx context.Context, writeQuorum int, seg ledger.Segment, pos int,
	tried []ledger.BookieID) (ledger.BookieID, error) {
	reg, err := w.store.Bookies(ctx)
	if err != nil {
		return "", err
	}
	c := ledger.Candidates{Available: append(slices.Clone(reg.Writable), reg.ReadOnly...), ReadOnly: reg.ReadOnly,
		Racks: w.racks.load(ctx, w.store, w.log)}
	picked, adheres, err := w.cfg.Placement.ReplaceBookie(writeQuorum, seg.Bookies, pos, c, tried, w.rng)
	if err != nil {
		return "", err
	}
	if !adheres && len(c.Racks) > 0 {
		w.log.Warn("replacement does not adhere to the placement policy", "segment", seg.FirstEntryID,
			"lost", seg.Bookies[pos], "by", picked)
	}
	return picked, nil
}

// fenceIfStillOpen recovers (fences and closes) ledger id if its open last
// segment still has a bookie that is not registered once the grace period
// is over; the ledger stays marked, and its now final fragments are copied
// on its next turn.
func (w *worker) fenceIfStillOpen(ctx context.Context, id int64) {
	md, _, err := w.store.Read(ctx, id)
	if err != nil {
		return
	}
	live, _, err := w.liveBookies(ctx)
	if err != nil {
		return
	}
	if _, openMissing := lostFragments(md, live); !openMissing {
		return
	}
	if w.client == nil {
		w.log.Warn("cannot recover an open ledger: no ledger client", "ledger", id)
		return
	}
	w.log.Info("recovering an open ledger after the grace period", "ledger", id)
	if _, err := w.client.Open(ctx, id, md.Password); err != nil {
		w.log.Warn("recovery of an open ledger failed", "ledger", id, "err", err)
		return
	}
	w.count(func(s *Stats) { s.LedgersFenced++ })
}
