package bookie

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bookie/httpadmin"
	"keeper/ledgerstore/bookie/journal"
	"keeper/ledgerstore/ledger"
)

// The operator's calls of the HTTP admin API beyond garbage collection:
// compaction suspension, read-only mode, the journals' marks, the files on
// disk, the cookie check and the entry location index's compaction.

// AdvertisedAddr is the host:port clients dial.
func (b *Bookie) AdvertisedAddr() string { return b.advAddr }

// SuspendCompaction suspends the periodic major and/or minor compaction
// until ResumeCompaction. A forced run (ForceGC) is not suspended.
func (b *Bookie) SuspendCompaction(major, minor bool) {
	if major {
		b.majorSuspended.Store(true)
	}
	if minor {
		b.minorSuspended.Store(true)
	}
}

// ResumeCompaction lifts what SuspendCompaction suspended. Major
// compaction stays suspended while a ledger directory is above
// diskUsageWarnThreshold, as BookKeeper's disk checker suspends it again
// at its next check.
func (b *Bookie) ResumeCompaction(major, minor bool) {
	if major {
		b.majorSuspended.Store(false)
	}
	if minor {
		b.minorSuspended.Store(false)
	}
}

// CompactionSuspended reports which periodic compactions are suspended: by
// an operator, and major compaction while a ledger directory is above
// diskUsageWarnThreshold.
func (b *Bookie) CompactionSuspended() (major, minor bool) {
	return b.aboveWarn.Load() || b.majorSuspended.Load(), b.minorSuspended.Load()
}

// SetReadOnly turns the bookie read-only at an operator's request (adds
// refused, recovery adds and reads served, the registration moved under
// available/readonly), or lifts that request. The bookie stays read-only
// while its disks are full or its storage has failed.
func (b *Bookie) SetReadOnly(ro bool) error {
	if ro && b.cfg.ReadOnlyModeDisabled {
		return httpadmin.ErrReadOnlyDisabled
	}
	b.setModeFlag(&b.manualReadOnly, ro)
	return nil
}

// LastLogMarks reports each journal's persisted mark, in journal order.
func (b *Bookie) LastLogMarks() []httpadmin.LogMark {
	b.ckptMu.Lock()
	defer b.ckptMu.Unlock()
	out := make([]httpadmin.LogMark, len(b.lastMarks))
	for i, m := range b.lastMarks {
		out[i] = httpadmin.LogMark{LogID: m.LogID, Offset: m.Offset}
	}
	return out
}

// maxListedFiles bounds DiskFiles: a listing holds names only, but a
// directory tree is the operator's, not ours.
const maxListedFiles = 100_000

// DiskFiles lists the names of the files named *.ext below the
// directories of kind (ListDiskFiles), oldest modification first.
func (b *Bookie) DiskFiles(kind httpadmin.FileKind, ext string) ([]string, error) {
	paths, err := ListDiskFiles(b.cfg, kind, ext)
	for i, p := range paths {
		paths[i] = filepath.Base(p)
	}
	return paths, err
}

// ListDiskFiles lists the paths of the files named *.ext below cfg's
// journal, ledger or index directories (the index directory is the first
// ledger directory unless IndexDir names one), recursively, oldest
// modification first, as BookKeeper's listfilesondisc does. It only reads:
// a running bookie's directories may be listed.
func ListDiskFiles(cfg Config, kind httpadmin.FileKind, ext string) ([]string, error) {
	fsys := cfg.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	var dirs []string
	switch kind {
	case httpadmin.JournalFiles:
		dirs = cfg.JournalDirs
	case httpadmin.EntryLogFiles:
		dirs = cfg.LedgerDirs
	case httpadmin.IndexFiles:
		switch {
		case cfg.IndexDir != "":
			dirs = []string{cfg.IndexDir}
		case len(cfg.LedgerDirs) > 0:
			dirs = cfg.LedgerDirs[:1]
		}
	}
	type file struct {
		path string
		mod  time.Time
	}
	var files []file
	var walk func(dir string) error
	walk = func(dir string) error {
		names, err := fsys.List(dir)
		if err != nil {
			return err
		}
		for _, n := range names {
			p := filepath.Join(dir, n)
			fi, err := fsys.Stat(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since the listing
			}
			if err != nil {
				return err
			}
			switch {
			case fi.IsDir():
				if err := walk(p); err != nil {
					return err
				}
			case strings.HasSuffix(n, "."+ext):
				if len(files) == maxListedFiles {
					return fmt.Errorf("more than %d files below %v", maxListedFiles, dirs)
				}
				files = append(files, file{p, fi.ModTime()})
			}
		}
		return nil
	}
	for _, d := range dirs {
		if err := walk(d); err != nil {
			return nil, fmt.Errorf("bookie: list files: %w", err)
		}
	}
	slices.SortStableFunc(files, func(x, y file) int { return x.mod.Compare(y.mod) })
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.path
	}
	return out, nil
}

// ReadLastMarks reads each journal's persisted mark (its lastMark file in
// the ledger directories) as a start would, in journal order, as
// BookKeeper's lastmark does. It only reads.
func ReadLastMarks(cfg Config) ([]journal.Position, error) {
	fsys := cfg.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	dirs := markDirs(cfg)
	out := make([]journal.Position, len(cfg.JournalDirs))
	for i := range cfg.JournalDirs {
		p, err := journal.ReadLastMark(fsys, dirs, journal.LastMarkName(i, len(cfg.JournalDirs)))
		if err != nil {
			return nil, fmt.Errorf("bookie: read the journal's last mark: %w", err)
		}
		out[i] = p
	}
	return out, nil
}

// CheckCookies checks, as a start does, that the metadata store holds the
// bookie's cookie and that every directory's cookie matches it and the
// configuration. It never writes a cookie.
func (b *Bookie) CheckCookies(ctx context.Context) error {
	if b.md == nil {
		return errNoMetadata
	}
	instanceID, err := b.md.InstanceID(ctx)
	if err != nil {
		return fmt.Errorf("bookie: %w", err)
	}
	store := metaCookies{ctx, b.md, ledger.BookieID(b.id)}
	if _, found, err := store.readCookie(); err != nil {
		return err
	} else if !found {
		return fmt.Errorf("%w: %s does not exist", ErrInvalidCookie, store.cookiePath())
	}
	// With the metadata cookie present checkCookies only compares.
	return checkCookies(b.cfg.FS, cookieDirs(b.cfg), store, masterCookie(b.cfg, b.id, instanceID))
}

// IndexPath is the pebble index's directory (the entry location index).
func (b *Bookie) IndexPath() string { return b.store.IndexPath() }

// CompactIndex asks the GC loop to compact the entry location index; it
// does not wait. A request made while one is pending joins it.
func (b *Bookie) CompactIndex() error {
	if b.ShuttingDown() {
		return errStopping
	}
	b.indexCompacting.Add(1)
	select {
	case b.indexCompactCh <- struct{}{}:
	default:
		b.indexCompacting.Add(-1) // one is pending already
	}
	return nil
}

// IndexCompacting reports whether an index compaction is pending or
// running.
func (b *Bookie) IndexCompacting() bool { return b.indexCompacting.Load() > 0 }

// compactIndex runs what CompactIndex asked for, on the GC loop.
func (b *Bookie) compactIndex() error {
	defer b.indexCompacting.Add(-1)
	b.gcMu.Lock()
	defer b.gcMu.Unlock()
	err := b.store.CompactIndex(b.life)
	if err == nil {
		b.gcStat.indexCompacted(time.Now())
	}
	return err
}
