package zkcore

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"

	"keeper/coordination/acl"
	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/sasl"
	"keeper/coordination/session"
	"keeper/coordination/txn"
	"keeper/coordination/watch"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/metric"
)

// ConnID identifies a client connection for the lifetime of the process.
type ConnID = watch.ConnID

// Now is the time as the driver sees it.
type Now struct {
	// WallMs is wall-clock milliseconds since the Unix epoch: it becomes
	// the time of transactions (ctime, mtime).
	WallMs int64
	// MonoMs is a monotonic millisecond clock: it drives session expiry.
	MonoMs int64
}

// Config configures a Server. The zero value is not valid; start from
// DefaultConfig.
type Config struct {
	// ServerID is the id in the high byte of session ids: 1 standalone.
	ServerID int64
	// TickMs is the length of a tick in ms (tickTime). Session expiry is
	// bucketed by a twentieth of it (ExpiryBucketMs), and the driver calls
	// Tick more often than that: a session expires within about a tenth of
	// a tick after its timeout, where Apache ZooKeeper's buckets of a whole
	// tick let it live up to a tick longer.
	TickMs int64
	// MinSessionTimeoutMs and MaxSessionTimeoutMs bound the negotiated
	// session timeout.
	MinSessionTimeoutMs int32
	MaxSessionTimeoutMs int32
	// ExtendedTypes enables TTL nodes (zookeeper.extendedTypesEnabled).
	ExtendedTypes bool
	// EnforceQuota refuses a create or setData that would pass a quota's
	// hard limit with QuotaExceeded (zookeeper.enforceQuota); soft limits
	// are only logged.
	EnforceQuota bool
	// SuperDigest is "user:base64(sha1)" of the super user, or empty.
	SuperDigest string
	// Auth configures SASL, the sasl ACL scheme and enforced
	// authentication (sasl.go).
	Auth AuthConfig
	// X509 turns the x509 authentication provider on (acl.Authenticator's
	// X509): the server serves TLS clients, or zoo.cfg names the provider.
	// X509SuperUser is the subject DN that is super.
	X509          bool
	X509SuperUser string
	// MaxBuffer is jute.maxbuffer: the largest request and the largest
	// buffer inside a record, in bytes.
	MaxBuffer int
	// MaxOutstanding bounds the requests a connection may have queued;
	// beyond it the driver should stop reading from that connection.
	MaxOutstanding int
	// MaxConnOutputBytes and MaxOutputBytes bound the output emitted and
	// not yet written, for one connection and for all of them: above them
	// the core runs no more of a connection's requests until the driver
	// reports bytes written (see Written). 0 means no bound.
	MaxConnOutputBytes int
	MaxOutputBytes     int
	// ContainerCheckMs is how often containers and TTL nodes are checked
	// (znode.container.checkIntervalMs).
	ContainerCheckMs int64
	// ContainerMaxPerMinute bounds deletions by the reaper.
	ContainerMaxPerMinute int
	// ContainerMaxNeverUsedMs is how long a container that never had a
	// child lives; 0 keeps such containers forever.
	ContainerMaxNeverUsedMs int64
	// HoldHandshakeMs is how long after losing its leader (or starting) a
	// member without one keeps a client's handshake waiting instead of
	// closing the connection at once, as Apache ZooKeeper does: an
	// election usually ends well within it, and the client then connects
	// here without the back-off it takes after every member refused it
	// (a second in go-zookeeper). 0 refuses at once.
	HoldHandshakeMs int64
	// EnsembleConfig is what /zookeeper/config holds on a member of an
	// ensemble (zoocfg.Config.ConfigData: its server lines and version);
	// nil on a standalone server, whose node stays empty. Restore writes
	// it into every tree it is given, as ZooKeeper does at start and after
	// a learner's sync (docs/zookeeper-protocol.md §5.6).
	EnsembleConfig []byte
	// EnsembleConfigVersion is the version of EnsembleConfig, which
	// becomes the node's mzxid.
	EnsembleConfigVersion int64
	// ReconfigEnabled allows the reconfig operation (reconfigEnabled);
	// without it every reconfig fails with ReconfigDisabled. Ensemble
	// answers what a leader needs to prepare one; nil (a standalone
	// server) answers Unimplemented. StandaloneEnabled is zoo.cfg's: with
	// it a new configuration needs two voters, else one.
	ReconfigEnabled   bool
	Ensemble          Ensemble
	StandaloneEnabled bool
	// StartWallMs is the wall clock at start, in ms. It seeds session ids
	// so that a restarted server does not reuse the ids of its last run.
	StartWallMs int64
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Metrics receives the core's counters and summaries under ZooKeeper's
	// names (docs/observability.md); nil keeps them unreported.
	Metrics *metric.Registry
}

// DefaultConfig returns the defaults of a standalone Apache ZooKeeper with
// tickTime 2000.
func DefaultConfig() Config {
	return Config{
		ServerID:                1,
		TickMs:                  2000,
		MinSessionTimeoutMs:     4000,
		MaxSessionTimeoutMs:     40000,
		MaxBuffer:               jute.DefaultMaxBuffer,
		MaxOutstanding:          1000,
		MaxConnOutputBytes:      DefaultMaxConnOutputBytes,
		MaxOutputBytes:          DefaultMaxOutputBytes,
		ContainerCheckMs:        60000,
		ContainerMaxPerMinute:   10000,
		ContainerMaxNeverUsedMs: 0,
		HoldHandshakeMs:         1000,
		StandaloneEnabled:       true,
	}
}

// ExpiryBucketMs is the width of a session expiry bucket for tickTime
// tickMs: a twentieth of it, at least 10 ms (so that a table of many
// sessions with long timeouts does not spread over too many buckets for
// Tick to walk).
func ExpiryBucketMs(tickMs int64) int64 {
	return min(tickMs, max(10, tickMs/20))
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.ServerID < 0 || c.ServerID > 255:
		return fmt.Errorf("zkcore: server id %d out of range [0, 255]", c.ServerID)
	case c.ExtendedTypes && c.ServerID > 254:
		return fmt.Errorf("zkcore: server id %d must be at most 254 with extended types", c.ServerID)
	case c.TickMs <= 0:
		return fmt.Errorf("zkcore: tick %d ms must be positive", c.TickMs)
	case c.MinSessionTimeoutMs <= 0 || c.MaxSessionTimeoutMs < c.MinSessionTimeoutMs:
		return fmt.Errorf("zkcore: session timeout bounds [%d, %d] invalid",
			c.MinSessionTimeoutMs, c.MaxSessionTimeoutMs)
	case c.MaxBuffer <= 0:
		return fmt.Errorf("zkcore: max buffer %d must be positive", c.MaxBuffer)
	case c.MaxOutstanding <= 0:
		return fmt.Errorf("zkcore: max outstanding %d must be positive", c.MaxOutstanding)
	case c.MaxConnOutputBytes < 0 || c.MaxOutputBytes < 0:
		return fmt.Errorf("zkcore: output budgets %d/%d must not be negative", c.MaxConnOutputBytes, c.MaxOutputBytes)
	case c.ContainerCheckMs <= 0 || c.ContainerMaxPerMinute <= 0 || c.ContainerMaxNeverUsedMs < 0:
		return errors.New("zkcore: container reaper settings must be positive")
	}
	return nil
}

// Send is bytes for one connection: whole frames, ready for the socket.
type Send struct {
	Conn ConnID
	// Data holds length-prefixed frames. The caller owns it.
	Data []byte
	// Completed is the number of the connection's requests whose replies
	// are in Data; drivers use it to throttle reading.
	Completed int
	// Close asks the driver to close the connection after sending Data.
	Close bool
}

// Ready is a batch of work for the driver; see the package comment for the
// order in which to carry it out.
type Ready struct {
	Proposals []*txn.Txn
	Sends     []Send
	// Outbox is, in an ensemble, what goes to Zab in the order the
	// clients asked for it: the leader's txns to propose, a learner's
	// writes to forward to the leader, syncs to pass on (each completes
	// with a SyncDone, in order) and a learner's session revalidations
	// (each answered with Revalidated). The order matters: a sync issued before a
	// write must not wait for that write. In an ensemble Proposals is empty.
	Outbox []Out
}

// Out is one item of Ready.Outbox; exactly one field is set.
type Out struct {
	Txn     *txn.Txn
	Forward *Forward
	Sync    bool
	// Revalidate asks the leader whether a session a client reattaches to
	// is alive (learner); the answer goes to Revalidated.
	Revalidate *Revalidate
}

// Revalidate is a learner's question to the leader about a session a
// client reattaches to, with the timeout negotiated for the new
// connection (Zab's REVALIDATE).
type Revalidate struct {
	SessionID int64
	TimeoutMs int32
}

// Server is the ZooKeeper service state of one server. It is not safe for
// concurrent use: one goroutine, or the simulator, owns it.
type Server struct {
	cfg      Config
	log      *slog.Logger
	tree     *datatree.Tree
	sessions *session.Table
	watches  *watch.Manager
	auth     acl.Authenticator
	view     *view

	// authCfg is Config.Auth; digest is the DIGEST-MD5 configuration
	// every connection's SASL exchange uses, nil without SASL.
	authCfg AuthConfig
	digest  *sasl.DigestMD5Config
	gssapi  *sasl.GSSAPIConfig // Kerberos for clients; nil without

	conns       map[ConnID]*conn
	sessionConn map[int64]ConnID // the connection a live session is attached to
	dirty       []ConnID         // connections with output, in the order they got it
	heldBytes   int              // output emitted and not reported written (Written)
	blocked     []ConnID         // connections waiting for output to drain, in order

	// changes is Apply's buffer for the changes of the txn it applies,
	// reused from txn to txn (emptied, so that it keeps nothing alive).
	changes []datatree.Change
	// scratch is replyFrame's encoding buffer, reused.
	scratch []byte

	lastProposed zxid.ID // the zxid of the last prepared txn
	proposals    []*txn.Txn
	// reconfigPending is the zxid of a reconfiguration this leader
	// prepared and has not applied, or 0.
	reconfigPending zxid.ID

	reaper  reaper
	stats   serverStats
	metrics *coreMetrics

	// writeErr is the storage failure that stopped all writes; see
	// FailWrites.
	writeErr error

	mode    Mode
	outbox  []Out
	syncs   []syncWait      // client syncs waiting for the leader, oldest first
	touched map[int64]int32 // sessions active since the last TakeTouches (learner)
	// localSessions are the sessions a read-only server created: never
	// committed, they end when it finds a leader.
	localSessions map[int64]bool
	// notServingSinceMs is when the member last lost its leader (MonoMs);
	// held lists the connections whose handshake waits for one (hold.go).
	notServingSinceMs int64
	held              []ConnID
}

// New returns a Server with the built-in tree of a fresh ZooKeeper.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sessions, err := session.NewTable(session.Config{TickMs: ExpiryBucketMs(cfg.TickMs), ServerID: cfg.ServerID, StartMs: cfg.StartWallMs})
	if err != nil {
		return nil, err
	}
	tree := datatree.New()
	s := &Server{
		cfg:           cfg,
		log:           logger,
		tree:          tree,
		sessions:      sessions,
		watches:       watch.New(),
		auth:          acl.Authenticator{SuperDigest: cfg.SuperDigest, X509: cfg.X509, X509SuperUser: cfg.X509SuperUser},
		conns:         make(map[ConnID]*conn),
		sessionConn:   make(map[int64]ConnID),
		touched:       make(map[int64]int32),
		localSessions: make(map[int64]bool),
	}
	cfg.Auth.apply(&s.auth)
	if err := cfg.Auth.validate(s.auth); err != nil {
		return nil, err
	}
	s.authCfg = cfg.Auth
	s.digest = s.digestConfig(&cfg.Auth)
	s.gssapi = s.gssapiConfig(&cfg.Auth)
	s.view = newView(tree)
	s.stats.reset()
	s.metrics = newCoreMetrics(cfg.Metrics)
	return s, nil
}

// Tree returns the committed tree. Callers must not modify it.
func (s *Server) Tree() *datatree.Tree { return s.tree }

// Sessions returns the session table. Callers must not modify it.
func (s *Server) Sessions() *session.Table { return s.sessions }

// Watches returns the watch tables. Callers must not modify them.
func (s *Server) Watches() *watch.Manager { return s.watches }

// LastZxid returns the zxid of the last applied transaction.
func (s *Server) LastZxid() zxid.ID { return s.tree.LastZxid() }

// HasReady reports whether Ready has work.
func (s *Server) HasReady() bool {
	return len(s.proposals) > 0 || len(s.dirty) > 0 || len(s.outbox) > 0
}

// Ready returns the work accumulated since the last call and resets it.
func (s *Server) Ready() Ready {
	rd := Ready{Proposals: s.proposals, Outbox: s.outbox}
	s.proposals, s.outbox = nil, nil
	for _, id := range s.dirty {
		c, ok := s.conns[id]
		if !ok || !c.dirty {
			continue
		}
		rd.Sends = append(rd.Sends, Send{Conn: id, Data: c.out, Completed: c.completed, Close: c.closeAfter})
		c.out, c.dirty, c.completed = nil, false, 0
		if c.closeAfter {
			s.dropConn(c)
		}
	}
	s.dirty = s.dirty[:0]
	return rd
}

// Disconnect forgets a connection whose socket closed. Its session lives on
// until it expires or another connection takes it over.
func (s *Server) Disconnect(id ConnID) {
	if c, ok := s.conns[id]; ok {
		s.dropConn(c)
	}
}

// dropConn removes every trace of c. Output not yet taken by Ready is lost.
func (s *Server) dropConn(c *conn) {
	s.releaseOutput(c)
	delete(s.conns, c.id)
	s.watches.RemoveConn(c.id)
	if c.session != 0 && s.sessionConn[c.session] == c.id {
		delete(s.sessionConn, c.session)
	}
}

// NewConn registers a connection from remote before its handshake. Every
// connection starts with the identity ip:<remote address> (docs/zookeeper-protocol.md §7.2).
func (s *Server) NewConn(id ConnID, remote netip.AddrPort, now Now) {
	c := &conn{id: id, remote: remote, establishedMs: now.WallMs}
	c.ids = []zkproto.ID{{Scheme: "ip", ID: remote.Addr().Unmap().String()}}
	s.conns[id] = c
}

// Outstanding returns how many requests connection id has queued or in
// flight; the driver throttles reading above Config.MaxOutstanding.
func (s *Server) Outstanding(id ConnID) int {
	if c, ok := s.conns[id]; ok {
		return len(c.queue) + c.heldRequests()
	}
	return 0
}
