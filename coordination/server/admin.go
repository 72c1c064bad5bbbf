package server

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"

	"keeper/coordination/admin"
	"keeper/coordination/clienttls"
	"keeper/coordination/datatree"
	"keeper/coordination/zab"
)

// startAdmin builds the four-letter-word and admin HTTP side and, if
// Config.AdminAddr is set, starts the admin HTTP server. Start calls it
// after s.start is set (the origin of the core's monotonic clock) and
// before any connection is admitted.
func (s *Server) startAdmin() error {
	build := admin.ReadBuild()
	a, err := admin.New(admin.Config{
		Version:             build.FullVersion(),
		Build:               build,
		Metrics:             s.metrics,
		FourLetterWhitelist: s.cfg.FourLetterWhitelist,
		SnapDir:             versionDir(s.cfg.DataDir),
		LogDir:              versionDir(s.cfg.DataLogDir),
		ConfLines:           s.confLines(),
		QuorumConf:          s.quorumConf,
		Start:               s.start,
		State:               s.quorumRole,
		Quorum:              s.quorumFacts,
		Ensemble:            s.ensembleFacts,
		ResetObservers:      s.resetObservers,
		InitialConfig:       s.cfg.InitialConfig,
		LastSnapshot:        s.stm.last,
		Connections:         s.connectionGauges,
		SystemProperties:    s.cfg.SystemProperties,
		Logger:              s.log,
	}, s)
	if err != nil {
		return err
	}
	s.admin = a
	if s.cfg.AdminAddr == "" {
		return nil
	}
	https, err := s.adminHTTPS()
	if err != nil {
		return err
	}
	h, err := a.Listen(s.cfg.AdminAddr, https)
	if err != nil {
		return fmt.Errorf("server: start admin server: %w", err)
	}
	s.adminHTTP = h
	return nil
}

// adminHTTPS loads Config.AdminTLS's stores. A store that cannot be
// loaded fails the start with an error naming its key and file.
func (s *Server) adminHTTPS() (admin.HTTPS, error) {
	if s.cfg.AdminTLS == nil {
		return admin.HTTPS{}, nil
	}
	tc := *s.cfg.AdminTLS
	if tc.Logger == nil {
		tc.Logger = s.log
	}
	certs, err := clienttls.New(tc)
	if err != nil {
		return admin.HTTPS{}, fmt.Errorf("server: tls for the admin server: %w", err)
	}
	return admin.HTTPS{TLS: certs.TLSConfig(), PlaintextToo: s.cfg.AdminPlaintextToo}, nil
}

// stopAdmin stops the admin HTTP server, if it runs.
func (s *Server) stopAdmin() {
	if s.adminHTTP == nil {
		return
	}
	if err := s.adminHTTP.Close(); err != nil {
		s.log.Warn("admin server did not stop cleanly", "err", err)
	}
	s.adminHTTP = nil
}

// AdminAddr returns the admin HTTP server's address, or nil if it is
// disabled or the server has not started.
func (s *Server) AdminAddr() net.Addr {
	if s.adminHTTP == nil {
		return nil
	}
	return s.adminHTTP.Addr()
}

// versionDir is where ZooKeeper keeps its files below a data directory;
// dirs and conf report the size of this directory.
func versionDir(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "version-2")
}

// confLines returns Config.ConfLines, or, when they are not set, the conf
// lines derived from this Config: serverId is an ensemble member's id, 0
// on a standalone server, as in ZooKeeper.
func (s *Server) confLines() []string {
	if s.cfg.ConfLines != nil {
		return s.cfg.ConfLines
	}
	var serverID zab.PeerID
	if s.cfg.Quorum != nil {
		serverID = s.cfg.Quorum.MyID
	}
	port := func(ln net.Listener) int {
		if ln == nil {
			return -1
		}
		if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
			return tcp.Port
		}
		return 0
	}
	return []string{
		fmt.Sprintf("clientPort=%d", port(s.clientListener())),
		fmt.Sprintf("secureClientPort=%d", port(s.secureLn)),
		"dataDir=" + versionDir(s.cfg.DataDir),
		"dataDirSize=0",
		"dataLogDir=" + versionDir(s.cfg.DataLogDir),
		"dataLogSize=0",
		fmt.Sprintf("tickTime=%d", s.cfg.Core.TickMs),
		fmt.Sprintf("maxClientCnxns=%d", s.cfg.MaxClientCnxns),
		fmt.Sprintf("minSessionTimeout=%d", s.cfg.Core.MinSessionTimeoutMs),
		fmt.Sprintf("maxSessionTimeout=%d", s.cfg.Core.MaxSessionTimeoutMs),
		"clientPortListenBacklog=-1",
		fmt.Sprintf("serverId=%d", serverID),
	}
}

// quorumConf is what an ensemble member's conf prints after the server's
// lines, as ZooKeeper 3.8's QuorumZooKeeperServer.dumpConf: the limits,
// electionAlg (3, the only one), its own election and quorum ports in the
// active configuration, peerType (0 participant, 1 observer, the
// LearnerType's ordinal), then "membership: " and the active
// configuration's text, which /zookeeper/config holds. It runs on the
// loop; "" on a standalone server.
func (s *Server) quorumConf() string {
	if s.quorum == nil {
		return ""
	}
	q := s.cfg.Quorum
	_, observers, addrs := s.members()
	port := func(addr string) string {
		_, p, _ := net.SplitHostPort(addr)
		return p
	}
	peerType := 0
	if slices.Contains(observers, q.MyID) {
		peerType = 1
	}
	var membership []byte
	if n := s.core.Tree().Node(datatree.ConfigPath); n != nil {
		membership = n.Data()
	}
	self := addrs[q.MyID]
	return fmt.Sprintf("initLimit=%d\nsyncLimit=%d\nelectionAlg=3\nelectionPort=%s\nquorumPort=%s\npeerType=%d\nmembership: \n%s",
		q.InitLimitTicks, q.SyncLimitTicks, port(self.Election), port(self.Quorum), peerType, membership)
}

// connectionGauges reports how the client connections started, for mntr;
// safe from any goroutine.
func (s *Server) connectionGauges() admin.ConnectionGauges {
	st := s.cfg.Conn.Stats
	return admin.ConnectionGauges{OutstandingTLSHandshakes: st.HandshakesInProgress.Load(),
		NonMTLSRemote: st.PlaintextRemote.Load(), NonMTLSLocal: st.PlaintextLoopback.Load()}
}
