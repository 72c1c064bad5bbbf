package bookie

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"keeper/ledgerstore/bookie/entrystore"
	"keeper/ledgerstore/bookie/journal"
)

// recover opens the journals and replays each from its last persisted
// mark into ledger storage: entries are added again (idempotent), and
// master keys, fences and explicit LACs restored (docs/bookkeeper-protocol.md §7.3). A journal is
// opened before it is replayed, so that a torn tail is cut first; damage
// anywhere else stops the start.
func (b *Bookie) recover() error {
	n := len(b.cfg.JournalDirs)
	markDirs := b.markDirs()
	b.lastMarks = make([]journal.Position, n)
	// BookKeeper starts journal log ids at the time in ms, so that they
	// grow across restarts even if journal files were lost.
	firstLogID := time.Now().UnixMilli()
	for i, dir := range b.cfg.JournalDirs {
		from, err := journal.ReadLastMark(b.cfg.FS, markDirs, journal.LastMarkName(i, n))
		if err != nil {
			return fmt.Errorf("bookie: read the journal's last mark: %w", err)
		}
		jcfg := b.cfg.journalConfig(firstLogID)
		j, err := journal.Open(b.cfg.FS, dir, jcfg)
		if err != nil {
			return fmt.Errorf("bookie: open journal %s: %w", dir, err)
		}
		b.journals = append(b.journals, newJournaler(i, dir, j, b.cfg, b.m, b.fail))
		var st replayStats
		start := time.Now()
		lastReport := start
		records := 0
		end, err := journal.Replay(b.cfg.FS, dir, from, jcfg, func(rec journal.Record) error {
			if records++; records%progressCheckRecords == 0 {
				if now := time.Now(); now.Sub(lastReport) >= b.cfg.ProgressInterval {
					lastReport = now
					b.log.Info("replaying journal", "dir", dir, "from", from.String(), "records", records,
						"entries", st.entries, "elapsed", now.Sub(start).Round(time.Millisecond))
				}
			}
			return b.replayRecord(rec, &st)
		})
		if err != nil {
			return fmt.Errorf("bookie: replay journal %s from %v: %w", dir, from, err)
		}
		if end != j.Mark() {
			return fmt.Errorf("bookie: replay of journal %s ended at %v, but its data ends at %v", dir, end, j.Mark())
		}
		b.lastMarks[i] = from
		b.log.Info("replayed journal", "dir", dir, "from", from.String(), "to", end.String(),
			"entries", st.entries, "masterKeys", st.keys, "fences", st.fences, "explicitLACs", st.lacs,
			"duration", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// DefaultProgressInterval is how often a long step logs how far it is when
// Config.ProgressInterval is zero, as the coordination server's start does.
const DefaultProgressInterval = 5 * time.Second

// progressCheckRecords is how many journal records a replay applies between
// looks at the clock for its progress line.
const progressCheckRecords = 256

// replayStats counts what a replay restored.
type replayStats struct{ entries, keys, fences, lacs int }

// replayRecord applies one journal record to ledger storage.
func (b *Bookie) replayRecord(rec journal.Record, st *replayStats) error {
	ledgerID := rec.LedgerID()
	switch rec.Kind() {
	case journal.KindEntry:
		st.entries++
		err := b.store.Add(ledgerID, rec.EntryID(), rec.Body())
		if errors.Is(err, entrystore.ErrCacheFull) {
			if err := b.flushStore(); err != nil {
				return err
			}
			err = b.store.Add(ledgerID, rec.EntryID(), rec.Body())
		}
		return err
	case journal.KindMasterKey:
		st.keys++
		if err := b.store.SetMasterKey(ledgerID, rec.MasterKey()); err != nil {
			return fmt.Errorf("ledger %d: the journal's master key does not match the stored one: %w", ledgerID, err)
		}
	case journal.KindFence:
		st.fences++
		return b.store.Fence(ledgerID)
	case journal.KindExplicitLAC:
		st.lacs++
		return b.store.SetExplicitLAC(ledgerID, rec.ExplicitLAC())
	}
	return nil
}

// markDirs are the directories lastMark files go in: every ledger
// directory's current subdirectory, as in BookKeeper.
func (b *Bookie) markDirs() []string { return markDirs(b.cfg) }

func markDirs(cfg Config) []string {
	dirs := make([]string, len(cfg.LedgerDirs))
	for i, d := range cfg.LedgerDirs {
		dirs[i] = filepath.Join(d, "current")
	}
	return dirs
}

// checkpoint runs the checkpoint of docs/bookkeeper-protocol.md §7.3 in Appendix A item 8's
// order: capture each journal's durable mark, then flush ledger storage
// (entry logs, then the index, all synced), then persist the marks, then
// remove the journal files replay no longer needs. Every record before a
// captured mark was added to storage before it was journaled, so the
// flush covers it.
func (b *Bookie) checkpoint() error {
	b.ckptMu.Lock()
	defer b.ckptMu.Unlock()
	marks := make([]journal.Position, len(b.journals))
	for i, jr := range b.journals {
		marks[i] = jr.durableMark()
	}
	err := b.flushStore()
	b.signalFlushed()
	if err != nil {
		b.fail(err)
		return err
	}
	dirs := b.markDirs()
	for i, jr := range b.journals {
		if marks[i].Compare(b.lastMarks[i]) <= 0 {
			continue
		}
		if err := journal.WriteLastMark(b.cfg.FS, dirs, journal.LastMarkName(i, len(b.journals)), marks[i]); err != nil {
			b.fail(err)
			return err
		}
		b.lastMarks[i] = marks[i]
		removed, err := journal.RemoveBefore(b.cfg.FS, jr.dir, marks[i], b.cfg.JournalMaxBackups)
		if err != nil {
			b.log.Warn("removing old journal files failed", "dir", jr.dir, "err", err)
		} else if len(removed) > 0 {
			b.log.Debug("removed journal files", "dir", jr.dir, "logIds", removed)
		}
	}
	b.m.activeLedgers.Set(float64(len(b.store.Ledgers())))
	return nil
}

// Checkpoint runs a checkpoint now: ledger storage is flushed, the
// journal marks persisted and old journal files removed.
func (b *Bookie) Checkpoint() error { return b.checkpoint() }

// checkpointLoop checkpoints every flushInterval, and at once when an add
// finds the write cache full.
func (b *Bookie) checkpointLoop() {
	defer b.loops.Done()
	t := time.NewTicker(b.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stopping:
			return
		case <-t.C:
		case <-b.ckptKick:
		}
		if b.failed() != nil {
			b.signalFlushed() // waiting adds then see the store's error
			continue
		}
		_ = b.checkpoint() // a failure is handled (and logged) by fail
	}
}

// kickCheckpoint asks the checkpoint loop for a checkpoint now.
func (b *Bookie) kickCheckpoint() {
	select {
	case b.ckptKick <- struct{}{}:
	default:
	}
}

// flushedChan returns a channel closed when the next checkpoint ends.
func (b *Bookie) flushedChan() <-chan struct{} {
	b.flushedMu.Lock()
	defer b.flushedMu.Unlock()
	return b.flushed
}

func (b *Bookie) signalFlushed() {
	b.flushedMu.Lock()
	defer b.flushedMu.Unlock()
	close(b.flushed)
	b.flushed = make(chan struct{})
}
