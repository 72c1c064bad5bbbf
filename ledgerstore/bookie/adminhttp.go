package bookie

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"keeper/ledgerstore/bookie/httpadmin"
	"keeper/ledgerstore/bookietls"
)

// What the HTTP admin API (httpServerEnabled, package httpadmin) asks of
// the bookie. The API runs from Start, before the loops, until shutdown.

// errStopping refuses a forced garbage collection during shutdown.
var errStopping = errors.New("bookie: shutting down")

// gcForce asks the GC loop for a forced run.
type gcForce struct{ major, minor bool }

// startHTTPAdmin serves the admin API on HTTPServerAddr.
func (b *Bookie) startHTTPAdmin() error {
	opts := httpadmin.Options{
		Bookie:     b,
		Metrics:    promhttp.HandlerFor(b.m.reg, promhttp.HandlerOpts{}),
		Properties: b.cfg.Properties,
		Metadata:   b.md,
		Logger:     b.log,
	}
	if b.md != nil && b.cfg.HTTPRecovery != nil {
		opts.Recovery = b.cfg.HTTPRecovery(b.md, b.ID())
	}
	if b.md != nil {
		opts.Ledgers = b.cfg.HTTPLedgers
	}
	if b.cfg.ClientTLS.Enabled {
		// list_bookie_info asks bookies as the bookie's ledger clients do.
		tlsCfg, err := bookietls.New(bookietls.Client, b.cfg.ClientTLS, b.log)
		if err != nil {
			return fmt.Errorf("bookie: the admin API's client TLS: %w", err)
		}
		opts.BookieTLS = tlsCfg
	}
	srv, err := httpadmin.Listen(b.cfg.HTTPServerAddr, opts)
	if err != nil {
		return err
	}
	b.httpAdmin = srv
	return nil
}

// HTTPAddr returns the admin API's address, nil without one.
func (b *Bookie) HTTPAddr() net.Addr {
	if b.httpAdmin == nil {
		return nil
	}
	return b.httpAdmin.Addr()
}

// Running reports whether the bookie has started and not yet stopped.
func (b *Bookie) Running() bool {
	if !b.running.Load() {
		return false
	}
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// ShuttingDown reports whether the bookie has begun to stop.
func (b *Bookie) ShuttingDown() bool {
	select {
	case <-b.stopping:
		return true
	default:
		return false
	}
}

// AvailableForHighPriorityWrites reports whether recovery adds are taken:
// always, unless the bookie is read-only because its storage failed
// (checkWritable).
func (b *Bookie) AvailableForHighPriorityWrites() bool {
	return !b.readOnly.Load() || b.failed() == nil
}

// DiskSpace sums the free and total bytes of the ledger directories.
func (b *Bookie) DiskSpace() (free, total uint64, err error) {
	usage, err := b.store.Usage()
	if err != nil {
		return 0, 0, err
	}
	for _, u := range usage {
		total += u.TotalBytes
		free += u.TotalBytes - min(u.UsedBytes, u.TotalBytes)
	}
	return free, total, nil
}

// ForceGC asks the GC loop for a garbage collection run now, followed by a
// major compaction if major, or else a minor one if minor (each only if
// enabled by its threshold and interval); it does not
// wait for the run. A request made while one is pending joins it.
func (b *Bookie) ForceGC(major, minor bool) error {
	if b.md == nil {
		return errNoMetadata
	}
	if b.ShuttingDown() {
		return errStopping
	}
	b.gcForced.Add(1)
	select {
	case b.gcForceCh <- gcForce{major: major, minor: minor}:
	default:
		b.gcForced.Add(-1) // one is pending already
	}
	return nil
}

// InForceGC reports whether a forced run is pending or running.
func (b *Bookie) InForceGC() bool { return b.gcForced.Load() > 0 }

// forcedGC runs what ForceGC asked for, on the GC loop.
func (b *Bookie) forcedGC(f gcForce) error {
	defer b.gcForced.Add(-1)
	if _, err := b.GC(); err != nil {
		return err
	}
	var err error
	// As BookKeeper's forced run: the major compaction if asked and
	// enabled, or else the minor one if asked and enabled.
	switch {
	case f.major && b.cfg.majorEnabled():
		_, err = b.Compact(true)
	case f.minor && b.cfg.minorEnabled():
		_, err = b.Compact(false)
	}
	return err
}

// gcStatus is what gc_details reports of the compactions: BookKeeper's
// collector starts its last-compaction times at its own start, and a major
// compaction moves the minor one's time too.
type gcStatus struct {
	mu                   sync.Mutex
	started              time.Time
	lastMajor            time.Time
	lastMinor            time.Time
	running              int // 0 none, 1 minor, 2 major; gcMu orders runs
	majorRuns, minorRuns int64
	lastIndex            time.Time // the last entry location index compaction
	indexRuns            int64
}

// indexCompacted records an entry location index compaction that ended.
func (s *gcStatus) indexCompacted(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastIndex = now
	s.indexRuns++
}

func (s *gcStatus) init(now time.Time) {
	s.started, s.lastMajor, s.lastMinor, s.lastIndex = now, now, now, now
}

// begin and end bracket a compaction run (Compact), successful or not.
func (s *gcStatus) begin(major bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = 1
	if major {
		s.running = 2
	}
}

func (s *gcStatus) end(major bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = 0
	now := time.Now()
	if major {
		s.lastMajor, s.lastMinor = now, now
		s.majorRuns++
	} else {
		s.lastMinor = now
		s.minorRuns++
	}
}

// GCStatus reports the garbage collector's state (gc_details).
func (b *Bookie) GCStatus() httpadmin.GCStatus {
	s := &b.gcStat
	s.mu.Lock()
	defer s.mu.Unlock()
	return httpadmin.GCStatus{
		ForceCompacting:             b.InForceGC(),
		MajorCompacting:             s.running == 2,
		MinorCompacting:             s.running == 1,
		LastMajorCompaction:         s.lastMajor,
		LastMinorCompaction:         s.lastMinor,
		LastEntryLocationCompaction: s.lastIndex,
		MajorCompactions:            s.majorRuns,
		MinorCompactions:            s.minorRuns,
		EntryLocationCompactions:    s.indexRuns,
	}
}
