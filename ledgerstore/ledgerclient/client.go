package ledgerclient

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	mrand "math/rand/v2"
	"sync"
	"time"

	"keeper/coordination/zkclient"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// Defaults for the zero fields of Config. The timeouts are the Java
// client's (addEntryTimeoutSec, readEntryTimeoutSec: 5 s; speculative
// reads after 2 s); the tick is what package ledger's tick counts assume.
const (
	DefaultAddTimeout             = 5 * time.Second
	DefaultReadTimeout            = 5 * time.Second
	DefaultMetadataTimeout        = 10 * time.Second
	DefaultTick                   = 100 * time.Millisecond
	DefaultSpeculativeReadTimeout = 2 * time.Second
	DefaultRetryInterval          = time.Second
	DefaultLongPollTimeout        = 10 * time.Second
	DefaultZKSessionTimeout       = 10 * time.Second
	// DefaultRecoveryReadBatchSize is how many entries recovery reads
	// ahead when the config leaves it zero. BookKeeper's default is 1
	// (one entry at a time); keeper reads ahead, which changes no
	// outcome (docs/bookkeeper-protocol.md §4.1).
	DefaultRecoveryReadBatchSize = 64
	// MaxRecoveryReadBatchSize bounds RecoveryReadBatchSize: the entries
	// read ahead are held in memory until their turn to be re-added.
	MaxRecoveryReadBatchSize = 4096
)

// inboxSize bounds the inputs queued for one handle's loop. Senders block
// (never drop) when it is full; the loop never blocks on anything but its
// inbox, so they wait at most one loop step.
const inboxSize = 1024

var (
	// ErrClientClosed is returned by operations on a closed Client, and
	// by handles whose Client was closed under them.
	ErrClientClosed = errors.New("ledgerclient: client closed")

	// ErrNoSuchLedger means the ledger's metadata does not exist (it was
	// never created, or it was deleted). It is metadata.ErrNoLedger, so
	// errors.Is matches either name.
	ErrNoSuchLedger = metadata.ErrNoLedger

	// ErrUnauthorized means the password given does not match the
	// ledger's. It is bkproto.ErrUnauthorized, what a bookie's EUA maps to.
	ErrUnauthorized = bkproto.ErrUnauthorized
)

// Config configures a Client. Give either ZK or ZKServers.
type Config struct {
	// ZK is an established ZooKeeper (or keeper) session to use. The
	// client does not close it.
	ZK *zkclient.Session
	// ZKServers are host:port addresses to open a session on when ZK is
	// nil; the client owns that session and closes it in Close.
	ZKServers []string
	// ZKSessionTimeout is the session timeout of a session the client
	// opens (0: DefaultZKSessionTimeout). New waits up to this long for
	// it.
	ZKSessionTimeout time.Duration
	// ZKSecurity is that session's TLS and SASL towards the servers
	// (zkclient.NewSecurity); the zero value is plaintext without SASL.
	ZKSecurity zkclient.Security
	// LedgersRoot is the ledgers root znode ("": metadata.DefaultRoot).
	LedgersRoot string
	// Logger receives the client's logs; nil discards them.
	Logger *slog.Logger
	// Metrics, if set, receives the client's figures (BookKeeper's client
	// metrics); several clients may share one.
	Metrics *Metrics

	// AddTimeout bounds one add request to one bookie; an add that times
	// out counts as a bookie failure and triggers an ensemble change (0:
	// DefaultAddTimeout).
	AddTimeout time.Duration
	// ReadTimeout bounds one read request to one bookie (a long poll gets
	// LongPollTimeout on top) (0: DefaultReadTimeout).
	ReadTimeout time.Duration
	// MetadataTimeout bounds one metadata write or read; a write that
	// times out has an unknown outcome and is resolved by reading back
	// (0: DefaultMetadataTimeout).
	MetadataTimeout time.Duration
	// Tick is the length of one state-machine tick (0: DefaultTick).
	// The durations below are rounded up to whole ticks.
	Tick time.Duration
	// SpeculativeReadTimeout is how long a read waits for one replica
	// before also asking the next (0: DefaultSpeculativeReadTimeout).
	SpeculativeReadTimeout time.Duration
	// RetryInterval is how long recovery and LAC reads wait before asking
	// again a bookie whose answer was unknown (0: DefaultRetryInterval).
	RetryInterval time.Duration
	// RecoveryReadBatchSize is how many entries recovery reads forward at
	// once, BookKeeper's recoveryReadBatchSize (0:
	// DefaultRecoveryReadBatchSize; at most MaxRecoveryReadBatchSize).
	// The rules that decide which entries are recovered do not depend on
	// it: the ledger still ends at the first entry that a coverage quorum
	// says is absent, and entries are re-added in order.
	RecoveryReadBatchSize int
	// LongPollTimeout is how long a tailing reader asks bookies to hold a
	// long poll (0: DefaultLongPollTimeout).
	LongPollTimeout time.Duration
	// ExplicitLACInterval is BookKeeper's explicitLacInterval: while no
	// add carries a writer's LAC to the bookies (the ledger went idle),
	// the writer sends it to the ensemble with WRITE_LAC this often, so
	// that tailing readers see the last entry without waiting for another
	// add (docs/bookkeeper-protocol.md §2.5). It is rounded up to whole
	// ticks, and a writer sends at most one every interval. 0: off, as in
	// BookKeeper. WRITE_LAC exists in v3 only: with UseV2WireProtocol it
	// is refused.
	ExplicitLACInterval time.Duration
	// MaxPendingAdds bounds one writer's unacknowledged adds; AppendAsync
	// blocks while that many are pending (0: ledger.DefaultMaxPendingAdds).
	MaxPendingAdds int
	// Seed seeds the choice of ensembles and replacements; 0 draws a
	// random seed. Tests set it to make placement repeatable.
	Seed uint64
	// UseV2WireProtocol speaks BookKeeper's v2 protocol to bookies, as the
	// Java client's useV2WireProtocol (Pulsar's default) does
	// (docs/bookkeeper-protocol.md §6.2, §6.5): adds, reads and fencing
	// reads travel as v2 packets; a LAC read reads the bookies' last
	// entries (the piggybacked LAC) instead of READ_LAC, and a tailing
	// reader's long poll becomes plain reads of the last entry, one per
	// Tick, until the LAC moves or LongPollTimeout passes.
	UseV2WireProtocol bool

	// Placement chooses the bookies of new ensembles and replacements
	// (docs/bookkeeper-protocol.md §8.6). The zero value is BookKeeper's
	// default, the rack-aware policy, which with no rack information
	// chooses at random.
	Placement ledger.PlacementPolicy
	// Racks places bookies in racks statically: "/rack", or "/region/rack"
	// for the region-aware policy. It wins over the rack document.
	Racks map[ledger.BookieID]string
	// RackInfoPath names the znode holding Pulsar's rack document
	// (metadata.DefaultRackInfoPath); "" reads none. It is read again at
	// every ledger creation and every change of the bookie registry; while
	// it cannot be read or decoded, the last rack information read stays.
	RackInfoPath string
	// TLS secures every bookie connection as BookKeeper's client does with
	// tlsProviderFactoryClass set (docs/bookie-tls.md): START_TLS first,
	// then a handshake that checks the bookie's certificate against the
	// trust store (and its name, with HostnameVerification). A bookie
	// that has no TLS or fails the handshake counts as unavailable. New
	// loads the stores; zero is plain text.
	TLS bookietls.Settings
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.ZK == nil && len(c.ZKServers) == 0 {
		return errors.New("ledgerclient: Config needs ZK or ZKServers")
	}
	for _, d := range []time.Duration{c.ZKSessionTimeout, c.AddTimeout, c.ReadTimeout, c.MetadataTimeout, c.Tick,
		c.SpeculativeReadTimeout, c.RetryInterval, c.LongPollTimeout, c.ExplicitLACInterval} {
		if d < 0 {
			return fmt.Errorf("ledgerclient: negative duration %v in Config", d)
		}
	}
	if c.ExplicitLACInterval > 0 && c.UseV2WireProtocol {
		return errors.New("ledgerclient: ExplicitLACInterval needs WRITE_LAC, which v2 lacks: " +
			"turn it off or UseV2WireProtocol off")
	}
	if c.RecoveryReadBatchSize < 0 || c.RecoveryReadBatchSize > MaxRecoveryReadBatchSize {
		return fmt.Errorf("ledgerclient: RecoveryReadBatchSize %d out of range 0..%d",
			c.RecoveryReadBatchSize, MaxRecoveryReadBatchSize)
	}
	if c.MaxPendingAdds < 0 {
		return fmt.Errorf("ledgerclient: MaxPendingAdds %d", c.MaxPendingAdds)
	}
	if err := c.Placement.Validate(); err != nil {
		return fmt.Errorf("ledgerclient: %w", err)
	}
	for b, r := range c.Racks {
		if len(r) < 2 || r[0] != '/' {
			return fmt.Errorf("ledgerclient: bookie %s: rack %q does not start with /", b, r)
		}
	}
	return (metadata.Config{Root: c.LedgersRoot}).Validate()
}

func (c Config) withDefaults() Config {
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	set(&c.ZKSessionTimeout, DefaultZKSessionTimeout)
	set(&c.AddTimeout, DefaultAddTimeout)
	set(&c.ReadTimeout, DefaultReadTimeout)
	set(&c.MetadataTimeout, DefaultMetadataTimeout)
	set(&c.Tick, DefaultTick)
	set(&c.SpeculativeReadTimeout, DefaultSpeculativeReadTimeout)
	set(&c.RetryInterval, DefaultRetryInterval)
	set(&c.LongPollTimeout, DefaultLongPollTimeout)
	if c.MaxPendingAdds == 0 {
		c.MaxPendingAdds = ledger.DefaultMaxPendingAdds
	}
	if c.RecoveryReadBatchSize == 0 {
		c.RecoveryReadBatchSize = DefaultRecoveryReadBatchSize
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// explicitLACTicks is ExplicitLACInterval in ticks, 0 when off.
func (c Config) explicitLACTicks() int {
	if c.ExplicitLACInterval <= 0 {
		return 0
	}
	return c.ticks(c.ExplicitLACInterval)
}

// ticks converts d to whole ticks, at least one.
func (c Config) ticks(d time.Duration) int {
	return max(1, int((d+c.Tick-1)/c.Tick))
}

// Client creates, writes, reads, recovers and deletes ledgers. It holds
// one metadata store, one watch of the bookie registry, and one pipelined
// connection per bookie shared by all its ledger handles. It is safe for
// concurrent use.
type Client struct {
	cfg    Config
	log    *slog.Logger
	conn   *zkclient.Session
	ownZK  bool
	store  *metadata.Store
	pool   *pool
	tls    *bookietls.Config // nil without Config.TLS
	ctx    context.Context   // ends with Close; every handle's loop ends with it
	cancel context.CancelFunc
	tasks  sync.WaitGroup // the registry watch and writer loops

	mu      sync.Mutex // guards below
	closed  bool
	reg     *metadata.Registry // nil until the watch delivers
	drivers map[*driver]struct{}
	rng     *mrand.Rand
	racks   map[ledger.BookieID]string // the last rack information read
}

// New connects a client. With ZKServers it dials and waits for a session
// (up to ZKSessionTimeout).
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Client{cfg: cfg, log: cfg.Logger, conn: cfg.ZK, drivers: map[*driver]struct{}{}}
	if cfg.TLS.Enabled {
		var err error
		if c.tls, err = bookietls.New(bookietls.Client, cfg.TLS, cfg.Logger); err != nil {
			return nil, fmt.Errorf("ledgerclient: %w", err)
		}
	}
	if c.conn == nil {
		conn, err := dialZK(cfg)
		if err != nil {
			return nil, err
		}
		c.conn, c.ownZK = conn, true
	}
	store, err := metadata.New(c.conn, metadata.Config{Root: cfg.LedgersRoot, Logger: cfg.Logger})
	if err != nil {
		c.closeZK()
		return nil, err
	}
	seed := cfg.Seed
	if seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:])
	}
	c.store, c.rng = store, mrand.New(mrand.NewPCG(seed, 0x1ed6e7))
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.pool = newPool(c)
	c.tasks.Add(1)
	go func() {
		defer c.tasks.Done()
		for reg := range store.WatchBookies(c.ctx) {
			c.setRegistry(reg)
		}
	}()
	return c, nil
}

// BookieDialOptions are how the client connects to bookies (TLS), for
// callers that dial bookies themselves with bookierpc, as autorecovery
// does; they speak v3 whatever UseV2WireProtocol says.
func (c *Client) BookieDialOptions() bookierpc.Options { return bookierpc.Options{TLS: c.tls} }

// BookieAddress returns the host:port bookie b serves on, from its
// registration (or its id, if that is an address and it is no longer
// registered), for callers that dial bookies themselves.
func (c *Client) BookieAddress(ctx context.Context, b ledger.BookieID) (string, error) {
	return c.pool.address(ctx, b)
}

// dialZK opens a session on cfg.ZKServers, waiting up to the session
// timeout for one. The session reattaches to another server after a lost
// connection and renews itself after an expiry (zkclient.Session).
func dialZK(cfg Config) (*zkclient.Session, error) {
	ctx, cancel := context.WithTimeoutCause(context.Background(), cfg.ZKSessionTimeout,
		fmt.Errorf("no session within %v", cfg.ZKSessionTimeout))
	defer cancel()
	opts := zkclient.SessionOptions{Options: zkclient.Options{SessionTimeout: cfg.ZKSessionTimeout, Logger: cfg.Logger}}
	cfg.ZKSecurity.Apply(&opts.Options)
	sess, err := zkclient.OpenSession(ctx, cfg.ZKServers, opts)
	if err != nil {
		return nil, fmt.Errorf("ledgerclient: %w", err)
	}
	return sess, nil
}

func (c *Client) closeZK() {
	if c.ownZK {
		if err := c.conn.Close(); err != nil {
			c.log.Debug("closing the metadata session", "err", err)
		}
	}
}

// Close stops every ledger handle of the client (their pending adds fail
// with ErrClientClosed, wrapped in ledger.ErrOutcomeUnknown), closes the
// bookie connections, and the ZooKeeper connection if the client made it.
// A writer that was not closed leaves its ledger OPEN; whoever opens it
// next recovers it.
func (c *Client) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.pool.close()
	c.tasks.Wait()
	c.store.Close()
	c.closeZK()
}

func (c *Client) setRegistry(reg metadata.Registry) {
	c.mu.Lock()
	var known []ledger.BookieID
	if c.reg != nil {
		known = c.reg.Writable
	}
	c.reg = &reg
	c.mu.Unlock()
	racks := c.loadRacks(c.ctx)
	c.recordTopology(known, reg.Writable, racks)
	cands := candidates(reg, racks)
	for _, d := range c.driverList() {
		if s, ok := d.m.(candidatesSetter); ok {
			d.post(func() { s.SetBookies(cands) })
		}
	}
}

// bookieDied tells every handle whose machine tracks bookie failures that
// a connection to b ended.
func (c *Client) bookieDied(b ledger.BookieID) {
	c.log.Debug("bookie connection ended", "bookie", b)
	for _, d := range c.driverList() {
		if f, ok := d.m.(bookieWatcher); ok {
			d.post(func() { f.BookieFailed(b) })
		}
	}
}

func (c *Client) driverList() []*driver {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*driver, 0, len(c.drivers))
	for d := range c.drivers {
		out = append(out, d)
	}
	return out
}

// register adds d to the handles that hear of registry changes and bookie
// deaths, and to those Close waits for. It fails once the client is closed.
func (c *Client) register(d *driver) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClientClosed
	}
	c.drivers[d] = struct{}{}
	c.tasks.Add(1)
	return nil
}

func (c *Client) unregister(d *driver) {
	c.mu.Lock()
	delete(c.drivers, d)
	c.mu.Unlock()
	c.tasks.Done()
}

// bookies returns the registry: the watched one if it has arrived, else a
// fresh read. fresh forces the read (placement of a new ledger should not
// pick a bookie that just turned read-only).
func (c *Client) bookies(ctx context.Context, fresh bool) (ledger.Candidates, error) {
	c.mu.Lock()
	reg := c.reg
	c.mu.Unlock()
	if reg != nil && !fresh {
		c.mu.Lock()
		racks := c.racks
		c.mu.Unlock()
		return candidates(*reg, racks), nil
	}
	r, err := c.store.Bookies(ctx)
	if err != nil {
		return ledger.Candidates{}, fmt.Errorf("ledgerclient: list bookies: %w", err)
	}
	return candidates(r, c.loadRacks(ctx)), nil
}

// loadRacks reads the rack information afresh: the static racks, and the
// rack document's for the bookies they do not place. If the document
// cannot be read or decoded, the last information read stays.
func (c *Client) loadRacks(ctx context.Context) map[ledger.BookieID]string {
	racks := maps.Clone(c.cfg.Racks)
	if c.cfg.RackInfoPath != "" {
		doc, err := c.store.RackInfo(ctx, c.cfg.RackInfoPath)
		if err != nil {
			c.log.Warn("rack information unreadable; keeping the last read", "err", err)
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.racks
		}
		if racks == nil && len(doc) > 0 {
			racks = make(map[ledger.BookieID]string, len(doc))
		}
		for b, r := range doc {
			if _, static := racks[b]; !static {
				racks[b] = r
			}
		}
	}
	c.mu.Lock()
	c.racks = racks
	c.mu.Unlock()
	return racks
}

// newRand returns a generator for one handle, seeded from the client's.
func (c *Client) newRand() *mrand.Rand {
	c.mu.Lock()
	defer c.mu.Unlock()
	return mrand.New(mrand.NewPCG(c.rng.Uint64(), c.rng.Uint64()))
}

// readLedger reads a ledger's stored metadata and converts it.
func (c *Client) readLedger(ctx context.Context, id int64) (ledger.Metadata, ledger.Metadata, error) {
	smd, v, err := c.store.Read(ctx, id)
	if err != nil {
		return ledger.Metadata{}, ledger.Metadata{}, fmt.Errorf("ledgerclient: %w", err)
	}
	md, err := fromStore(smd, v)
	if err != nil {
		return ledger.Metadata{}, ledger.Metadata{}, fmt.Errorf("ledgerclient: ledger %d: %w", id, err)
	}
	return md, smd, nil
}

// Stat returns a ledger's metadata as stored.
func (c *Client) Stat(ctx context.Context, id int64) (ledger.Metadata, error) {
	md, _, err := c.readLedger(ctx, id)
	return md, err
}

// Delete deletes a ledger's metadata, whatever its state. Bookies drop its
// entries at their next garbage collection. Deleting a ledger that does
// not exist succeeds. Readers and a writer of the ledger fail from then on.
func (c *Client) Delete(ctx context.Context, id int64) (err error) {
	start := time.Now()
	defer func() { c.record(ledgerDelete, start, err) }()
	if err := c.store.Delete(ctx, id, metadata.AnyVersion); err != nil {
		return fmt.Errorf("ledgerclient: %w", err)
	}
	return nil
}

// List returns the ids of every ledger, sorted. An error wrapping
// metadata.ErrIncompleteListing comes with the ids found before the
// listing failed.
func (c *Client) List(ctx context.Context) ([]int64, error) {
	ids, err := c.store.List(ctx)
	if err != nil {
		return ids, fmt.Errorf("ledgerclient: %w", err)
	}
	return ids, nil
}
