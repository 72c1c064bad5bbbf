// Package server runs one coordination server process: it accepts client
// connections, owns the core (zkcore) on a single goroutine (the loop),
// carries out the core's Ready batches, and serves the four-letter words.
//
// The loop is the only goroutine that touches the core. Connection readers
// decode frames and post them to the loop's inbox; the loop posts output
// back to each connection's writer. Everything else (4lw, the admin server)
// reaches the core through Inspect, which runs a function on the loop.
package server

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"keeper/coordination/admin"
	"keeper/coordination/clientconn"
	"keeper/coordination/clienttls"
	"keeper/coordination/peer"
	"keeper/coordination/snap"
	"keeper/coordination/txn"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/metric"
	"keeper/internal/vfs"
)

// Version returns what srvr, stat, mntr and envi report: the ZooKeeper
// version keeper follows and this binary's build, in ZooKeeper's
// "<version>-<build>, built on <date>" form (admin.Build.FullVersion), with
// the date in ZooKeeper 3.4's MM/dd/yyyy HH:mm zone style: go-zookeeper's
// FLWSrvr accepts only that style, and kazoo's server_version() reads the
// numbers before the first '-' of envi's zookeeper.version line.
func Version() string { return admin.ReadBuild().FullVersion() }

// Config configures a Server.
type Config struct {
	// ClientAddr is where clients connect, e.g. "127.0.0.1:2181"; port 0
	// picks a free port. "" means no plaintext port (SecureClientAddr
	// must be set).
	ClientAddr string
	// SecureClientAddr is where clients connect over TLS only
	// (secureClientPort); "" means none. It needs ClientTLS.
	SecureClientAddr string
	// PortUnification makes ClientAddr serve TLS clients too
	// (client.portUnification), telling them apart by their first byte;
	// it needs ClientTLS.
	PortUnification bool
	// ClientTLS configures TLS for SecureClientAddr (and ClientAddr with
	// PortUnification); New loads its key and trust stores.
	ClientTLS *clienttls.Config
	// Core configures the service logic.
	Core zkcore.Config
	// Conn bounds each client connection. New sets its TLS from
	// ClientTLS, and the server its TLS and PlaintextToo per port.
	Conn clientconn.Config
	// MaxClientCnxns limits connections per client IP; 0 means no limit.
	MaxClientCnxns int
	// MaxCnxns limits the connections of all clients together (ZooKeeper's
	// maxCnxns); 0 means no limit.
	MaxCnxns int
	// GlobalOutstandingLimit is ZooKeeper's globalOutstandingLimit: above
	// this many requests read and not yet answered, over all connections,
	// a connection that has a request in flight stops being read. 0 means
	// DefaultGlobalOutstandingLimit; negative means no limit.
	GlobalOutstandingLimit int
	// RequestThrottleMaxRequests is zookeeper.request_throttle_max_requests:
	// a second bound on requests in flight, 0 (ZooKeeper's default) for
	// none. RequestThrottleStall is zookeeper.request_throttle_stall_time:
	// how often a throttled connection checks again (it is also woken when
	// any request completes).
	RequestThrottleMaxRequests int
	RequestThrottleStall       time.Duration
	// MaxInflightRequestBytes bounds the bytes of the requests read and not
	// yet answered, over all connections; 0 means
	// DefaultMaxInflightRequestBytes.
	MaxInflightRequestBytes int64
	// FourLetterWhitelist lists the four-letter words that run; "*" allows
	// all of them.
	FourLetterWhitelist []string
	// DataDir and DataLogDir are reported by conf and dirs.
	DataDir, DataLogDir string
	// ConfLines are the key=value lines of the conf four-letter word; nil
	// means lines derived from this Config. dataDirSize and dataLogSize
	// lines get the live directory sizes.
	ConfLines []string
	// Storage says where the data lives; with an empty Storage.DataDir it
	// lives in memory only.
	Storage StorageConfig
	// Quorum makes the server a member of an ensemble; nil runs it
	// standalone.
	Quorum *QuorumConfig
	// InitialConfig is the text of the configuration file the server
	// started from, which the admin server's initial_configuration shows;
	// "" shows null.
	InitialConfig string
	// SystemProperties are the settings the admin server's
	// system_properties lists, under ZooKeeper's system property names
	// (ConfigFromZoo fills them from zoo.cfg).
	SystemProperties map[string]string
	// AdminAddr is where the admin HTTP server (commands and /metrics)
	// listens, e.g. "0.0.0.0:8080"; "" disables it.
	AdminAddr string
	// AdminTLS, if not nil, makes the admin server speak HTTPS with these
	// stores (admin.forceHttps, admin.portUnification; docs/tls.md).
	AdminTLS *clienttls.Config
	// AdminPlaintextToo serves plaintext HTTP beside HTTPS on the admin
	// port (admin.portUnification without admin.forceHttps).
	AdminPlaintextToo bool
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Clock, if not nil, is the time the server runs on instead of the
	// system's (a chaos build's skewable clock; tests' fake clocks). See
	// Clock for what follows it.
	Clock Clock
	// Listen, if not nil, opens the client listeners (ClientAddr,
	// SecureClientAddr, and a client address a reconfiguration moves to)
	// and an ensemble member's quorum and election listeners instead of
	// net.Listen, and Dial, if not nil, connects to the other members:
	// tests run servers over an in-memory network (internal/memnet), which
	// a testing/synctest bubble can wait on. The admin port uses neither.
	Listen func(network, address string) (net.Listener, error)
	Dial   func(ctx context.Context, network, address string) (net.Conn, error)
}

// listenClients opens a client listener through Config.Listen, or
// net.Listen without one.
func (s *Server) listenClients(address string) (net.Listener, error) {
	if s.cfg.Listen != nil {
		return s.cfg.Listen("tcp", address)
	}
	return net.Listen("tcp", address)
}

// DefaultGlobalOutstandingLimit is ZooKeeper's globalOutstandingLimit
// default.
const DefaultGlobalOutstandingLimit = 1000

// DefaultMaxInflightRequestBytes bounds the requests held for all clients
// together: 256 jute.maxbuffer-sized requests.
const DefaultMaxInflightRequestBytes = 256 << 20

// Clock is a server's time source. wall is the time of day: txn times,
// and through them node mtimes, TTL and container ages. mono is a
// monotonic reading from any origin: it drives session expiry, the
// container and TTL reaper's schedule, read-only mode's delay and the
// ticks of Zab's timeouts (syncLimit, initLimit, election), so a clock
// whose mono runs fast expires sessions and times peers out early, and a
// slow one late. The two are separate readings because they fail
// separately: a wall step (NTP) must not move expiry, and a time.Time
// cannot carry a monotonic reading other than its own. mono must not go
// back; the server holds its monotonic clock still until one that did
// catches up. Socket deadlines, connection backoff, autopurge and the
// admin uptime keep the system clock.
type Clock func() (wall time.Time, mono time.Duration)

// Server is one running coordination server.
type Server struct {
	cfg  Config
	log  *slog.Logger
	core *zkcore.Server
	// ln is the plaintext client port; nil without one. A reconfiguration
	// that moves this member's client address replaces it (lnMu guards
	// the swap; clientListener reads it).
	ln       net.Listener
	lnMu     sync.Mutex
	lnClosed bool // closeListeners ran: no new client listener (lnMu)
	// secureLn is the TLS-only client port; nil without one.
	secureLn net.Listener

	inbox     chan func() // work for the loop, in arrival order
	closeOnce sync.Once
	closeErr  error         // what the first Close returned
	notes     connNotes     // what connection goroutines report without waiting for the loop
	stopped   chan struct{} // closed when the loop has exited
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	start   time.Time
	started time.Time // wall time at start, for uptime

	// The core's monotonic clock: Clock's mono reading at Start, and the
	// last MonoMs now returned (held if the clock went back). Set by
	// Start, then owned by the loop.
	startMono time.Duration
	lastMono  int64

	// Owned by the loop.
	conns  map[zkcore.ConnID]*clientconn.Conn
	nextID atomic.Uint64 // the last connection id handed out

	ipMu       sync.Mutex
	perIP      map[netip.Addr]int // ipMu guards perIP, totalConns and live
	totalConns int
	// live holds every accepted connection until it closes, handshake or
	// not; nil once Close began.
	live    map[zkcore.ConnID]*clientconn.Conn
	serving bool

	admin     *admin.Admin      // set by Start, before any connection
	adminHTTP *admin.HTTPServer // nil when Config.AdminAddr is ""
	// metrics holds what the core, the storage and the quorum measure,
	// under ZooKeeper's names (docs/observability.md).
	metrics *metric.Registry
	stm     *storageMetrics
	zm      *zabMetrics // the quorum counters (loop)

	// Persistence: the persister that writes the log, standalone or in an
	// ensemble (persister.go); nil when data lives in memory only.
	disk *persister
	// soloLog is where a standalone server's batches go (its MemberLog,
	// or a Member's BatchWriter); nil in an ensemble.
	soloLog BatchWriter
	// clientsOut, if set, receives the core's client bytes instead of
	// the server's connections: a standalone Member's driver.
	clientsOut    peer.Clients
	trigger       *snap.Trigger
	rng           *rand.Rand
	sinceSnapshot int // txns applied since the last snapshot started (loop)
	// stageNextSnapshot makes the next snapshot stage its nodes (loop): the
	// last streamed one met an ACL list newer than its walk.
	stageNextSnapshot bool
	snapshot          *snapshotJob // the snapshot in progress, or nil (loop)
	snapDone          chan snapshotResult
	snapWriters       sync.WaitGroup // snapshot writer goroutines; Close waits
	// snapshotChunks bounds the encoded nodes a walk hands its writer
	// ahead of it (defaultSnapshotChunks).
	snapshotChunks int
	// spawnWriter starts a snapshot job's writer (a goroutine; a Member's
	// driver runs it when the walk ends), and snapshotWritten is how the
	// writer reports back to the loop (onto snapDone).
	spawnWriter     func(*snapshotJob)
	snapshotWritten func(snapshotResult)
	// snapshotStarted, if set, learns the zxid of each snapshot the loop
	// starts (a Member's driver).
	snapshotStarted func(zxid.ID)
	// walkInOrder makes snapshot walks visit children in name order
	// (datatree.StartFuzzyBodyInOrder): set in a Member.
	walkInOrder bool
	// walkOffLoop makes a walker goroutine step snapshot walks beside the
	// loop (set with the snapshot goroutines; a Member's loop steps them).
	walkOffLoop bool
	// storageMu is held by autopurge and by a learner's TRUNC or snapshot
	// install, which must not race over which snapshots and logs stay: a
	// purge counting snapshots a truncation is about to remove could delete
	// the one the truncation rebuilds from.
	storageMu sync.Mutex
	// dirLock is the data directories' lock, held from Start to Close (see
	// lockDirs); nil without storage.
	dirLock *vfs.DirLock

	quorum *quorumState // nil when standalone
}

// New validates cfg and builds a server; Start makes it listen.
func New(cfg Config) (*Server, error) {
	metrics := metric.NewRegistry()
	cfg.Core.Metrics = metrics
	core, err := zkcore.New(cfg.Core)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Conn.MaxBuffer == 0 {
		cfg.Conn = clientconn.DefaultConfig()
		cfg.Conn.MaxBuffer = cfg.Core.MaxBuffer
		cfg.Conn.MaxOutstanding = cfg.Core.MaxOutstanding
		cfg.Conn.WriteTimeout = time.Duration(cfg.Core.MaxSessionTimeoutMs) * time.Millisecond
	}
	if cfg.Conn.Limiter == nil {
		cfg.Conn.Limiter = newLimiter(&cfg)
	}
	if cfg.Conn.Stats == nil {
		cfg.Conn.Stats = &clientconn.Stats{FailedHandshakes: metrics.Counter("unsuccessful_handshake"),
			SessionlessExpired: metrics.Counter("sessionless_connections_expired")}
	}
	if err := setupTLS(&cfg, logger); err != nil {
		return nil, err
	}
	if cfg.Storage.FS == nil {
		cfg.Storage.FS = vfs.Default
	}
	if cfg.Storage.SnapshotStepNodes <= 0 {
		cfg.Storage.SnapshotStepNodes = 1000
	}
	if cfg.Storage.SnapCount <= 0 {
		cfg.Storage.SnapCount = snap.DefaultSnapCount
	}
	if cfg.Storage.SnapSizeLimitBytes == 0 {
		cfg.Storage.SnapSizeLimitBytes = snap.DefaultSnapSizeLimitBytes
	}
	if cfg.Storage.enabled() {
		cfg.DataDir, cfg.DataLogDir = cfg.Storage.DataDir, cfg.Storage.logDir()
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(cfg.Core.ServerID)))
	s := &Server{
		cfg:      cfg,
		log:      logger,
		core:     core,
		inbox:    make(chan func(), 4096),
		notes:    newConnNotes(),
		stopped:  make(chan struct{}),
		conns:    make(map[zkcore.ConnID]*clientconn.Conn),
		perIP:    make(map[netip.Addr]int),
		live:     make(map[zkcore.ConnID]*clientconn.Conn),
		rng:      rng,
		trigger:  snap.NewTrigger(cfg.Storage.SnapCount, cfg.Storage.SnapSizeLimitBytes, rng),
		snapDone: make(chan snapshotResult, 1),
		metrics:  metrics,
		stm:      newStorageMetrics(metrics),
		zm:       newZabMetrics(metrics),
	}
	s.snapshotGoroutines()
	return s, nil
}

// Start locks the data directories, recovers the data from disk, listens
// on the client address and starts the loop. If another process (or
// server) holds a data directory, Start fails before it reads anything,
// with an error matching vfs.ErrLocked.
func (s *Server) Start() (err error) {
	if err := s.lockDirs(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			s.abortStart()
		}
	}()
	s.start = time.Now()
	s.started = s.start
	_, s.startMono = s.readClock()
	if s.cfg.Storage.enabled() && s.cfg.Storage.NoSync {
		s.log.Warn("forceSync=no: writes are acknowledged before the transaction log is synced to disk; a crash of the machine can lose them")
	}
	switch {
	case s.cfg.Quorum != nil:
		if err := s.startQuorum(); err != nil {
			return err
		}
	case s.cfg.Storage.enabled():
		ml, err := openStandaloneLog(&s.cfg.Storage, s.core, s.cfg.Core.MaxBuffer+1024, s.now(), s.log, &s.storageMu, s.stm)
		if err != nil {
			return err
		}
		s.core.RenewSessions(s.now())
		s.soloLog = ml
		s.disk = s.newPersister(ml.log)
		go s.disk.run()
	}
	if err := s.listen(); err != nil {
		s.closeStorage()
		return err
	}
	if err := s.startAdmin(); err != nil {
		s.closeListeners()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.serving = true
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.loop(ctx) }()
	s.startAccepting()
	s.startPurge(ctx)
	return nil
}

// Addr returns the address plaintext clients connect to, or without one
// the TLS-only address (SecureAddr).
func (s *Server) Addr() net.Addr {
	ln := s.clientListener()
	if ln == nil {
		return s.SecureAddr()
	}
	return ln.Addr()
}

// clientListener returns the plaintext client listener, nil without one.
func (s *Server) clientListener() net.Listener {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	return s.ln
}

// Close stops accepting, closes every connection and stops the loop.
func (s *Server) Close() error {
	if s.cancel == nil {
		return nil
	}
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

// close is Close's work, done once: a second Close returns the first's
// error instead of closing channels and files again.
func (s *Server) close() error {
	s.stopAdmin()
	s.cancel()
	err := s.closeListeners()
	s.wg.Wait()
	for _, c := range s.liveConns() {
		c.Close()
	}
	s.snapWriters.Wait()
	if serr := s.closeStorage(); err == nil {
		err = serr
	}
	if qerr := s.stopQuorum(); err == nil {
		err = qerr
	}
	if uerr := s.unlockDirs(); err == nil {
		err = uerr
	}
	return err
}

// closeStorage writes out what a standalone server's persister holds and
// closes the log (an ensemble member's goes in stopQuorum).
func (s *Server) closeStorage() error {
	if s.disk == nil || s.quorum != nil {
		return nil
	}
	s.disk.close()
	err := s.disk.log.Close()
	s.disk = nil
	if err != nil && !errors.Is(err, s.core.WritesFailed()) {
		return err
	}
	return nil
}

// now reads the clocks the core runs on. MonoMs counts from Start and
// never goes back.
func (s *Server) now() zkcore.Now {
	wall, mono := s.readClock()
	s.lastMono = max(s.lastMono, (mono - s.startMono).Milliseconds())
	return zkcore.Now{WallMs: wall.UnixMilli(), MonoMs: s.lastMono}
}

// readClock reads Config.Clock, or the system clock (mono: since Start).
func (s *Server) readClock() (time.Time, time.Duration) {
	if s.cfg.Clock != nil {
		return s.cfg.Clock()
	}
	t := time.Now()
	return t, t.Sub(s.start)
}

// clockTicks paces the loop's ticks by Config.Clock: the loop polls
// pollsPerTick times a tick of real time and ticks when the clock's
// monotonic reading reaches the next tick, so a fast clock ticks faster
// (up to pollsPerTick times) and a slow one slower. A clock that leapt
// ahead gets one tick, not the ticks it skipped.
type clockTicks struct {
	periodMs int64
	nextMs   int64
	primed   bool // nextMs is set (by the first poll)
}

const pollsPerTick = 4

// due reports whether a tick is due at monoMs and, if so, schedules the
// next.
func (t *clockTicks) due(monoMs int64) bool {
	switch {
	case !t.primed:
		t.nextMs, t.primed = monoMs+t.periodMs, true
		return false
	case monoMs < t.nextMs:
		return false
	}
	t.nextMs += t.periodMs
	if t.nextMs <= monoMs {
		t.nextMs = monoMs + t.periodMs
	}
	return true
}

// loopTick is how often the loop ticks the core (and, in an ensemble, the
// Zab node): Zab's tick for this tickTime (zab.TimingFor), about 50 ms,
// so that sessions expire within that much of their expiry bucket and
// elections, pings and syncLimit keep their lengths in milliseconds.
func loopTick(tickMs int64) time.Duration {
	return zab.TimingFor(tickMs, 1, 1).Tick
}

// tick lets time pass for the core, or for the peer in an ensemble. With
// Config.Clock set, the loop's ticker polls and ticks only count when
// the clock says a tick is due.
func (s *Server) tick(ticks *clockTicks) {
	now := s.now()
	if s.cfg.Clock != nil && !ticks.due(now.MonoMs) {
		return
	}
	if s.quorum != nil {
		s.quorum.peer.Tick(now)
	} else {
		s.core.Tick(now)
	}
}

// inboxBatch bounds the work the loop takes from its inbox before it
// drives the core: under load one drive (replies handed to the writers,
// writes to the persister) then serves many requests.
const inboxBatch = 64

// drainInbox runs what else is already waiting in the inbox, up to
// inboxBatch items, without blocking.
func (s *Server) drainInbox() {
	for range inboxBatch - 1 {
		select {
		case fn := <-s.inbox:
			s.takeNotesFirst()
			fn()
		default:
			return
		}
	}
}

// loop is the only goroutine that touches the core. Each case hands its
// event to a method and nothing more: the same methods a Member exposes
// to the simulator, which orders the events from its seed instead.
func (s *Server) loop(ctx context.Context) {
	defer close(s.stopped)
	tickEvery := loopTick(s.cfg.Core.TickMs)
	ticks := &clockTicks{periodMs: max(1, tickEvery.Milliseconds())}
	if s.cfg.Clock != nil {
		tickEvery /= pollsPerTick
	}
	ticker := time.NewTicker(tickEvery)
	defer ticker.Stop()
	var fromDisk <-chan persisted
	if s.disk != nil {
		fromDisk = s.disk.results
	}
	var quorumIn <-chan zab.Message
	if s.quorum != nil {
		quorumIn = s.quorum.tr.Recv()
	}
	for {
		select {
		case <-ctx.Done():
			s.abortSnapshot()
			return
		case fn := <-s.inbox:
			s.runInbox(fn)
		case <-s.notes.wake:
			s.takeNotes()
		case m := <-quorumIn:
			s.quorumStep(m)
		case r := <-fromDisk:
			s.finishBatch(r)
		case <-s.snapshotStep():
			s.stepSnapshot()
		case r := <-s.snapDone:
			s.snapshotFinished(r)
		case <-ticker.C:
			s.tick(ticks)
		}
		s.afterEvent()
		s.wantWritten()
	}
}

// runInbox runs work posted to the loop, after the notes connection
// goroutines left, then what else already waits in the inbox.
func (s *Server) runInbox(fn func()) {
	s.takeNotesFirst()
	fn()
	s.drainInbox()
}

// afterEvent carries out the work an event left: an ensemble member's
// peer (driveQuorum, which Member.Drive runs in the simulator), or the
// core's Ready batches.
func (s *Server) afterEvent() {
	if s.quorum != nil {
		s.driveQuorum()
	} else {
		s.drive()
	}
}

// drive carries out the core's Ready batches until it has none. Sends go
// out before the proposals of the same batch are applied, so replies and
// events keep their order. Proposals go to the persister and come back
// through finishBatch once they are on disk; without storage a proposal
// is durable as soon as it is made.
func (s *Server) drive() {
	for s.core.HasReady() {
		rd := s.core.Ready()
		for _, snd := range rd.Sends {
			s.sendToClient(snd)
		}
		if len(rd.Proposals) == 0 {
			continue
		}
		if s.disk != nil {
			s.disk.submitTxns(rd.Proposals)
			continue
		}
		now := s.now()
		for _, t := range rd.Proposals {
			s.core.Apply(t, now)
		}
	}
}

// sendToClient hands the core's bytes for one connection to its writer,
// or to a standalone Member's driver.
func (s *Server) sendToClient(snd zkcore.Send) {
	if s.clientsOut != nil {
		s.clientsOut.Send(snd)
		return
	}
	if c, ok := s.conns[snd.Conn]; ok {
		c.Send(snd.Data, snd.Completed, snd.Close)
	}
}

// applyDurable applies txns the persister made durable and starts a
// snapshot when one is due (ZooKeeper's snapCount rule).
func (s *Server) applyDurable(batch []*txn.Txn) {
	now := s.now()
	tree := s.core.Tree()
	tree.HoldWrites() // a walk beside the loop waits for the batch, not the batch for it
	for _, t := range batch {
		s.core.Apply(t, now)
	}
	tree.ReleaseWrites()
	s.sinceSnapshot += len(batch)
	if s.snapshot == nil && s.trigger.Due(s.sinceSnapshot, 0) {
		s.startSnapshot()
	}
}

// post runs fn on the loop. It returns false if the server stopped.
func (s *Server) post(fn func()) bool {
	select {
	case s.inbox <- fn:
		return true
	case <-s.stopped:
		return false
	}
}

// Inspect runs fn on the loop with the core and waits for it. fn must not
// keep the core. It returns false, without calling fn, if the server
// stopped.
func (s *Server) Inspect(fn func(core *zkcore.Server)) bool {
	done := make(chan struct{})
	if !s.post(func() { fn(s.core); close(done) }) {
		return false
	}
	select {
	case <-done:
		return true
	case <-s.stopped:
		return false
	}
}

// accept admits connections from ln, each with cfg, until it closes.
func (s *Server) accept(ln net.Listener, cfg clientconn.Config) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error("accept failed", "err", err)
			}
			return
		}
		s.admit(nc, cfg)
	}
}

// admit enforces maxClientCnxns and hands the socket to the loop.
func (s *Server) admit(nc net.Conn, cfg clientconn.Config) {
	ap, err := netip.ParseAddrPort(nc.RemoteAddr().String())
	if err != nil {
		nc.Close()
		return
	}
	if !s.takeSlot(ap) {
		nc.Close()
		return
	}
	// The loop learns of the connection from a note, which never waits:
	// accepting costs the loop nothing until the client speaks, so ruok
	// answers even while the loop works through a backlog.
	c := clientconn.New(zkcore.ConnID(s.nextID.Add(1)), nc, cfg, handler{s})
	if !s.addLive(c) {
		s.releaseSlot(ap)
		nc.Close()
		return
	}
	s.notes.open(c)
	c.Start()
}

// handler adapts clientconn callbacks to loop work.
type handler struct{ s *Server }

// Connect hands the handshake to the core, after the identity of the
// client's verified TLS certificate, if it presented one: ZooKeeper's x509
// provider authenticates the connection when the TLS handshake completes.
func (h handler) Connect(c *clientconn.Conn, req *zkproto.ConnectRequest) {
	dn, x509 := clienttls.Identity(c.TLS())
	h.s.post(func() {
		if x509 {
			h.s.core.AuthenticateX509(c.ID(), dn)
		}
		h.s.core.Connect(c.ID(), req, h.s.now())
	})
}

func (h handler) Request(c *clientconn.Conn, r zkcore.Request) {
	h.s.post(func() { h.s.core.Request(c.ID(), r, h.s.now()) })
}

// Closed is called by whichever goroutine closes the connection, the loop
// among them (a Send past the output cap), so it must not wait for the
// loop: it leaves a note the loop picks up.
func (h handler) Closed(c *clientconn.Conn, err error) {
	if err != nil {
		h.s.log.Debug("connection closed", "conn", c.ID(), "remote", c.Remote().String(), "err", err)
	}
	h.s.releaseSlot(c.Remote())
	h.s.dropLive(c.ID())
	h.s.notes.closed(c.ID())
}

// Written is called by the connection's writer; see Closed.
func (h handler) Written(c *clientconn.Conn, n int) { h.s.notes.written(c.ID(), n) }

func (h handler) FourLetter(c *clientconn.Conn, cmd string, arg int64) []byte {
	return h.s.fourLetter(c.ID(), cmd, arg)
}
