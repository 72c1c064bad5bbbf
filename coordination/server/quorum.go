package server

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"keeper/coordination/admin"
	"keeper/coordination/clienttls"
	"keeper/coordination/peer"
	"keeper/coordination/quorumnet"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zoocfg"
	"keeper/coordination/zxid"
)

// QuorumConfig makes the server a member of an ensemble (zoo.cfg's
// server.N lines and the myid file). A nil QuorumConfig runs standalone.
type QuorumConfig struct {
	// MyID is this server's id.
	MyID zab.PeerID
	// Voters and Observers are the ensemble's members.
	Voters, Observers []zab.PeerID
	// Peers are every member's quorum and election addresses.
	Peers map[zab.PeerID]quorumnet.PeerAddrs
	// ListenQuorum and ListenElection are where this server listens for
	// the others (its own server.N addresses, or ":0" in tests).
	ListenQuorum, ListenElection string
	// FixedListen says ListenQuorum and ListenElection were given apart
	// from the configuration (a test harness that stands its proxies at
	// the configured addresses): a reconfiguration does not move them.
	FixedListen bool
	// ListenAllIPs listens at the ports of this server's line on every
	// address (quorumListenOnAllIPs), here and when a reconfiguration
	// moves them.
	ListenAllIPs bool
	// InitLimitTicks and SyncLimitTicks are zoo.cfg's initLimit and
	// syncLimit, in ticks of Core.TickMs.
	InitLimitTicks, SyncLimitTicks int
	// MaxRecentEntries bounds the txns kept in memory to bring learners
	// up to date with a DIFF; 0 means 10,000.
	MaxRecentEntries int
	// ReadOnly lets the server serve reads in read-only mode once it has
	// had no leader for a while (readonlymode.enabled).
	ReadOnly bool
	// TLS secures the quorum and election ports; nil: plaintext only.
	TLS *QuorumTLS
	// Reconfig turns on dynamic reconfiguration (reconfigEnabled); nil
	// keeps the membership fixed.
	Reconfig *QuorumReconfig
	// SASL authenticates members to each other (QuorumSASLFromZoo); nil:
	// no authentication.
	SASL *quorumnet.SASL
}

// QuorumReconfig is dynamic reconfiguration (docs/configuration.md,
// Dynamic configuration files): the reconfig operation, the
// configurations persisted as ZooKeeper's files beside the static one,
// and servers that no configuration names yet let in to join.
type QuorumReconfig struct {
	// StaticFile is the path of the static configuration file (zoo.cfg);
	// the files ZooKeeper writes as the configuration changes go beside
	// it. Required.
	StaticFile string
	// Written is the version of the active configuration already in the
	// dynamic file the static file names (dynamicConfigFile).
	Written int64
	// Backup copies the static file to <static>.bak at start: its
	// servers are still in it (no dynamicConfigFile), as ZooKeeper does
	// before it first rewrites the file.
	Backup bool
	// Next is the configuration last seen proposed
	// (zoo.cfg.dynamic.next), nil when there is none; one not newer than
	// the active configuration is ignored, as ZooKeeper ignores it.
	Next *zoocfg.Ensemble
}

// QuorumTLS is TLS between members (sslQuorum, portUnification,
// ssl.quorum.*; docs/tls.md).
type QuorumTLS struct {
	// Stores are the key and trust stores and the handshake settings;
	// Stores.Reload is sslQuorumReloadCertFiles.
	Stores clienttls.Config
	// Dial: this member opens its connections in TLS (sslQuorum).
	Dial bool
	// AcceptPlaintext: plaintext peers are let in beside TLS ones
	// (portUnification).
	AcceptPlaintext bool
	// HostnameVerification and ReverseDNS are
	// ssl.quorum.hostnameVerification and allowReverseDnsLookup.
	HostnameVerification, ReverseDNS bool
	// DetectionTimeout is ssl.quorum.handshakeDetectionTimeoutMillis (0:
	// the transport's dial timeout).
	DetectionTimeout time.Duration
}

// transport returns the quorumnet side of t, loading its stores; nil for
// a nil t. A store that cannot be loaded is an error naming its key.
func (t *QuorumTLS) transport(logger *slog.Logger) (*quorumnet.TLS, error) {
	if t == nil {
		return nil, nil
	}
	stores := t.Stores
	if stores.Logger == nil {
		stores.Logger = logger
	}
	certs, err := clienttls.New(stores)
	if err != nil {
		return nil, fmt.Errorf("server: tls between servers: %w", err)
	}
	return &quorumnet.TLS{Certificates: certs, Dial: t.Dial, AcceptPlaintext: t.AcceptPlaintext,
		HostnameVerification: t.HostnameVerification, ReverseDNS: t.ReverseDNS, DetectionTimeout: t.DetectionTimeout}, nil
}

// readOnlyDelay is how long a member without a leader waits before it
// serves read-only: Apache ZooKeeper waits max(2 s, tickTime), so that an
// ordinary election does not flip every client to a read-only server.
const readOnlyDelayMs = 2000

// quorumState is the part of a Server that runs Zab.
type quorumState struct {
	peer *peer.Peer
	tr   *quorumnet.Transport
	log  *MemberLog
	// role is what srvr and mntr report: leader, follower, observer,
	// read-only, or "" while not serving. Written by the loop, read by the
	// admin side.
	role atomic.Value
	// leaderlessSinceMs is when the server last lost its leader (MonoMs),
	// or -1 while it has one.
	leaderlessSinceMs int64
	// leadingSinceMs is when the server last began to serve as leader
	// (MonoMs), for mntr's leader_uptime. (loop)
	leadingSinceMs int64

	// The persister (persister.go) writes one Zab batch at a time to
	// disk while the loop goes on serving (reads, pings, new writes that
	// go into the next batch); the loop finishes the batch when it comes
	// back.
	persisting bool // a batch is on its way to disk, or held (loop)
	// held is a batch that replaces the state (TRUNC, SNAP) waiting for a
	// snapshot job to end: a snapshot of the state it replaces must not be
	// written after it (it would outlive the truncation), nor walk the new
	// tree under the old zxid. rebuilding is set while such a batch is held
	// or on its way to disk: no snapshot starts then. (loop)
	held       *zab.Ready
	rebuilding bool
	// handOff takes a batch to disk: to the persister goroutine, or, in
	// a Member the simulator drives, to its scheduler. (loop)
	handOff func(zab.Ready)
	// clientAddrVersion is the configuration whose client address the
	// client port follows (followClientAddress). (loop)
	clientAddrVersion zxid.ID
	// quorumAddrVersion is the configuration whose quorum and election
	// addresses for this member the transport listens on (or tried to).
	quorumAddrVersion zxid.ID
}

// startQuorum recovers the data, opens the log and the links to the other
// servers, and builds the peer. Called by Start before the loop runs.
func (s *Server) startQuorum() error {
	q := s.cfg.Quorum
	if !s.cfg.Storage.enabled() {
		return errors.New("server: an ensemble member needs a data directory")
	}
	maxRecord := s.cfg.Core.MaxBuffer + 1024
	maxRecent := q.MaxRecentEntries
	if maxRecent <= 0 {
		maxRecent = 10000
	}
	// A member that loses its state rejoins through a leader's snapshot,
	// unless it is the only voter: then no one has the state it lost.
	fromLeader := !(len(q.Voters) == 1 && q.Voters[0] == q.MyID)
	dl, rec, err := OpenMemberLog(MemberLogConfig{Storage: &s.cfg.Storage, Core: s.cfg.Core, MaxRecordBytes: maxRecord,
		MaxRecentEntries: maxRecent, FromLeader: fromLeader, Now: s.now, Logger: s.log,
		purgeMu: &s.storageMu, metrics: s.stm}, s.core)
	if err != nil {
		return err
	}
	lg := dl.log
	s.core.SetMode(zkcore.NotServing, 0, s.now())
	zcfg := zab.Config{
		ID: q.MyID, Voters: q.Voters, Observers: q.Observers,
		HardState: rec.HardState, LastZxid: s.core.LastZxid(), Recent: rec.Recent, MaxRecentEntries: maxRecent,
		TruncateFloor: rec.TruncateFloor,
		StateLost:     rec.Lost,
		Rand:          rand.New(rand.NewPCG(rand.Uint64(), uint64(q.MyID))),
	}
	// The loop ticks the node every zab tick (loopTick), a fraction of
	// tickTime: syncLimit and initLimit keep their length, and elections
	// and pings keep Apache ZooKeeper's (docs/zookeeper-protocol.md §10).
	zab.TimingFor(s.cfg.Core.TickMs, q.InitLimitTicks, q.SyncLimitTicks).Apply(&zcfg)
	var files *ConfigFiles
	if rc := q.Reconfig; rc != nil {
		if files, err = s.reconfigFor(rc, &zcfg, maxRecord); err != nil {
			lg.Close()
			return err
		}
	}
	node, err := zab.New(zcfg)
	if err != nil {
		lg.Close()
		return err
	}
	sec, err := q.TLS.transport(s.log)
	if err != nil {
		lg.Close()
		return err
	}
	tr, err := quorumnet.New(quorumnet.Config{ID: q.MyID, Peers: q.Peers,
		ListenQuorum: q.ListenQuorum, ListenElection: q.ListenElection, TLS: sec, SASL: q.SASL, Logger: s.log,
		AcceptUnknown: q.Reconfig != nil, Metrics: s.zm.links, Listen: s.cfg.Listen, Dial: s.cfg.Dial})
	if err != nil {
		lg.Close()
		return err
	}
	if err := tr.Start(); err != nil {
		lg.Close()
		return fmt.Errorf("server: quorum transport: %w", err)
	}
	s.quorum = &quorumState{tr: tr, log: dl, leaderlessSinceMs: 0}
	s.disk = s.newPersister(lg)
	s.quorum.handOff = s.disk.submitZab
	s.quorum.role.Store("")
	s.quorum.clientAddrVersion = zcfg.ConfigVersion
	s.quorum.quorumAddrVersion = zcfg.ConfigVersion
	s.quorum.peer = peer.New(node, s.core, dl, tr, clientSink{s}, s.log)
	s.quorum.peer.SetMetrics(s.zm.peer)
	s.zm.phases.start(s.now().MonoMs)
	if files != nil {
		// /zookeeper/config shows the active configuration (the files'),
		// whatever reconfig txns the replay applied: one logged but not
		// committed is only the last seen, as ZooKeeper's
		// initConfigInZKDatabase makes it after loading.
		s.core.SetEnsembleConfig(zcfg.ConfigText, int64(zcfg.ConfigVersion), s.now())
		s.core.SetEnsemble(s.quorum.peer.Ensemble())
		s.quorum.peer.SetConfigStore(configStore{files: files, tr: tr})
		if zcfg.NextConfig != nil {
			learnAddresses(tr, zcfg.NextConfig.Text)
		}
	}
	go s.disk.run()
	return nil
}

// stopQuorum closes the links and the log.
func (s *Server) stopQuorum() error {
	if s.quorum == nil {
		return nil
	}
	s.disk.close()
	err := s.quorum.tr.Close()
	if lerr := s.quorum.log.log.Close(); err == nil && !errors.Is(lerr, s.core.WritesFailed()) {
		err = lerr
	}
	return err
}

// clientSink hands the core's output to client connections (peer.Clients).
type clientSink struct{ s *Server }

func (c clientSink) Send(snd zkcore.Send) {
	if conn, ok := c.s.conns[snd.Conn]; ok {
		conn.Send(snd.Data, snd.Completed, snd.Close)
	}
}

// quorumStep handles one message from another server, on the loop.
func (s *Server) quorumStep(m zab.Message) {
	if err := s.quorum.peer.Step(m, s.now()); err != nil {
		s.log.Debug("dropped quorum message", "from", m.From, "type", m.Type, "err", err)
	}
}

// driveQuorum carries out the peer's work on the loop: client bytes and new
// writes at once, a Zab batch to the persister when none is on its way;
// then it updates the role and starts a snapshot when one is due. A batch
// with nothing to persist or send (peer.ApplyOnly: a follower's after a
// COMMIT, a leader's after a quorum of ACKs) is finished here instead:
// the round trip through the persister goroutine would only delay the
// replies it releases.
func (s *Server) driveQuorum() {
	q := s.quorum
	before := s.core.LastZxid()
	for {
		q.peer.PumpCore(s.now())
		q.peer.SendEarly()
		if q.persisting || q.peer.Err() != nil || !q.peer.Node().HasReady() {
			break
		}
		rd := q.peer.Node().Ready()
		if peer.ApplyOnly(rd) {
			if err := q.peer.Finish(rd, peer.Persisted{}, s.now()); err != nil {
				s.leaveService(err)
			}
			continue
		}
		q.persisting = true
		q.rebuilding = replacesState(rd)
		if q.rebuilding && s.snapshot != nil {
			q.held = &rd
			s.abortSnapshot() // a walk in progress stops; a finished one is written first
		} else {
			q.handOff(rd)
		}
		break
	}
	s.quorumBookkeeping(before)
}

// leaveService takes the member out of the service for good after a
// batch failed: the peer drops Zab traffic and the core closes every
// client connection (peer.Fail, zkcore.FailWrites).
func (s *Server) leaveService(err error) {
	s.core.FailWrites(err) // first, so that Stop recognises the log's error
	s.quorum.peer.Fail(err)
}

// replacesState reports whether a batch replaces the member's state (a
// TRUNC or a leader's snapshot) rather than adding to it.
func replacesState(rd zab.Ready) bool { return rd.Truncate != nil || rd.InstallSnapshot }

// releaseHeld sends the batch held for a snapshot job to disk, once the
// job ended (snapshotFinished).
func (s *Server) releaseHeld() {
	if q := s.quorum; q != nil && q.held != nil && s.snapshot == nil {
		rd := *q.held
		q.held = nil
		q.handOff(rd)
	}
}

// finishZabBatch completes a member's batch back from disk, on the loop.
func (s *Server) finishZabBatch(r persisted) {
	q := s.quorum
	q.persisting, q.rebuilding = false, false
	before := s.core.LastZxid()
	err := r.err
	if err == nil {
		err = q.peer.Finish(r.rd, r.ps, s.now())
	}
	if err == nil && r.rd.Config != nil {
		s.followClientAddress()
		s.followQuorumAddresses()
	}
	if err != nil {
		s.leaveService(err)
	}
	s.quorumBookkeeping(before)
	s.driveQuorum()
}

// quorumBookkeeping updates the reported role, read-only mode and the
// snapshot count after work that may have applied txns since before.
func (s *Server) quorumBookkeeping(before zxid.ID) {
	n := s.quorum.peer.Node()
	now := s.now()
	role := ""
	switch {
	case s.core.WritesFailed() != nil:
		// Out of the service for good: the node is frozen as it was.
	case n.Serving():
		role = roleName(n.Role())
		s.quorum.leaderlessSinceMs = -1
	case s.quorum.leaderlessSinceMs < 0:
		s.quorum.leaderlessSinceMs = now.MonoMs
	case s.cfg.Quorum.ReadOnly && s.core.Mode() == zkcore.NotServing && s.core.WritesFailed() == nil &&
		now.MonoMs-s.quorum.leaderlessSinceMs >= max(readOnlyDelayMs, s.cfg.Core.TickMs):
		s.core.SetMode(zkcore.ReadOnly, 0, now)
		s.log.Info("serving read-only: no leader")
	}
	if s.core.Mode() == zkcore.ReadOnly {
		role = "read-only"
	}
	if was, _ := s.quorum.role.Load().(string); role != was {
		if role == "leader" {
			s.quorum.leadingSinceMs = now.MonoMs
		}
		s.quorum.role.Store(role) // only on a change: a Store allocates
	}
	s.zm.update(n)
	s.zm.phases.observe(n.Role(), n.Phase(), now.MonoMs)
	if after := s.core.LastZxid(); after > before {
		s.sinceSnapshot += int(after.Counter() - before.Counter())
		if after.Epoch() != before.Epoch() {
			s.sinceSnapshot++
		}
	}
	if s.snapshot == nil && !s.quorum.rebuilding && s.trigger.Due(s.sinceSnapshot, 0) {
		s.startSnapshot()
	}
}

// roleName is what srvr reports as Mode for a serving member's role.
func roleName(r zab.Role) string {
	switch r {
	case zab.Leading:
		return "leader"
	case zab.Following:
		return "follower"
	case zab.Observing:
		return "observer"
	}
	return ""
}

// quorumRole returns what srvr reports as Mode.
// Role is the server's part in its ensemble: "leader", "follower",
// "observer", "read-only" (readonlymode.enabled, without a leader), ""
// while it has none (looking for a leader, or syncing with one), or
// "standalone".
func (s *Server) Role() string { return s.quorumRole() }

func (s *Server) quorumRole() string {
	if s.quorum == nil {
		return "standalone"
	}
	return s.quorum.role.Load().(string)
}

// quorumFacts reports the member and a leader's learners to mntr; it runs
// on the loop.
func (s *Server) quorumFacts() (admin.QuorumFacts, bool) {
	if s.quorum == nil {
		return admin.QuorumFacts{}, false
	}
	n := s.quorum.peer.Node()
	q := admin.QuorumFacts{QuorumSize: len(n.Membership().Voters), PeerState: peerState(n.Role(), n.Phase())}
	if n.Role() == zab.Observing {
		q.Observing, q.ObserverMasterID = true, -1
		if id := n.Leader(); id != 0 {
			q.ObserverMasterID = int64(id)
		}
	}
	if st, ok := n.LeaderStats(); ok {
		q.Leading, q.Followers, q.SyncedFollowers = true, st.Followers, st.SyncedFollowers
		q.Observers, q.PendingSyncs = st.Observers, st.PendingSyncs
		zs := n.Stats()
		q.LastProposalBytes, q.MinProposalBytes, q.MaxProposalBytes = zs.LastProposalBytes, zs.MinProposalBytes,
			zs.MaxProposalBytes
		if s.quorum.role.Load() == "leader" {
			q.LeaderUptimeMs = s.now().MonoMs - s.quorum.leadingSinceMs
		}
	}
	return q, true
}

// peerState is ZooKeeper's detailed peer state (mntr's peer_state): the
// role, then the Zab phase.
func peerState(role zab.Role, phase zab.Phase) string {
	name := map[zab.Role]string{zab.Looking: "looking", zab.Leading: "leading", zab.Following: "following",
		zab.Observing: "observing"}[role]
	if role == zab.Looking || name == "" {
		return name
	}
	return name + " - " + phase.String()
}
