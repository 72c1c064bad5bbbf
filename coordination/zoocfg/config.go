package zoocfg

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults that Apache ZooKeeper 3.8 uses when zoo.cfg leaves a key out.
const (
	// DefaultTickTime is ZooKeeperServer.DEFAULT_TICK_TIME. The sample
	// zoo.cfg sets 2000 ms, but the code default is 3000 ms.
	DefaultTickTime = 3000 * time.Millisecond
	// DefaultMaxClientCnxns bounds connections from one IP address.
	DefaultMaxClientCnxns = 60
	// DefaultGlobalOutstandingLimit is ZooKeeper's globalOutstandingLimit.
	DefaultGlobalOutstandingLimit = 1000
	// DefaultRequestThrottleStallTime is ZooKeeper's
	// request_throttle_stall_time.
	DefaultRequestThrottleStallTime = 100 * time.Millisecond
	// DefaultAdminServerPort is the admin HTTP server's port.
	DefaultAdminServerPort = 8080
	// DefaultAdminServerAddress is the admin HTTP server's listen address.
	DefaultAdminServerAddress = "0.0.0.0"
	// DefaultJuteMaxBufferBytes is jute.maxbuffer: the largest record
	// (hence znode data) a server accepts, just under 1 MiB.
	DefaultJuteMaxBufferBytes = 0xfffff
	// DefaultContainerCheckInterval is znode.container.checkIntervalMs's
	// default: a minute, as in ZooKeeper.
	DefaultContainerCheckInterval = time.Minute
	// DefaultSnapCount is the number of transactions between snapshots.
	DefaultSnapCount = 100000
	// MinSnapCount is the smallest snapCount ZooKeeper honours; lower
	// values are raised to it.
	MinSnapCount = 2
	// DefaultAutopurgeSnapRetainCount is how many snapshots autopurge keeps.
	DefaultAutopurgeSnapRetainCount = 3
	// MinAutopurgeSnapRetainCount is the fewest snapshots autopurge may keep;
	// lower values are raised to it, as ZooKeeper does.
	MinAutopurgeSnapRetainCount = 3
	// DefaultPreAllocSizeKB is how far transaction log files are
	// preallocated, in KiB (64 MiB).
	DefaultPreAllocSizeKB = 64 * 1024
	// MaxExtendedServerID is the largest server id allowed when extended
	// types (TTL nodes) are enabled: the id must fit in the ephemeral
	// owner's reserved byte.
	MaxExtendedServerID = 0xfe
)

// Config is a ZooKeeper server configuration, as read from zoo.cfg.
// The zero value is not valid; start from Default or Parse.
type Config struct {
	// TickTime is the basic time unit (zoo.cfg tickTime, in ms).
	TickTime time.Duration
	// InitLimitTicks bounds, in ticks, how long followers may take to
	// connect and sync to a leader (initLimit). Needed in a quorum.
	InitLimitTicks int
	// SyncLimitTicks bounds, in ticks, how far a follower may lag behind
	// the leader (syncLimit). Needed in a quorum.
	SyncLimitTicks int
	// DataDir holds snapshots and the myid file (dataDir). Required.
	DataDir string
	// DataLogDir holds the transaction log (dataLogDir). Parse sets it to
	// DataDir when zoo.cfg leaves it out; empty means DataDir.
	DataLogDir string
	// ClientPort is the port clients connect to (clientPort); 0 means unset.
	ClientPort int
	// ClientPortAddress is the address the client port binds to
	// (clientPortAddress); empty means all addresses.
	ClientPortAddress string
	// MaxClientCnxns bounds concurrent connections from one IP address
	// (maxClientCnxns); 0 means no limit.
	MaxClientCnxns int
	// MaxCnxns bounds concurrent client connections from all addresses
	// together (maxCnxns); 0 means no limit.
	MaxCnxns int
	// GlobalOutstandingLimit bounds the requests read and not yet answered
	// over all connections (globalOutstandingLimit); above it, connections
	// with a request in flight stop being read.
	GlobalOutstandingLimit int
	// RequestThrottleMaxRequests is a second such bound
	// (request_throttle_max_requests); 0 disables it.
	RequestThrottleMaxRequests int
	// RequestThrottleStallTime is how often a throttled connection checks
	// again (request_throttle_stall_time, ms).
	RequestThrottleStallTime time.Duration
	// RequestThrottleDropStale: requests of closed connections are dropped
	// (request_throttle_drop_stale). keeper always drops them; false is
	// accepted with a warning.
	RequestThrottleDropStale bool
	// MinSessionTimeout is the smallest session timeout the server grants
	// (minSessionTimeout, ms). Parse defaults it to 2*TickTime.
	MinSessionTimeout time.Duration
	// MaxSessionTimeout is the largest session timeout the server grants
	// (maxSessionTimeout, ms). Parse defaults it to 20*TickTime.
	MaxSessionTimeout time.Duration
	// FourLetterWhitelist lists the enabled four-letter words
	// (4lw.commands.whitelist), trimmed, in file order. "*" enables all.
	// "srvr" is always enabled whatever the list says; use FourLetterAllowed.
	FourLetterWhitelist []string
	// AdminEnableServer turns the admin HTTP server on (admin.enableServer).
	AdminEnableServer bool
	// AdminServerPort is the admin HTTP server's port (admin.serverPort).
	AdminServerPort int
	// AdminServerAddress is the admin HTTP server's address
	// (admin.serverAddress).
	AdminServerAddress string
	// AdminForceHTTPS makes the admin server speak HTTPS only
	// (admin.forceHttps); it wins over AdminPortUnification. Both take the
	// key and trust stores from ssl.quorum.keyStore.* and
	// ssl.quorum.trustStore.*, as ZooKeeper's admin server does
	// (docs/tls.md).
	AdminForceHTTPS bool
	// AdminPortUnification serves HTTP and HTTPS on the admin port
	// (admin.portUnification).
	AdminPortUnification bool
	// AdminNeedClientAuth requires and verifies an HTTPS client's
	// certificate (admin.needClientAuth). Without AdminForceHTTPS or
	// AdminPortUnification it would protect nothing, so Validate refuses
	// it there.
	AdminNeedClientAuth bool
	// JuteMaxBufferBytes bounds one jute record (jute.maxbuffer).
	JuteMaxBufferBytes int
	// ContainerCheckInterval is how often the leader looks for empty
	// containers and expired TTL nodes to delete
	// (znode.container.checkIntervalMs).
	ContainerCheckInterval time.Duration
	// SnapCount is the number of transactions between snapshots
	// (snapCount); at least MinSnapCount.
	SnapCount int
	// AutopurgeSnapRetainCount is how many snapshots and their logs
	// autopurge keeps (autopurge.snapRetainCount); at least 3.
	AutopurgeSnapRetainCount int
	// AutopurgePurgeInterval is how often autopurge runs
	// (autopurge.purgeInterval, in hours); 0 disables it.
	AutopurgePurgeInterval time.Duration
	// ExtendedTypesEnabled allows TTL nodes (extendedTypesEnabled).
	ExtendedTypesEnabled bool
	// EnforceQuota refuses writes past a quota's hard limits
	// (enforceQuota).
	EnforceQuota bool
	// SuperDigest is "user:base64(sha1(user:password))"; a client that
	// authenticates with digest as that user bypasses ACLs. Empty disables.
	SuperDigest string
	// ReconfigEnabled allows dynamic reconfiguration (reconfigEnabled).
	ReconfigEnabled bool
	// QuorumListenOnAllIPs listens for the other servers on every
	// address, at the ports of this server's line, rather than only on
	// the line's host (quorumListenOnAllIPs): for a host name that does
	// not resolve to a local address, as behind a container's service.
	QuorumListenOnAllIPs bool
	// StandaloneEnabled lets a configuration with one participant run
	// standalone (standaloneEnabled). When false, it runs as a quorum of one.
	StandaloneEnabled bool
	// ReadOnlyModeEnabled lets a server partitioned from its quorum serve
	// reads (readonlymode.enabled).
	ReadOnlyModeEnabled bool
	// SnapshotTrustEmpty starts the server with an empty tree when its data
	// directories cannot account for their data, instead of refusing, after
	// setting the files aside (snapshot.trust.empty, ZooKeeper's
	// zookeeper.snapshot.trust.empty). See docs/storage-recovery.md.
	SnapshotTrustEmpty bool
	// PreAllocSizeKB is the transaction log preallocation step, in KiB
	// (preAllocSize).
	PreAllocSizeKB int64
	// ForceSync fsyncs the transaction log before acknowledging
	// (forceSync=yes|no).
	ForceSync bool
	// TLS is TLS for clients: secureClientPort, client.portUnification,
	// ssl.* and the x509 provider's keys (tls.go).
	TLS ClientTLS
	// QuorumTLS is TLS between ensemble members: sslQuorum,
	// portUnification, sslQuorumReloadCertFiles and ssl.quorum.*
	// (quorumtls.go).
	QuorumTLS QuorumTLS
	// SASL is SASL for clients, the sasl ACL scheme and enforced
	// authentication (sasl.go).
	SASL SASL
	// QuorumSASL is SASL between ensemble members: quorum.auth.*
	// (quorumsasl.go).
	QuorumSASL QuorumSASL
	// Servers is the ensemble (server.N lines, of the static file or of the
	// file DynamicConfigFile names), sorted by ID.
	Servers []Server
	// ServerOrder is the order ZooKeeper lists Servers in
	// /zookeeper/config: a Java hash map's, derived from the keys of the
	// file the servers came from (javaorder.go). nil means by ID.
	ServerOrder []int64
	// ConfigVersion is the version of the configuration in Servers: the
	// static file's version line, or the version in the dynamic file's
	// name; 0 when neither has one.
	ConfigVersion int64
	// DynamicConfigFile names the file that holds the servers
	// (dynamicConfigFile), as written; Load reads it. Empty when the static
	// file holds them.
	DynamicConfigFile string
	// NextEnsemble is the configuration in zoo.cfg.dynamic.next, which a
	// server with reconfiguration enabled saw proposed but not committed;
	// nil when there is none. Load reads it only with DynamicConfigFile.
	NextEnsemble *Ensemble
	// MyID is this server's id. zoo.cfg does not hold it: the caller reads
	// DataDir/myid with ParseMyID and sets it before Validate. 0 means unset.
	MyID int64
}

// defaults returns the configuration an empty zoo.cfg would produce, apart
// from the session timeouts, which Parse derives from TickTime at the end.
func defaults() *Config {
	return &Config{
		TickTime:                 DefaultTickTime,
		MaxClientCnxns:           DefaultMaxClientCnxns,
		GlobalOutstandingLimit:   DefaultGlobalOutstandingLimit,
		RequestThrottleStallTime: DefaultRequestThrottleStallTime,
		RequestThrottleDropStale: true,
		FourLetterWhitelist:      []string{"srvr"},
		AdminEnableServer:        true,
		AdminServerPort:          DefaultAdminServerPort,
		AdminServerAddress:       DefaultAdminServerAddress,
		JuteMaxBufferBytes:       DefaultJuteMaxBufferBytes,
		ContainerCheckInterval:   DefaultContainerCheckInterval,
		SnapCount:                DefaultSnapCount,
		AutopurgeSnapRetainCount: DefaultAutopurgeSnapRetainCount,
		StandaloneEnabled:        true,
		PreAllocSizeKB:           DefaultPreAllocSizeKB,
		ForceSync:                true,
		TLS:                      ClientTLS{HostnameVerification: true},
		QuorumTLS: QuorumTLS{HostnameVerification: true, ReverseDNSLookup: true,
			HandshakeDetectionTimeout: DefaultHandshakeDetectionTimeout},
	}
}

// Default returns the configuration keeper uses when no zoo.cfg is given: a
// standalone server for clients on 127.0.0.1:2181 with ZooKeeper's defaults
// for everything else. DataDir is left empty for the caller to choose.
func Default() *Config {
	c := defaults()
	c.ClientPort = 2181
	c.ClientPortAddress = "127.0.0.1"
	c.MinSessionTimeout = 2 * c.TickTime
	c.MaxSessionTimeout = 20 * c.TickTime
	return c
}

// TxnLogDir returns the directory for the transaction log: DataLogDir, or
// DataDir when that is empty.
func (c *Config) TxnLogDir() string {
	if c.DataLogDir != "" {
		return c.DataLogDir
	}
	return c.DataDir
}

// Participants returns the servers that vote.
func (c *Config) Participants() []Server {
	return c.serversWithRole(Participant)
}

// Observers returns the servers that follow without voting.
func (c *Config) Observers() []Server {
	return c.serversWithRole(Observer)
}

func (c *Config) serversWithRole(r Role) []Server {
	var out []Server
	for _, s := range c.Servers {
		if s.Role == r {
			out = append(out, s)
		}
	}
	return out
}

// Distributed reports whether the server runs as part of a quorum rather
// than standalone, by ZooKeeper's rule: more than one participant, or
// standalone mode disabled.
func (c *Config) Distributed() bool {
	return len(c.Servers) > 0 && (!c.StandaloneEnabled || len(c.Participants()) > 1)
}

// Self returns this server's entry in Servers, if MyID names one.
func (c *Config) Self() (Server, bool) {
	for _, s := range c.Servers {
		if s.ID == c.MyID {
			return s, true
		}
	}
	return Server{}, false
}

// ClientAddress returns the host:port to serve clients on. As in
// ZooKeeper, this server's own server.N client address, when it has one,
// wins over clientPort and clientPortAddress. It returns "" when no client
// port is configured.
func (c *Config) ClientAddress() string {
	if s, ok := c.Self(); ok && s.ClientPort != 0 {
		return joinHostPort(s.ClientHost, s.ClientPort)
	}
	if c.ClientPort == 0 {
		return ""
	}
	host := c.ClientPortAddress
	if host == "" {
		host = "0.0.0.0"
	}
	return joinHostPort(host, c.ClientPort)
}

// FourLetterAllowed reports whether the four-letter word cmd is enabled.
// As in ZooKeeper, "srvr" is always enabled, and "isro" is enabled
// whenever read-only mode is.
func (c *Config) FourLetterAllowed(cmd string) bool {
	if cmd == "srvr" || (cmd == "isro" && c.ReadOnlyModeEnabled) {
		return true
	}
	return slices.Contains(c.FourLetterWhitelist, "*") || slices.Contains(c.FourLetterWhitelist, cmd)
}

// joinHostPort is net.JoinHostPort, which this package may not import.
func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// Validate checks the rules that span fields. It reports every problem it
// finds, joined. Call it after setting MyID (and DataDir, for Default).
func (c *Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("zoocfg: "+format, args...))
		}
	}
	check(c.TickTime > 0, "tickTime must be positive, got %v", c.TickTime)
	check(c.DataDir != "", "dataDir is not set")
	check(c.MinSessionTimeout > 0, "minSessionTimeout must be positive, got %v", c.MinSessionTimeout)
	check(c.MinSessionTimeout <= c.MaxSessionTimeout,
		"minSessionTimeout (%v) must not be larger than maxSessionTimeout (%v)", c.MinSessionTimeout, c.MaxSessionTimeout)
	check(c.ClientPort >= 0 && c.ClientPort <= 65535, "clientPort %d out of range 0-65535", c.ClientPort)
	check(c.ClientPortAddress == "" || c.ClientPort != 0, "clientPortAddress is set but clientPort is not set")
	check(c.AdminServerPort >= 0 && c.AdminServerPort <= 65535,
		"admin.serverPort %d out of range 0-65535", c.AdminServerPort)
	check(c.MaxClientCnxns >= 0, "maxClientCnxns must not be negative, got %d", c.MaxClientCnxns)
	check(c.MaxCnxns >= 0, "maxCnxns must not be negative, got %d", c.MaxCnxns)
	check(c.RequestThrottleMaxRequests >= 0, "request_throttle_max_requests must not be negative, got %d", c.RequestThrottleMaxRequests)
	check(c.RequestThrottleStallTime >= 0, "request_throttle_stall_time must not be negative, got %v", c.RequestThrottleStallTime)
	check(c.JuteMaxBufferBytes > 0, "jute.maxbuffer must be positive, got %d", c.JuteMaxBufferBytes)
	check(c.ContainerCheckInterval > 0, "znode.container.checkIntervalMs must be positive, got %d",
		c.ContainerCheckInterval.Milliseconds())
	check(c.SnapCount >= MinSnapCount, "snapCount must be at least %d, got %d", MinSnapCount, c.SnapCount)
	check(c.AutopurgeSnapRetainCount >= MinAutopurgeSnapRetainCount,
		"autopurge.snapRetainCount must be at least %d, got %d", MinAutopurgeSnapRetainCount, c.AutopurgeSnapRetainCount)
	check(c.AutopurgePurgeInterval >= 0, "autopurge.purgeInterval must not be negative, got %v", c.AutopurgePurgeInterval)
	check(c.PreAllocSizeKB > 0, "preAllocSize must be positive, got %d", c.PreAllocSizeKB)
	check(c.MyID >= 0, "myid must not be negative, got %d", c.MyID)
	check(!c.ExtendedTypesEnabled || c.MyID <= MaxExtendedServerID,
		"extendedTypesEnabled is true but myid %d is larger than %d", c.MyID, MaxExtendedServerID)
	if c.SuperDigest != "" {
		user, digest, ok := strings.Cut(c.SuperDigest, ":")
		check(ok && user != "" && digest != "", "superDigest must be user:digest")
	}
	errs = append(errs, c.validateEnsemble()...)
	errs = append(errs, c.TLS.validate()...)
	errs = append(errs, c.QuorumTLS.validate()...)
	errs = append(errs, c.validateAdminTLS()...)
	errs = append(errs, c.SASL.validate()...)
	errs = append(errs, c.QuorumSASL.validate()...)
	check(c.TLS.SecurePort >= 0 && c.TLS.SecurePort <= 65535, "secureClientPort %d out of range 0-65535", c.TLS.SecurePort)
	check(c.ClientAddress() != "" || c.SecureClientAddress() != "",
		"no client port: set clientPort, secureClientPort or a client address in this server's server.N")
	check(!c.TLS.PortUnification || c.ClientAddress() != "", "client.portUnification is true but there is no client port to unify")
	return errors.Join(errs...)
}

// validateEnsemble checks the server.N list and the settings a quorum needs.
func (c *Config) validateEnsemble() []error {
	var errs []error
	seen := map[int64]bool{}
	for _, s := range c.Servers {
		if err := s.check(); err != nil {
			errs = append(errs, fmt.Errorf("zoocfg: server.%d: %w", s.ID, err))
		}
		if seen[s.ID] {
			errs = append(errs, fmt.Errorf("zoocfg: server id %d is listed more than once", s.ID))
		}
		seen[s.ID] = true
	}
	participants, observers := len(c.Participants()), len(c.Observers())
	switch {
	case participants == 0 && !c.StandaloneEnabled:
		errs = append(errs, errors.New("zoocfg: standaloneEnabled=false needs at least one participant server"))
	case participants == 0 && observers > 0:
		errs = append(errs, errors.New("zoocfg: observers without participants"))
	case participants == 1 && c.StandaloneEnabled && observers > 0:
		errs = append(errs, errors.New("zoocfg: observers without a quorum (one participant and standaloneEnabled)"))
	}
	if c.Distributed() {
		errs = append(errs, c.validateQuorum()...)
	}
	if self, ok := c.Self(); ok && self.ClientPort != 0 && c.ClientPort != 0 {
		wildcard := c.ClientPortAddress == "" || c.ClientPortAddress == "0.0.0.0" || c.ClientPortAddress == "::"
		if self.ClientPort != c.ClientPort || (!wildcard && self.ClientHost != c.ClientPortAddress) {
			errs = append(errs, fmt.Errorf("zoocfg: clientPort/clientPortAddress (%s) differ from server.%d's client address (%s)",
				joinHostPort(c.ClientPortAddress, c.ClientPort), self.ID, joinHostPort(self.ClientHost, self.ClientPort)))
		}
	}
	return errs
}

// validateQuorum checks the settings only a quorum needs.
func (c *Config) validateQuorum() []error {
	var errs []error
	if c.InitLimitTicks <= 0 {
		errs = append(errs, errors.New("zoocfg: initLimit is not set"))
	}
	if c.SyncLimitTicks <= 0 {
		errs = append(errs, errors.New("zoocfg: syncLimit is not set"))
	}
	if _, ok := c.Self(); c.MyID == 0 {
		errs = append(errs, errors.New("zoocfg: myid is not set"))
	} else if !ok && c.DynamicConfigFile != "" {
		// ZooKeeper starts such a server without its own addresses; keeper
		// cannot listen without them, and says what an operator does.
		errs = append(errs, fmt.Errorf("zoocfg: myid %d is not among the server.N entries of %s: a reconfiguration removed this server; "+
			"to bring it back, start it with the current servers and itself as a participant (as a server being added) and reconfig -add it", c.MyID, c.DynamicConfigFile))
	} else if !ok {
		errs = append(errs, fmt.Errorf("zoocfg: myid %d is not among the server.N entries", c.MyID))
	}
	return errs
}
