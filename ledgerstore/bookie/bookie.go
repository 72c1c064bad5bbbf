package bookie

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/entrystore"
	"keeper/ledgerstore/bookie/httpadmin"
	"keeper/ledgerstore/bookie/journal"
	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/metadata"
)

// ledgerLockStripes is how many locks the ledgers are spread over. A
// ledger's lock orders its master-key check, fence check, storage insert
// and journal enqueue against a concurrent fence, so that an add either
// lands before the fence record (and is durable and visible before the
// fence is answered) or sees the fence. 256 stripes keep unrelated
// ledgers from contending.
const ledgerLockStripes = 256

// Bookie is one storage server: it accepts BookKeeper v3 connections,
// journals adds with group commit, keeps entries in an entrystore, and
// registers itself in the metadata store. Its goroutines are the driver
// loops of the design: a reader and a writer per connection, one
// group-commit goroutine per journal, and one each for checkpoints, the
// disk monitor and garbage collection.
type Bookie struct {
	cfg Config
	log *slog.Logger
	m   *metrics
	id  string

	store    *entrystore.Store
	journals []*journaler
	ln       net.Listener
	tls      *bookietls.Config // nil without TLS (Config.TLS)
	advAddr  string            // host:port clients dial
	// dirLock is the lock of the journal, ledger and index directories,
	// held from Start until the bookie stops (see lockDirs).
	dirLock *vfs.DirLock

	// The metadata store; all nil without metadata servers. reg is set
	// once Start registers (modeMu guards it); md and mdSession before the
	// loops start.
	mdSession *metadata.Session
	md        *metadata.Store
	reg       *metadata.Registration

	metricsLn  net.Listener
	metricsSrv *http.Server
	httpAdmin  *httpadmin.Server // nil unless HTTPServerAddr is set
	running    atomic.Bool       // Start has finished

	// Forced garbage collection (the admin API's PUT /api/v1/bookie/gc):
	// gcForceCh (cap 1) carries the request to the GC loop; gcForced counts
	// the requests queued or running.
	gcForceCh chan gcForce
	gcForced  atomic.Int32
	gcStat    gcStatus // compactions, for the admin API's gc_details
	// indexCompactCh (cap 1) carries the admin API's request for an entry
	// location index compaction to the GC loop; indexCompacting counts the
	// requests queued or running.
	indexCompactCh  chan struct{}
	indexCompacting atomic.Int32
	// The periodic compactions an operator suspended (admin API).
	majorSuspended, minorSuspended atomic.Bool

	locks [ledgerLockStripes]sync.Mutex
	lacs  lacWatch

	// fencesMu guards fencesInFlight: per ledger, the fence records
	// journaled but not yet durable (or never made durable: a failed
	// record is never subtracted). A fenced ledger with none in flight has
	// a durable fence, so a later fence read need not journal again.
	fencesMu       sync.Mutex
	fencesInFlight map[int64]int

	// ckptMu serializes checkpoints and guards lastMarks (the marks
	// persisted so far, per journal).
	ckptMu    sync.Mutex
	lastMarks []journal.Position
	ckptKick  chan struct{} // cap 1: a checkpoint is wanted now
	flushedMu sync.Mutex
	flushed   chan struct{} // closed (and replaced) when a checkpoint ends

	stateMu  sync.Mutex
	diskFull bool // every ledger directory is above the threshold
	// manualReadOnly: an operator turned the bookie read-only (admin API).
	manualReadOnly bool
	failure        error // the journal or storage failed; permanent until restart
	modeMu         sync.Mutex
	published      bool        // the mode last applied (true: read-only); modeMu guards it
	readOnly       atomic.Bool // read on every add
	aboveWarn      atomic.Bool // a ledger directory is above the warning threshold

	connMu sync.Mutex
	conns  map[*conn]struct{}
	mem    *memBudget // what all connections hold (MaxPendingBytes)

	stopping chan struct{}
	life     context.Context // cancelled when stopping closes; bounds metadata calls
	endLife  context.CancelFunc
	loops    sync.WaitGroup // accept, checkpoint, disk and GC loops
	tasks    sync.WaitGroup // connections, fence completions, long polls
	gcMu     sync.Mutex     // one GC or compaction at a time

	closeOnce sync.Once
	done      chan struct{}
	errMu     sync.Mutex
	err       error // why the bookie stopped on its own
}

// New validates cfg and returns a bookie that has not touched anything
// yet; Start brings it up.
func New(cfg Config) (*Bookie, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var tlsCfg *bookietls.Config
	if cfg.TLS.Enabled {
		// Loaded here so that a store that cannot be read stops the
		// bookie before it serves anything.
		var err error
		if tlsCfg, err = bookietls.New(bookietls.Bookie, cfg.TLS, cfg.Logger); err != nil {
			return nil, fmt.Errorf("bookie: %w", err)
		}
	}
	life, endLife := context.WithCancel(context.Background())
	b := &Bookie{
		life:           life,
		endLife:        endLife,
		cfg:            cfg,
		tls:            tlsCfg,
		log:            cfg.Logger,
		m:              newMetrics(),
		ckptKick:       make(chan struct{}, 1),
		gcForceCh:      make(chan gcForce, 1),
		indexCompactCh: make(chan struct{}, 1),
		flushed:        make(chan struct{}),
		conns:          make(map[*conn]struct{}),
		stopping:       make(chan struct{}),
		done:           make(chan struct{}),
		lacs:           lacWatch{waiters: make(map[int64][]*lacWaiter)},
		mem:            newMemBudget(cfg.MaxPendingBytes),
	}
	b.m.watchConnBytes(b.mem)
	b.m.dirFigures(len(cfg.JournalDirs), len(cfg.LedgerDirs))
	b.gcStat.init(time.Now())
	return b, nil
}

// Start brings the bookie up, in BookKeeper's order: listen (to learn the
// port of the default bookie id), check the cookies against the metadata
// store, open ledger storage, replay the journals from the last
// checkpoint, checkpoint, start serving, and register (docs/bookkeeper-protocol.md §8.1). A
// bookie whose disks or metadata do not match refuses to start with an
// error matching ErrInvalidCookie. Before all of it Start locks the
// directories (lockDirs): if another process or bookie holds one, Start
// fails with an error matching vfs.ErrLocked, having touched nothing.
func (b *Bookie) Start(ctx context.Context) (err error) {
	if err := b.lockDirs(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", b.cfg.ListenAddr)
	if err != nil {
		_ = b.unlockDirs() // the listen error is the one to report
		return fmt.Errorf("bookie: listen on %s: %w", b.cfg.ListenAddr, err)
	}
	b.ln = ln
	started := false
	defer func() {
		if err != nil {
			b.closeOnce.Do(func() { b.abortStart(started) })
		}
	}()
	b.id, b.advAddr = resolveIdentity(b.cfg, ln.Addr())
	b.log = b.log.With("bookie", b.id)
	if len(b.cfg.MetadataServers) > 0 {
		if err := b.openMetadata(ctx); err != nil {
			return err
		}
	} else {
		b.log.Warn("no metadata servers configured: no cookies, registration or garbage collection")
	}
	if b.store, err = entrystore.Open(b.cfg.storeConfig()); err != nil {
		return fmt.Errorf("bookie: open ledger storage: %w", err)
	}
	b.m.watchStore(b.store)
	if err := b.recover(); err != nil {
		return err
	}
	if err := b.checkpoint(); err != nil {
		return fmt.Errorf("bookie: checkpoint after replay: %w", err)
	}
	if err := b.CheckDisks(); errors.Is(err, errDisksFull) {
		return err
	} else if err != nil {
		b.log.Warn("disk check failed", "err", err)
	}
	b.updateMode()
	if b.cfg.MetricsAddr != "" {
		if b.metricsLn, b.metricsSrv, err = serveMetrics(b.cfg.MetricsAddr, b.m, b.log); err != nil {
			return err
		}
	}
	if b.cfg.HTTPServerAddr != "" {
		if err := b.startHTTPAdmin(); err != nil {
			return err
		}
	}
	b.startLoops()
	started = true
	if b.md != nil {
		if err := b.register(ctx); err != nil {
			return err
		}
	}
	b.running.Store(true)
	b.log.Info("bookie started", "addr", ln.Addr().String(), "readOnly", b.readOnly.Load())
	return nil
}

// abortStart releases what a failed Start opened. Once the loops run, that
// is a whole shutdown.
func (b *Bookie) abortStart(loopsStarted bool) {
	if loopsStarted {
		_ = b.shutdown()
		return
	}
	close(b.stopping)
	b.endLife()
	for _, jr := range b.journals {
		_ = jr.close()
	}
	if b.store != nil {
		_ = b.store.Close()
	}
	_ = b.closeMetadata()
	if b.metricsSrv != nil {
		_ = b.metricsSrv.Close()
	}
	if b.httpAdmin != nil {
		_ = b.httpAdmin.Close()
	}
	_ = b.ln.Close()
	_ = b.unlockDirs() // last: every file of the directories is closed
	close(b.done)
}

// resolveIdentity returns the bookie id and the address clients dial:
// BookieID if set; otherwise AdvertisedAddress, the listener's host, or
// the first non-loopback IPv4 address, with the listening port.
func resolveIdentity(cfg Config, addr net.Addr) (id, advertised string) {
	port := 0
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port = tcp.Port
	}
	host := cfg.AdvertisedAddress
	if host == "" {
		h, _, _ := net.SplitHostPort(cfg.ListenAddr)
		if ip := net.ParseIP(h); h != "" && (ip == nil || !ip.IsUnspecified()) {
			host = h
		}
	}
	if host == "" {
		host = firstIPv4()
	}
	advertised = net.JoinHostPort(host, strconv.Itoa(port))
	if cfg.BookieID != "" {
		return cfg.BookieID, advertised
	}
	return advertised, advertised
}

// firstIPv4 returns the first non-loopback IPv4 address of the machine,
// or 127.0.0.1.
func firstIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// advertisedMetricsAddr is the registration data's http endpoint: the
// admin API when it is on (BookKeeper publishes its HTTP server there, and
// the API serves /metrics too), else the metrics listener; "" without
// either.
func (b *Bookie) advertisedMetricsAddr() string {
	var addr net.Addr
	switch {
	case b.httpAdmin != nil:
		addr = b.httpAdmin.Addr()
	case b.metricsLn != nil:
		addr = b.metricsLn.Addr()
	default:
		return ""
	}
	_, port, _ := net.SplitHostPort(addr.String())
	host, _, _ := net.SplitHostPort(b.advAddr)
	return net.JoinHostPort(host, port)
}

// startLoops starts the journal goroutines and the background loops.
func (b *Bookie) startLoops() {
	for _, jr := range b.journals {
		go jr.run()
	}
	b.loops.Add(4)
	go b.acceptLoop()
	go b.checkpointLoop()
	go b.diskLoop()
	go b.gcLoop()
}

// ID returns the bookie id.
func (b *Bookie) ID() string { return b.id }

// Addr returns the address the bookie listens on.
func (b *Bookie) Addr() net.Addr { return b.ln.Addr() }

// MetricsAddr returns the metrics listener's address, nil without one.
func (b *Bookie) MetricsAddr() net.Addr {
	if b.metricsLn == nil {
		return nil
	}
	return b.metricsLn.Addr()
}

// ReadOnly reports whether the bookie refuses adds.
func (b *Bookie) ReadOnly() bool { return b.readOnly.Load() }

// Done is closed once the bookie has stopped, by Close or on its own (a
// failed disk with readOnlyModeEnabled=false). Err then says why.
func (b *Bookie) Done() <-chan struct{} { return b.done }

// Err returns why the bookie stopped on its own, or nil.
func (b *Bookie) Err() error {
	b.errMu.Lock()
	defer b.errMu.Unlock()
	return b.err
}

// journalFor returns the journal that ledger is pinned to.
func (b *Bookie) journalFor(ledgerID int64) *journaler {
	return b.journals[uint64(ledgerID)%uint64(len(b.journals))]
}

// ledgerLock returns ledger's lock stripe.
func (b *Bookie) ledgerLock(ledgerID int64) *sync.Mutex {
	return &b.locks[uint64(ledgerID)%ledgerLockStripes]
}

// checkWritable refuses a write while the bookie is read-only. A
// high-priority write (a recovery add) still goes through when the bookie
// is read-only only because its disks are full, as BookKeeper lets
// recovery finish (docs/bookkeeper-protocol.md §8.1).
func (b *Bookie) checkWritable(highPriority bool) error {
	if !b.readOnly.Load() {
		return nil
	}
	if highPriority && b.failed() == nil {
		return nil
	}
	return bkproto.ErrReadOnly
}

// fail records a journal or storage failure. The on-disk state after a
// failed write or sync is unknown, so the bookie stops taking writes for
// good: it turns read-only (reads go on), or with readOnlyModeEnabled=false
// it shuts down.
func (b *Bookie) fail(err error) {
	b.stateMu.Lock()
	first := b.failure == nil
	if first {
		b.failure = err
	}
	b.stateMu.Unlock()
	if !first {
		return
	}
	b.log.Error("storage failed; the bookie takes no more writes", "err", err)
	if b.cfg.ReadOnlyModeDisabled {
		go b.stopOnOwn(err)
		return
	}
	b.updateMode()
}

// failed returns the storage failure, if any.
func (b *Bookie) failed() error {
	b.stateMu.Lock()
	defer b.stateMu.Unlock()
	return b.failure
}

// stopOnOwn shuts the bookie down after a fatal condition.
func (b *Bookie) stopOnOwn(err error) {
	b.errMu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.errMu.Unlock()
	_ = b.Close()
}

// setDiskFull records the disk monitor's verdict.
func (b *Bookie) setDiskFull(full bool) { b.setModeFlag(&b.diskFull, full) }

// setModeFlag sets flag, one of the stateMu fields updateMode reads, and
// applies the mode if the flag changed.
func (b *Bookie) setModeFlag(flag *bool, v bool) {
	b.stateMu.Lock()
	changed := *flag != v
	*flag = v
	b.stateMu.Unlock()
	if changed {
		b.updateMode()
	}
}

// updateMode applies the current mode: the flag adds check, the
// SERVER_STATUS gauge, and the registration znode.
func (b *Bookie) updateMode() {
	b.modeMu.Lock()
	defer b.modeMu.Unlock()
	b.stateMu.Lock()
	ro := b.diskFull || b.failure != nil || b.manualReadOnly
	b.stateMu.Unlock()
	b.readOnly.Store(ro)
	if ro {
		b.m.serverStatus.Set(0)
	} else {
		b.m.serverStatus.Set(1)
	}
	if ro == b.published {
		return
	}
	b.published = ro
	b.log.Info("bookie mode changed", "readOnly", ro)
	b.publishModeLocked(ro)
}

// Close stops the bookie: it stops accepting and closes connections,
// commits what the journals hold, checkpoints, closes storage and ends
// the metadata session (which removes the registration). It is safe to
// call more than once.
func (b *Bookie) Close() error {
	if b.ln == nil {
		return nil // never started
	}
	var err error
	b.closeOnce.Do(func() { err = b.shutdown() })
	<-b.done
	return err
}

func (b *Bookie) shutdown() error {
	close(b.stopping)
	b.endLife()
	_ = b.ln.Close()
	var errs []error
	if b.httpAdmin != nil {
		errs = append(errs, b.httpAdmin.Close())
	}
	b.connMu.Lock()
	for c := range b.conns {
		c.close()
	}
	b.connMu.Unlock()
	b.loops.Wait()
	b.tasks.Wait()
	for _, jr := range b.journals {
		jr.stop()
	}
	if b.failed() == nil {
		errs = append(errs, b.checkpoint())
	}
	for _, jr := range b.journals {
		errs = append(errs, jr.close())
	}
	errs = append(errs, b.store.Close())
	errs = append(errs, b.closeMetadata())
	if b.metricsSrv != nil {
		errs = append(errs, b.metricsSrv.Close())
	}
	errs = append(errs, b.unlockDirs()) // last: every file of the directories is closed
	close(b.done)
	b.log.Info("bookie stopped")
	return errors.Join(errs...)
}
