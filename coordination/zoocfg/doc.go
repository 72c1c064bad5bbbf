// Package zoocfg reads Apache ZooKeeper's zoo.cfg and myid files into a
// Config, with ZooKeeper 3.8's defaults, so keeper can run from an
// existing ZooKeeper deployment's configuration.
//
// The package is pure: Parse takes an io.Reader and ParseMyID a byte slice;
// the caller opens the files and logs the warnings Parse returns.
//
// # Syntax
//
// zoo.cfg is a java.util.Properties file. Lines are key=value, key:value or
// "key value"; # and ! start comment lines; a line ending in an odd number
// of backslashes continues on the next; \t \n \r \f \uXXXX and escaped
// separators are decoded. Keys and values are then trimmed, as
// QuorumPeerConfig does. A key given twice keeps its last value (with a
// warning). One deviation: bytes are read as they are (so UTF-8 works),
// where Java reads ISO 8859-1.
//
// # Keys
//
// QuorumPeerConfig.parseProperties reads a fixed set of keys and turns every
// other key K into the Java system property "zookeeper.K". Some settings
// therefore exist only as system properties, and ZooKeeper honours them in
// zoo.cfg only under the name without the "zookeeper." prefix. keeper has no
// -D flags, so it also accepts the full system property name in zoo.cfg:
//
//	field                     zoo.cfg key (ZooKeeper honours)        also accepted
//	TickTime                  tickTime (ms)
//	InitLimitTicks            initLimit
//	SyncLimitTicks            syncLimit
//	DataDir, DataLogDir       dataDir (required), dataLogDir
//	ClientPort                clientPort
//	ClientPortAddress         clientPortAddress
//	MaxClientCnxns            maxClientCnxns
//	MaxCnxns                  maxCnxns
//	GlobalOutstandingLimit    globalOutstandingLimit                 zookeeper.globalOutstandingLimit
//	RequestThrottle*          request_throttle_max_requests,         zookeeper.request_throttle_max_requests, ...
//	                          request_throttle_stall_time (ms),
//	                          request_throttle_drop_stale
//	Min/MaxSessionTimeout     minSessionTimeout, maxSessionTimeout (ms)
//	StandaloneEnabled         standaloneEnabled
//	ReconfigEnabled           reconfigEnabled
//	AutopurgeSnapRetainCount  autopurge.snapRetainCount
//	AutopurgePurgeInterval    autopurge.purgeInterval (hours)
//	FourLetterWhitelist       4lw.commands.whitelist                 zookeeper.4lw.commands.whitelist
//	AdminEnableServer         admin.enableServer                     zookeeper.admin.enableServer
//	AdminServerPort           admin.serverPort                       zookeeper.admin.serverPort
//	AdminServerAddress        admin.serverAddress                    zookeeper.admin.serverAddress
//	AdminForceHTTPS           admin.forceHttps                       zookeeper.admin.forceHttps
//	AdminPortUnification      admin.portUnification                  zookeeper.admin.portUnification
//	AdminNeedClientAuth       admin.needClientAuth                   zookeeper.admin.needClientAuth
//	SnapCount                 snapCount                              zookeeper.snapCount
//	PreAllocSizeKB            preAllocSize (KiB)                     zookeeper.preAllocSize
//	ForceSync                 forceSync (yes|no)                     zookeeper.forceSync
//	ExtendedTypesEnabled      extendedTypesEnabled                   zookeeper.extendedTypesEnabled
//	EnforceQuota              enforceQuota                           zookeeper.enforceQuota
//	SnapshotTrustEmpty        snapshot.trust.empty                   zookeeper.snapshot.trust.empty
//	SuperDigest               DigestAuthenticationProvider.superDigest
//	                                                                 zookeeper.DigestAuthenticationProvider.superDigest,
//	                                                                 superDigest (keeper only)
//	JuteMaxBufferBytes        (none: only -Djute.maxbuffer)          jute.maxbuffer
//	ContainerCheckInterval    (none: only -Dznode.container.checkIntervalMs)
//	                                                                 znode.container.checkIntervalMs
//	ReadOnlyModeEnabled       (none: only -Dreadonlymode.enabled)    readonlymode.enabled
//	Servers                   server.N (or the file below)
//	ConfigVersion             version (hex)
//	DynamicConfigFile         dynamicConfigFile
//
// ZooKeeper's own spelling of a key is case-sensitive, and so is keeper's.
//
// Keys that ask for a protection of data or access keeper does not give
// yet are refused with an *UnsupportedError naming the key and its line:
// the TLS settings tls.go and quorumtls.go do not implement, Kerberos
// (kerberos.canonicalizeHostNames,
// ...), authProvider.N other than digest, ip, x509 and sasl,
// skipACL=yes, audit.enable=true, datadir.autocreate=false and the like
// (the list is protections in protect.go, under both spellings). The value
// that asks for nothing (sslQuorum=false, skipACL=no, an empty ssl.* value)
// is accepted. CheckServerEnv and CheckClientEnv do the same for the -D
// flags ZooKeeper's scripts take from the environment. docs/configuration.md
// lists every key.
//
// Other ZooKeeper keys that keeper does not implement (localSessionsEnabled,
// serverCnxnFactory, metricsProvider.*, ...) and unknown keys are accepted
// with a Warning: they tune performance or add features, and keeper is as
// safe without them. Keys whose silent omission would change the ensemble
// are errors: group.*/weight.* (hierarchical quorums),
// multiple addresses in server.N, and electionAlg other than 3.
//
// Load follows dynamicConfigFile to the file that holds the servers and
// reads zoo.cfg.dynamic.next, by ZooKeeper 3.8's rules (dynamic.go,
// docs/configuration.md).
//
// # Stricter than ZooKeeper
//
// Booleans must be true or false (any case) and forceSync yes or no:
// ZooKeeper reads some system-property booleans loosely (forceSync=false
// means yes there). Server ids and myid must be positive. Values ZooKeeper
// ignores when malformed (preAllocSize, admin.serverPort) are errors here.
package zoocfg
