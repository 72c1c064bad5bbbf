package bookie

import (
	"errors"
	"fmt"
	"math"
	"time"

	"keeper/ledgerstore/bookie/entrystore"
)

// GCReport says what one garbage collection pass did.
type GCReport struct {
	LocalLedgers    int // ledgers stored here when the pass started
	MetadataLedgers int // ledgers the metadata store listed
	entrystore.GCStats
}

// errNoMetadata refuses garbage collection on a bookie without a metadata
// store: nothing says which ledgers are gone.
var errNoMetadata = errors.New("bookie: garbage collection needs the metadata store")

// gcLoop runs garbage collection every gcWaitTime and minor and major
// compaction at their intervals.
func (b *Bookie) gcLoop() {
	defer b.loops.Done()
	ticker := func(enabled bool, d time.Duration) <-chan time.Time {
		if !enabled {
			return nil
		}
		t := time.NewTicker(d)
		go func() { <-b.stopping; t.Stop() }()
		return t.C
	}
	gcTick := ticker(b.md != nil && b.cfg.GCWaitTime > 0, b.cfg.GCWaitTime)
	minorTick := ticker(b.cfg.minorEnabled(), b.cfg.MinorCompactionInterval)
	majorTick := ticker(b.cfg.majorEnabled(), b.cfg.MajorCompactionInterval)
	for {
		var err error
		select {
		case <-b.stopping:
			return
		case <-gcTick:
			err = b.gcPass(func() error { _, err := b.GC(); return err })
		case f := <-b.gcForceCh:
			err = b.gcPass(func() error { return b.forcedGC(f) })
		case <-b.indexCompactCh:
			err = b.gcPass(b.compactIndex)
		case <-minorTick:
			if b.minorSuspended.Load() {
				b.log.Info("minor compaction suspended by an operator")
				continue
			}
			err = b.gcPass(func() error { _, err := b.Compact(false); return err })
		case <-majorTick:
			if major, _ := b.CompactionSuspended(); major {
				b.log.Info("major compaction suspended: by an operator, or a ledger directory is above diskUsageWarnThreshold")
				continue
			}
			err = b.gcPass(func() error { _, err := b.Compact(true); return err })
		}
		if err != nil {
			b.log.Warn("garbage collection failed", "err", err)
		}
	}
}

// gcPass runs one pass of the gc goroutine and times it
// (bookie_gc_THREAD_RUNTIME, which BookKeeper takes over each run of its
// garbage collector thread).
func (b *Bookie) gcPass(pass func() error) error {
	began := time.Now()
	err := pass()
	observe(b.m.gcThreadRuntime, began, err == nil)
	return err
}

// noteEntryLogs sets the entry log gauges from the store: how many logs,
// their record bytes and, of those, the bytes of ledgers still stored
// (BookKeeper's ACTIVE_ENTRY_LOG_TOTAL, ENTRY_LOG_SPACE_BYTES and
// ACTIVE_ENTRY_LOG_SPACE_BYTES, which its GC thread sets too).
func (b *Bookie) noteEntryLogs() {
	usage := b.store.LogUsage()
	var total, live int64
	for _, u := range usage {
		total += u.TotalBytes
		live += u.LiveBytes
	}
	b.m.activeEntryLogs.Set(float64(len(usage)))
	b.m.entryLogSpace.Set(float64(total))
	b.m.activeEntryLogSpace.Set(float64(live))
}

// GC runs one garbage collection pass now (docs/bookkeeper-protocol.md §8.3, Appendix A item 9):
// it snapshots the ledgers stored here BEFORE listing the metadata store,
// so that a ledger created meanwhile cannot pass for garbage; lists every
// ledger's metadata (metadata.Store.List); and if the listing is
// incomplete in any way (metadata.ErrIncompleteListing) keeps everything.
// Each ledger missing from the listing is confirmed missing with a direct
// read of its znode (BookKeeper's verifyMetadataOnGc) before it is deleted
// here. The entry logs left without live data are removed.
func (b *Bookie) GC() (GCReport, error) {
	if b.md == nil {
		return GCReport{}, errNoMetadata
	}
	b.gcMu.Lock()
	defer b.gcMu.Unlock()
	began := time.Now()
	snapshot := b.store.Ledgers()
	rep := GCReport{LocalLedgers: len(snapshot)}
	ctx := b.life
	ids, err := b.md.List(ctx)
	if err != nil {
		observe(b.m.gcLedgerRuntime, began, false)
		return rep, fmt.Errorf("bookie: garbage collection keeps every ledger: %w", err)
	}
	rep.MetadataLedgers = len(ids)
	live := make(map[int64]bool, len(ids))
	for _, id := range ids {
		live[id] = true
	}
	stats, err := b.store.GC(snapshot, func(id int64) bool {
		if live[id] {
			return true
		}
		exists, err := b.md.Exists(ctx, id)
		if err != nil {
			b.log.Warn("cannot confirm that a ledger is gone; keeping it", "ledger", id, "err", err)
			return true
		}
		return exists
	})
	rep.GCStats = stats
	b.m.gcDeletedLedgers.Add(float64(stats.LedgersDeleted))
	b.m.reclaimedDeletion.Add(float64(stats.BytesFreed))
	b.noteEntryLogs()
	b.m.activeLedgers.Set(float64(len(b.store.Ledgers())))
	if stats.LedgersDeleted > 0 || stats.LogsRemoved > 0 {
		b.log.Info("garbage collected", "ledgers", stats.LedgersDeleted, "logs", stats.LogsRemoved, "bytes", stats.BytesFreed,
			"duration", time.Since(began).Round(time.Millisecond))
	}
	observe(b.m.gcLedgerRuntime, began, err == nil)
	if err != nil {
		b.fail(err) // a failed index write poisons the store
	}
	return rep, err
}

// usageBucketCount is how many live-ratio buckets a compaction sorts
// the sealed entry logs into, as BookKeeper's GC thread does (10: one per
// 10%).
const usageBucketCount = 10

// usageBucket is the bucket of a live ratio: floor(ratio*10), with a
// full log in the last bucket (BookKeeper's calculateUsageIndex).
func usageBucket(liveRatio float64) int {
	return min(usageBucketCount-1, max(0, int(math.Floor(liveRatio*usageBucketCount))))
}

// Compact runs a minor (major false) or major compaction now: the live
// entries of every sealed entry log whose live ratio is below the
// threshold are copied forward, a step of CompactionStepBytes at a time,
// and the emptied logs removed. Adds go on between steps; a shutdown stops
// it between steps.
func (b *Bookie) Compact(major bool) (entrystore.CompactStats, error) {
	threshold := b.cfg.MinorCompactionThreshold
	if major {
		threshold = b.cfg.MajorCompactionThreshold
	}
	b.gcMu.Lock()
	defer b.gcMu.Unlock()
	b.gcStat.begin(major)
	defer b.gcStat.end(major)
	var total entrystore.CompactStats
	var victims []entrystore.LogUsage
	var buckets [usageBucketCount]int
	sealed := 0
	for _, u := range b.store.LogUsage() {
		if !u.Sealed || !u.Known {
			continue
		}
		sealed++
		buckets[usageBucket(u.LiveRatio())]++
		if u.LiveRatio() < threshold {
			victims = append(victims, u)
		}
	}
	for i, n := range buckets {
		b.m.usageBuckets[i].Set(float64(n))
	}
	began := time.Now()
	lastReport := began
	for i, u := range victims {
		for done := false; !done; {
			select {
			case <-b.stopping:
				return total, nil
			default:
			}
			st, finished, err := b.store.CompactStep(u.LogID, b.cfg.CompactionStepBytes)
			total.LogsCompacted += st.LogsCompacted
			total.EntriesMoved += st.EntriesMoved
			total.BytesMoved += st.BytesMoved
			total.BytesFreed += st.BytesFreed
			if err != nil {
				observe(b.m.compactRuntime, began, false)
				b.fail(err)
				return total, err
			}
			done = finished
			if now := time.Now(); now.Sub(lastReport) >= b.cfg.ProgressInterval {
				lastReport = now
				b.log.Info("compacting entry logs", "major", major, "log", u.LogID, "logsDone", i, "logsToCompact", len(victims),
					"entriesMoved", total.EntriesMoved, "bytesMoved", total.BytesMoved,
					"elapsed", now.Sub(began).Round(time.Millisecond))
			}
		}
	}
	observe(b.m.compactRuntime, began, true)
	if sealed > 0 {
		b.m.compactRatio.Set(float64(total.LogsCompacted) / float64(sealed))
	} else {
		b.m.compactRatio.Set(0)
	}
	if major {
		b.m.majorCompactions.Add(float64(total.LogsCompacted))
	} else {
		b.m.minorCompactions.Add(float64(total.LogsCompacted))
	}
	b.m.reclaimedCompaction.Add(float64(max(total.BytesFreed-total.BytesMoved, 0)))
	b.noteEntryLogs()
	if total.LogsCompacted > 0 {
		b.log.Info("compacted entry logs", "major", major, "logs", total.LogsCompacted,
			"entriesMoved", total.EntriesMoved, "bytesFreed", total.BytesFreed,
			"duration", time.Since(began).Round(time.Millisecond))
	}
	return total, nil
}
