package admin

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
	"keeper/internal/metric"
)

// DefaultTraceMask is Apache ZooKeeper's initial trace mask: client
// requests, server packets, sessions and warnings (2|16|32|256). gtmk
// reports it until stmk changes it.
const DefaultTraceMask int64 = 306

// StateStandalone is the server state of a server without an ensemble.
const StateStandalone = "standalone"

// notServing is what commands that need the core say once it has stopped.
const notServing = "This ZooKeeper instance is not currently serving requests"

// Core gives commands access to the service core. server.Server implements
// it.
type Core interface {
	// Inspect runs fn on the goroutine that owns the core and waits for it.
	// fn must not keep the core. It returns false, without calling fn, if
	// the server is not serving.
	Inspect(fn func(core *zkcore.Server)) bool
}

// ConnectionGauges are ZooKeeper's gauges of client connection starts.
type ConnectionGauges struct {
	// OutstandingTLSHandshakes is the TLS handshakes under way
	// (outstanding_tls_handshake).
	OutstandingTLSHandshakes int64
	// NonMTLSRemote and NonMTLSLocal count, since the start, the
	// connections served without TLS from another address and from a
	// loopback one (non_mtls_remote_conn_count, non_mtls_local_conn_count).
	NonMTLSRemote, NonMTLSLocal int64
}

// Config configures an Admin.
type Config struct {
	// Version is the full version text of srvr, stat, mntr and envi, for
	// example "3.8.0-keeper-0123456789ab, built on 05/17/2026 09:30 GMT"
	// (Build.FullVersion). Required.
	Version string
	// Build is the binary's build information, which envi and the
	// keeper_build_info metric report.
	Build Build
	// FourLetterWhitelist lists the four-letter words that run; "*" allows
	// all. It does not apply to the HTTP commands, as in ZooKeeper.
	FourLetterWhitelist []string
	// SnapDir and LogDir are the directories whose total file size dirs and
	// conf report (ZooKeeper's dataDir/version-2 and dataLogDir/version-2).
	// Empty or missing directories count as 0 bytes.
	SnapDir, LogDir string
	// ConfLines are the key=value lines of conf. A dataDirSize or
	// dataLogSize line gets the live size of SnapDir or LogDir.
	ConfLines []string
	// QuorumConf, if set, returns what an ensemble member's conf prints
	// after ConfLines, as ZooKeeper's QuorumZooKeeperServer does:
	// initLimit, syncLimit, electionAlg, electionPort, quorumPort,
	// peerType, then "membership: " and the active configuration's text
	// (no newline at its end); "" for a standalone server. It runs inside
	// Inspect, on the goroutine that owns the core.
	QuorumConf func() string
	// Start is the instant the core's monotonic clock (zkcore.Now.MonoMs)
	// counts from. Uptime is measured from it, and session expiry times are
	// turned into wall-clock times with it.
	Start time.Time
	// State returns the server state srvr and mntr report ("standalone",
	// "leader", "follower", "observer", "read-only"; "" while an ensemble
	// member has no leader, which makes the words answer as a stopped
	// server); nil means standalone. It must be safe to call from any
	// goroutine.
	State func() string
	// Quorum, if set, reports the ensemble for mntr (peer_state,
	// quorum_size and a leader's learners). It runs inside Inspect, on the
	// goroutine that owns the core; ok is false for a standalone server.
	Quorum func() (q QuorumFacts, ok bool)
	// Ensemble, if set, describes the ensemble for the leader,
	// voting_view, zabstate and observers commands. It runs inside
	// Inspect, on the goroutine that owns the core; ok is false for a
	// standalone server.
	Ensemble func() (f EnsembleFacts, ok bool)
	// ResetObservers, if set, zeroes a leader's per-observer figures
	// (observer_connection_stat_reset). It runs inside Inspect.
	ResetObservers func()
	// InitialConfig is the text of the configuration file the server
	// started from (initial_configuration); "" answers null, as ZooKeeper
	// does when it read no file.
	InitialConfig string
	// LastSnapshot, if set, reports the last snapshot written, or before
	// the first one the snapshot the state was loaded from: its zxid and
	// when its file was written (last_snapshot). ok is false when there is
	// none. It must be safe to call from any goroutine.
	LastSnapshot func() (z zxid.ID, at time.Time, ok bool)
	// Connections, if set, reports how the client connections started
	// (the TLS gauges of mntr). It must be safe to call from any
	// goroutine.
	Connections func() ConnectionGauges
	// SystemProperties are the settings system_properties lists besides
	// the runtime's, under the system property names ZooKeeper reads them
	// from (zookeeper.snapCount, jute.maxbuffer, ...).
	SystemProperties map[string]string
	// Metrics holds the counters and summaries the core, the storage and
	// the quorum record; mntr and /metrics show each one registered under a
	// name ZooKeeper uses (catalog). nil means none.
	Metrics *metric.Registry
	// Logger receives the admin logs; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.Version == "":
		return errors.New("admin: version must be set")
	case c.Start.IsZero():
		return errors.New("admin: start time must be set")
	}
	return nil
}

// Admin runs the operator commands of one server. It is safe for concurrent
// use: four-letter words and HTTP requests arrive on many goroutines.
type Admin struct {
	cfg       Config
	log       *slog.Logger
	core      Core
	traceMask atomic.Int64
	registry  *prometheus.Registry
	// insecure counts the plaintext connections a port-unified admin
	// port served (insecure_admin_count).
	insecure *metric.Counter
}

// New returns an Admin that reads core.
func New(cfg Config, core Core) (*Admin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &Admin{cfg: cfg, log: logger, core: core, registry: prometheus.NewRegistry(),
		insecure: cfg.Metrics.Counter("insecure_admin_count")}
	a.traceMask.Store(DefaultTraceMask)
	if err := a.registry.Register(newCollector(a)); err != nil {
		return nil, err
	}
	if err := a.registry.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := a.registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	return a, nil
}

// TraceMask returns the trace mask gtmk reports. Keeper keeps it for
// compatibility only; it does not filter any log.
func (a *Admin) TraceMask() int64 { return a.traceMask.Load() }

// state returns the server state.
func (a *Admin) state() string {
	if a.cfg.State == nil {
		return StateStandalone
	}
	return a.cfg.State()
}

// uptime returns the time since the server started, in ms.
func (a *Admin) uptime() int64 { return time.Since(a.cfg.Start).Milliseconds() }

// wallTime converts a reading of the core's monotonic clock to wall time.
func (a *Admin) wallTime(monoMs int64) time.Time {
	return a.cfg.Start.Add(time.Duration(monoMs) * time.Millisecond)
}

// facts are the scalar figures srvr, stat, mntr and the metrics share,
// copied from the core in one Inspect.
type facts struct {
	quorum      QuorumFacts
	inQuorum    bool
	stats       zkcore.Stats
	conns       []zkcore.ConnInfo
	outstanding int
	lastZxid    zxid.ID
	nodeCount   int
	ephemerals  int
	dataSize    int64
	watchCount  int
	sessions    int
}

// facts copies the shared figures. ok is false if the server is not
// serving.
func (a *Admin) facts() (f facts, ok bool) {
	ok = a.core.Inspect(func(core *zkcore.Server) {
		tree := core.Tree()
		f = facts{
			stats:       core.Stats(),
			conns:       core.Conns(),
			outstanding: core.OutstandingRequests(),
			lastZxid:    core.LastZxid(),
			nodeCount:   tree.NodeCount(),
			ephemerals:  tree.EphemeralCount(),
			dataSize:    tree.ApproximateDataSize(),
			watchCount:  core.Watches().Count(),
			sessions:    core.Sessions().Len(),
		}
		if a.cfg.Quorum != nil {
			f.quorum, f.inQuorum = a.cfg.Quorum()
		}
	})
	return f, ok
}

// QuorumFacts describe a member of an ensemble; the learner figures are
// set only when Leading.
type QuorumFacts struct {
	// PeerState is ZooKeeper's detailed peer state: "looking", or the role
	// and the Zab phase, such as "leading - broadcast".
	PeerState       string
	QuorumSize      int // voters in the ensemble
	Leading         bool
	Followers       int
	SyncedFollowers int
	Observers       int
	PendingSyncs    int
	// LeaderUptimeMs is how long the member has served as leader; 0 while
	// it is not serving yet.
	LeaderUptimeMs int64
	// LastProposalBytes, MinProposalBytes and MaxProposalBytes are the
	// sizes of the txns it proposed as leader, -1 before the first.
	LastProposalBytes, MinProposalBytes, MaxProposalBytes int64
	// Observing is set on an observer; ObserverMasterID is the member it
	// syncs from (its leader: keeper has no observer masters), -1 while it
	// has none.
	Observing        bool
	ObserverMasterID int64
}

// sessionOf maps each connection to its session id (0 before the
// handshake); watches are kept per connection but shown per session.
func sessionOf(conns []zkcore.ConnInfo) map[zkcore.ConnID]int64 {
	m := make(map[zkcore.ConnID]int64, len(conns))
	for _, c := range conns {
		m[c.ID] = c.SessionID
	}
	return m
}
