package server

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"keeper/coordination/clientconn"
	"keeper/coordination/clienttls"
	"keeper/coordination/quorumnet"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zoocfg"
)

// ConfigFromZoo maps a parsed zoo.cfg onto a server configuration.
func ConfigFromZoo(zc *zoocfg.Config, logger *slog.Logger) Config {
	core := zkcore.DefaultConfig()
	core.ServerID = 1
	if zc.Distributed() && zc.MyID != 0 {
		core.ServerID = zc.MyID
	}
	core.TickMs = zc.TickTime.Milliseconds()
	core.MinSessionTimeoutMs = int32(zc.MinSessionTimeout.Milliseconds())
	core.MaxSessionTimeoutMs = int32(zc.MaxSessionTimeout.Milliseconds())
	core.ExtendedTypes = zc.ExtendedTypesEnabled
	core.EnforceQuota = zc.EnforceQuota
	core.SuperDigest = zc.SuperDigest
	core.X509 = zc.TLS.X509Enabled()
	core.X509SuperUser = zc.TLS.X509SuperUser
	core.MaxBuffer = zc.JuteMaxBufferBytes
	core.ContainerCheckMs = zc.ContainerCheckInterval.Milliseconds()
	core.StartWallMs = time.Now().UnixMilli()
	core.Logger = logger
	conn := clientconn.DefaultConfig()
	conn.MaxBuffer = zc.JuteMaxBufferBytes
	conn.MaxOutstanding = core.MaxOutstanding
	conn.WriteTimeout = zc.MaxSessionTimeout
	conn.Logger = logger
	var whitelist []string
	for _, w := range []string{"ruok", "srvr", "stat", "mntr", "cons", "crst", "srst", "envi",
		"conf", "wchs", "wchc", "wchp", "dump", "isro", "dirs", "gtmk", "stmk", "hash"} {
		if zc.FourLetterAllowed(w) {
			whitelist = append(whitelist, w)
		}
	}
	cfg := Config{
		ClientAddr:       zc.ClientAddress(),
		SecureClientAddr: zc.SecureClientAddress(),
		PortUnification:  zc.TLS.PortUnification,
		ClientTLS:        clientTLSFromZoo(zc, logger),
		Core:             core,
		Conn:             conn,
		MaxClientCnxns:   zc.MaxClientCnxns,
		MaxCnxns:         zc.MaxCnxns,
		// ZooKeeper has no value for "no limit": 0 or less throttles every
		// connection to one request in flight, as 1 does.
		GlobalOutstandingLimit:     max(zc.GlobalOutstandingLimit, 1),
		RequestThrottleMaxRequests: zc.RequestThrottleMaxRequests,
		RequestThrottleStall:       zc.RequestThrottleStallTime,
		FourLetterWhitelist:        whitelist,
		DataDir:                    zc.DataDir,
		DataLogDir:                 zc.TxnLogDir(),
		Storage: StorageConfig{
			DataDir:           zc.DataDir,
			DataLogDir:        zc.TxnLogDir(),
			PreAllocSizeBytes: zc.PreAllocSizeKB * 1024,
			NoSync:            !zc.ForceSync,
			SnapCount:         zc.SnapCount,
			SnapRetainCount:   zc.AutopurgeSnapRetainCount,
			PurgeInterval:     zc.AutopurgePurgeInterval,
			// A server that cannot account for its data refuses to start
			// unless told to start empty (docs/storage-recovery.md).
			TrustEmptySnapshot: zc.SnapshotTrustEmpty,
		},
		ConfLines: confLines(zc),
		AdminAddr: adminAddr(zc),
		AdminTLS:  adminTLSFromZoo(zc, logger),
		// admin.forceHttps wins over admin.portUnification, as in ZooKeeper.
		AdminPlaintextToo: zc.AdminPortUnification && !zc.AdminForceHTTPS,
		SystemProperties:  systemProperties(zc),
		Logger:            logger,
	}
	if zc.Distributed() {
		cfg.Core.EnsembleConfig = zc.ConfigData()
		cfg.Core.EnsembleConfigVersion = zc.ConfigVersion
		cfg.Core.ReconfigEnabled = zc.ReconfigEnabled
		cfg.Core.StandaloneEnabled = zc.StandaloneEnabled
		cfg.Quorum = quorumFromZoo(zc)
		cfg.ConfLines = nil // the standalone conf lines do not apply
	}
	return cfg
}

// quorumFromZoo maps the server.N lines and myid onto a QuorumConfig.
func quorumFromZoo(zc *zoocfg.Config) *QuorumConfig {
	q := &QuorumConfig{
		MyID:           zab.PeerID(zc.MyID),
		Peers:          map[zab.PeerID]quorumnet.PeerAddrs{},
		InitLimitTicks: zc.InitLimitTicks,
		SyncLimitTicks: zc.SyncLimitTicks,
		ReadOnly:       zc.ReadOnlyModeEnabled,
		ListenAllIPs:   zc.QuorumListenOnAllIPs,
	}
	q.TLS = quorumTLSFromZoo(zc)
	if zc.ReconfigEnabled {
		// The caller names the static file (QuorumReconfig.StaticFile).
		q.Reconfig = &QuorumReconfig{Next: zc.NextEnsemble, Backup: zc.DynamicConfigFile == ""}
		if !q.Reconfig.Backup {
			q.Reconfig.Written = zc.ConfigVersion
		}
	}
	for _, srv := range zc.Servers {
		id := zab.PeerID(srv.ID)
		q.Peers[id] = peerAddrs(srv)
		if srv.Role == zoocfg.Observer {
			q.Observers = append(q.Observers, id)
		} else {
			q.Voters = append(q.Voters, id)
		}
		if id == q.MyID {
			q.ListenQuorum, q.ListenElection = q.listenAddrs(q.Peers[id])
		}
	}
	return q
}

// adminAddr is the admin HTTP server's address from admin.enableServer,
// admin.serverAddress and admin.serverPort; "" when it is disabled.
func adminAddr(zc *zoocfg.Config) string {
	if !zc.AdminEnableServer {
		return ""
	}
	return net.JoinHostPort(zc.AdminServerAddress, strconv.Itoa(zc.AdminServerPort))
}

// adminTLSFromZoo maps admin.forceHttps, admin.portUnification and
// admin.needClientAuth onto the admin server's TLS; nil for plaintext
// HTTP. As ZooKeeper's admin server, it takes the key and trust stores
// from the ssl.quorum.* keys and, without admin.needClientAuth, asks for
// no client certificate; it offers TLS 1.2 and 1.3, as the Jetty inside
// ZooKeeper does, rather than ssl.quorum.protocol. A keeper addition: with
// sslQuorumReloadCertFiles, a changed store file is picked up at the next
// handshake, as on the quorum ports.
func adminTLSFromZoo(zc *zoocfg.Config, logger *slog.Logger) *clienttls.Config {
	if !zc.AdminEnableServer || !zc.AdminHTTPS() {
		return nil
	}
	t := zc.QuorumTLS
	auth := clienttls.None
	if zc.AdminNeedClientAuth {
		auth = clienttls.Need
	}
	store := func(s zoocfg.TLSStore) clienttls.Store {
		return clienttls.Store{Location: s.Location, Password: s.Password, PasswordPath: s.PasswordPath, Type: s.Type}
	}
	return &clienttls.Config{
		Prefix:           "ssl.quorum.",
		KeyStore:         store(t.KeyStore),
		TrustStore:       store(t.TrustStore),
		ClientAuth:       auth,
		EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"},
		Reload:           t.ReloadCertFiles,
		Logger:           logger,
	}
}

// confLines renders the conf four-letter word for a standalone server, in
// Apache ZooKeeper's order (docs/zookeeper-protocol.md §8.2).
func confLines(zc *zoocfg.Config) []string {
	return []string{
		fmt.Sprintf("clientPort=%d", portOrUnset(zc.ClientPort)),
		fmt.Sprintf("secureClientPort=%d", portOrUnset(zc.TLS.SecurePort)),
		"dataDir=" + filepath.Join(zc.DataDir, "version-2"),
		"dataDirSize=0",
		"dataLogDir=" + filepath.Join(zc.TxnLogDir(), "version-2"),
		"dataLogSize=0",
		fmt.Sprintf("tickTime=%d", zc.TickTime.Milliseconds()),
		fmt.Sprintf("maxClientCnxns=%d", zc.MaxClientCnxns),
		fmt.Sprintf("minSessionTimeout=%d", zc.MinSessionTimeout.Milliseconds()),
		fmt.Sprintf("maxSessionTimeout=%d", zc.MaxSessionTimeout.Milliseconds()),
		"clientPortListenBacklog=-1",
		"serverId=0",
	}
}

// portOrUnset is how conf shows a port: -1 when it is not set.
func portOrUnset(port int) int {
	if port == 0 {
		return -1
	}
	return port
}

// quorumTLSFromZoo maps sslQuorum, portUnification,
// sslQuorumReloadCertFiles and the ssl.quorum.* keys onto the quorum
// ports' TLS; nil when they speak plaintext only.
func quorumTLSFromZoo(zc *zoocfg.Config) *QuorumTLS {
	t := zc.QuorumTLS
	if !t.Active() {
		return nil
	}
	// zoocfg checked the value: none, want or need in any case.
	auth, _ := clienttls.ParseClientAuth(t.ClientAuth)
	store := func(s zoocfg.TLSStore) clienttls.Store {
		return clienttls.Store{Location: s.Location, Password: s.Password, PasswordPath: s.PasswordPath, Type: s.Type}
	}
	return &QuorumTLS{
		Stores: clienttls.Config{
			Prefix:           "ssl.quorum.",
			KeyStore:         store(t.KeyStore),
			TrustStore:       store(t.TrustStore),
			ClientAuth:       auth,
			Protocol:         t.Protocol,
			EnabledProtocols: t.EnabledProtocols,
			CipherSuites:     t.CipherSuites,
			Reload:           t.ReloadCertFiles,
		},
		Dial:                 t.Enabled,
		AcceptPlaintext:      t.PortUnification,
		HostnameVerification: t.HostnameVerification,
		ReverseDNS:           t.ReverseDNSLookup,
		DetectionTimeout:     t.HandshakeDetectionTimeout,
	}
}

// clientTLSFromZoo maps the ssl.* keys onto the client port's TLS
// configuration; nil when zoo.cfg asks for no TLS client port.
func clientTLSFromZoo(zc *zoocfg.Config, logger *slog.Logger) *clienttls.Config {
	t := zc.TLS
	if !t.Enabled() {
		return nil
	}
	// zoocfg checked the value: none, want or need in any case.
	auth, _ := clienttls.ParseClientAuth(t.ClientAuth)
	store := func(s zoocfg.TLSStore) clienttls.Store {
		return clienttls.Store{Location: s.Location, Password: s.Password, PasswordPath: s.PasswordPath, Type: s.Type}
	}
	return &clienttls.Config{
		KeyStore:         store(t.KeyStore),
		TrustStore:       store(t.TrustStore),
		ClientAuth:       auth,
		Protocol:         t.Protocol,
		EnabledProtocols: t.EnabledProtocols,
		CipherSuites:     t.CipherSuites,
		Reload:           t.CertReload,
		Logger:           logger,
	}
}

// systemProperties are the zoo.cfg settings keeper honours that ZooKeeper
// keeps as JVM system properties (a zoo.cfg key it does not parse itself
// becomes zookeeper.<key>, and some are read only from the JVM's flags),
// with the values in effect: what system_properties shows.
func systemProperties(zc *zoocfg.Config) map[string]string {
	b := strconv.FormatBool
	props := map[string]string{
		"jute.maxbuffer":                          strconv.Itoa(zc.JuteMaxBufferBytes),
		"readonlymode.enabled":                    b(zc.ReadOnlyModeEnabled),
		"znode.container.checkIntervalMs":         strconv.FormatInt(zc.ContainerCheckInterval.Milliseconds(), 10),
		"zookeeper.4lw.commands.whitelist":        strings.Join(zc.FourLetterWhitelist, ","),
		"zookeeper.admin.enableServer":            b(zc.AdminEnableServer),
		"zookeeper.admin.forceHttps":              b(zc.AdminForceHTTPS),
		"zookeeper.admin.needClientAuth":          b(zc.AdminNeedClientAuth),
		"zookeeper.admin.portUnification":         b(zc.AdminPortUnification),
		"zookeeper.admin.serverAddress":           zc.AdminServerAddress,
		"zookeeper.admin.serverPort":              strconv.Itoa(zc.AdminServerPort),
		"zookeeper.enforceQuota":                  b(zc.EnforceQuota),
		"zookeeper.extendedTypesEnabled":          b(zc.ExtendedTypesEnabled),
		"zookeeper.forceSync":                     map[bool]string{true: "yes", false: "no"}[zc.ForceSync],
		"zookeeper.globalOutstandingLimit":        strconv.Itoa(zc.GlobalOutstandingLimit),
		"zookeeper.preAllocSize":                  strconv.FormatInt(zc.PreAllocSizeKB, 10),
		"zookeeper.request_throttle_max_requests": strconv.Itoa(zc.RequestThrottleMaxRequests),
		"zookeeper.request_throttle_stall_time":   strconv.FormatInt(zc.RequestThrottleStallTime.Milliseconds(), 10),
		"zookeeper.snapCount":                     strconv.Itoa(zc.SnapCount),
		"zookeeper.snapshot.trust.empty":          b(zc.SnapshotTrustEmpty),
	}
	if zc.SuperDigest != "" {
		// Only that it is set: the digest lets its holder bypass every ACL.
		props["zookeeper.DigestAuthenticationProvider.superDigest"] = "(set)"
	}
	return props
}

// listenAddrs returns where to listen for a server line's quorum and
// election addresses: those, or their ports on every address with
// ListenAllIPs.
func (q *QuorumConfig) listenAddrs(a quorumnet.PeerAddrs) (quorum, election string) {
	if !q.ListenAllIPs {
		return a.Quorum, a.Election
	}
	all := func(addr string) string {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return addr
		}
		return net.JoinHostPort("", port)
	}
	return all(a.Quorum), all(a.Election)
}
