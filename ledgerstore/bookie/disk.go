package bookie

import (
	"errors"
	"fmt"
	"time"
)

// errDisksFull means every ledger directory is full and the bookie may
// not turn read-only: it must stop.
var errDisksFull = errors.New("bookie: disks full")

// diskLoop checks the ledger directories every diskCheckInterval.
func (b *Bookie) diskLoop() {
	defer b.loops.Done()
	t := time.NewTicker(b.cfg.DiskCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stopping:
			return
		case <-t.C:
		}
		if err := b.CheckDisks(); errors.Is(err, errDisksFull) {
			b.log.Error("shutting down: disks full", "err", err)
			go b.stopOnOwn(err)
			return
		} else if err != nil {
			b.log.Warn("disk check failed", "err", err)
		}
	}
}

// CheckDisks measures the ledger directories now and applies the verdict
// (docs/bookkeeper-protocol.md §8.1): when every directory's usage exceeds diskUsageThreshold the
// bookie turns read-only (adds refused, reads served) and moves its
// registration under available/readonly; once a directory is below
// diskUsageLwmThreshold it turns writable again. Above
// diskUsageWarnThreshold major compaction is suspended. With
// readOnlyModeEnabled=false it returns an error matching errDisksFull
// instead, and the bookie shuts down.
func (b *Bookie) CheckDisks() error {
	usage, err := b.store.Usage()
	if err != nil {
		return err
	}
	allFull, anyBelowLwm, warn, writable := true, false, false, 0
	for _, u := range usage {
		f := u.Fraction()
		if f > b.cfg.DiskUsageThreshold {
			b.log.Warn("ledger directory is full", "dir", u.Dir, "usage", f)
		} else {
			allFull = false
			writable++
		}
		if f < b.cfg.DiskUsageLwmThreshold {
			anyBelowLwm = true
		}
		if f > b.cfg.DiskUsageWarnThreshold {
			warn = true
		}
	}
	b.m.writableDirs.Set(float64(writable))
	b.aboveWarn.Store(warn)
	b.stateMu.Lock()
	full := b.diskFull
	b.stateMu.Unlock()
	switch {
	case !full && allFull && b.cfg.ReadOnlyModeDisabled:
		return fmt.Errorf("%w: every ledger directory is above diskUsageThreshold %v and readOnlyModeEnabled is false",
			errDisksFull, b.cfg.DiskUsageThreshold)
	case !full && allFull:
		b.setDiskFull(true)
	case full && anyBelowLwm:
		b.setDiskFull(false)
	}
	return nil
}
