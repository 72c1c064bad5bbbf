package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"

	"keeper/coordination/peer"
	"keeper/coordination/quorumnet"
	"keeper/coordination/zab"
	"keeper/coordination/zoocfg"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// ConfigFiles writes the files Apache ZooKeeper writes beside its static
// configuration file as the ensemble's configuration changes
// (docs/configuration.md, Dynamic configuration files): the configuration
// last seen proposed in <static>.dynamic.next, the active one in
// <static>.dynamic.<hex version>, and the static file rewritten to point
// at it. Every file is replaced atomically (temp file, fsync, rename,
// fsync the directory), and in an order that leaves a configuration a
// restart can load whenever a crash comes: the dynamic file before the
// static file that names it, the next file removed last. A next file
// left by a crash after the static file was rewritten has a version no
// newer than the active one and is ignored at start.
type ConfigFiles struct {
	// FS holds the files; Static is the static file's canonical path.
	FS     vfs.FS
	Static string
	// MyID is this server's id: when its line in the active
	// configuration has a client address, the static file's clientPort
	// keys go (ZooKeeper's eraseClientPortAddress).
	MyID int64

	written int64 // version of the active configuration on disk
}

// SaveConfig makes the configurations durable as ZooKeeper's files (it
// is a peer.ConfigStore); it writes the active one only when its version
// is newer than the last written.
func (c *ConfigFiles) SaveConfig(cs zab.ConfigState) error {
	next := c.Static + zoocfg.NextDynamicSuffix
	if cs.Next != nil {
		e, err := parseText(cs.Next.Text)
		if err != nil {
			return err
		}
		if err := c.replace(next, e.DynamicFileData(true)); err != nil {
			return err
		}
	}
	if v := int64(cs.Active.Version); v > c.written && len(cs.Active.Text) > 0 {
		e, err := parseText(cs.Active.Text)
		if err != nil {
			return err
		}
		dyn := zoocfg.DynamicFilename(c.Static, v)
		if err := c.replace(dyn, e.DynamicFileData(false)); err != nil {
			return err
		}
		static, err := vfs.ReadFile(c.FS, c.Static)
		if err != nil {
			return fmt.Errorf("server: read %s: %w", c.Static, err)
		}
		erase := false
		for _, s := range e.Servers {
			if s.ID == c.MyID && s.ClientPort != 0 {
				erase = true
			}
		}
		edited, err := zoocfg.EditStatic(static, dyn, erase)
		if err != nil {
			return fmt.Errorf("server: %s: %w", c.Static, err)
		}
		if err := c.replace(c.Static, edited); err != nil {
			return err
		}
		c.written = v
	}
	if cs.Next == nil {
		switch err := c.FS.Remove(next); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("server: remove %s: %w", next, err)
		default:
			return c.FS.SyncDir(filepath.Dir(next))
		}
	}
	return nil
}

// Backup copies the static file to <static>.bak, as ZooKeeper does when
// it starts a member of an ensemble with reconfigEnabled whose servers
// are still in the static file (before it first rewrites that file); the
// copy is never read back.
func (c *ConfigFiles) Backup() error {
	data, err := vfs.ReadFile(c.FS, c.Static)
	if err != nil {
		return fmt.Errorf("server: read %s: %w", c.Static, err)
	}
	return c.replace(c.Static+".bak", data)
}

// replace writes data to path atomically.
func (c *ConfigFiles) replace(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp := path + ".tmp"
	f, err := c.FS.Create(tmp)
	if err != nil {
		return fmt.Errorf("server: create %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("server: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("server: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("server: close %s: %w", tmp, err)
	}
	if err := c.FS.Rename(tmp, path); err != nil {
		return fmt.Errorf("server: rename %s: %w", tmp, err)
	}
	return c.FS.SyncDir(dir)
}

func parseText(text []byte) (*zoocfg.Ensemble, error) {
	e, err := zoocfg.ParseNextDynamic(text, "configuration")
	if err != nil {
		return nil, fmt.Errorf("server: configuration to write: %w", err)
	}
	return e, nil
}

// reconfigFor sets up dynamic reconfiguration for a member: zab's codec
// and configurations (the active one from the core's configuration, the
// next one from rc), the files to persist them in, and the backup of a
// static file that still holds the servers, as ZooKeeper makes it at
// start.
func (s *Server) reconfigFor(rc *QuorumReconfig, zcfg *zab.Config, maxRecord int) (*ConfigFiles, error) {
	if rc.StaticFile == "" {
		return nil, errors.New("server: reconfigEnabled needs the path of the static configuration file")
	}
	codec := peer.MembershipCodec{MaxBuffer: maxRecord}
	zcfg.Reconfigs = codec
	zcfg.ConfigText = s.cfg.Core.EnsembleConfig
	zcfg.ConfigVersion = zxid.ID(s.cfg.Core.EnsembleConfigVersion)
	if rc.Next != nil && rc.Next.Version > s.cfg.Core.EnsembleConfigVersion {
		m, err := codec.Parse(rc.Next.Data())
		if err != nil {
			return nil, fmt.Errorf("server: %s%s: %w", rc.StaticFile, zoocfg.NextDynamicSuffix, err)
		}
		zcfg.NextConfig = &m
	}
	fsys := s.cfg.Storage.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	files := &ConfigFiles{FS: fsys, Static: rc.StaticFile, MyID: int64(zcfg.ID), written: rc.Written}
	if rc.Backup {
		if err := files.Backup(); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// configStore persists the configurations zab hands out (peer.ConfigStore)
// and tells the transport every server's addresses in them, so that a
// member dials servers a reconfiguration added and finds moved ones. It
// runs on the persister goroutine.
type configStore struct {
	files *ConfigFiles
	tr    *quorumnet.Transport
}

func (c configStore) SaveConfig(cs zab.ConfigState) error {
	if err := c.files.SaveConfig(cs); err != nil {
		return err
	}
	learnAddresses(c.tr, cs.Active.Text)
	if cs.Next != nil {
		learnAddresses(c.tr, cs.Next.Text)
	}
	return nil
}

// learnAddresses gives tr the quorum and election addresses of every
// server in a configuration's text.
func learnAddresses(tr *quorumnet.Transport, text []byte) {
	e, err := zoocfg.ParseNextDynamic(text, "configuration")
	if err != nil {
		return // a member without a configuration text: nothing to learn
	}
	for _, srv := range e.Servers {
		tr.SetPeer(zab.PeerID(srv.ID), peerAddrs(srv))
	}
}

// peerAddrs is a server line's quorum and election addresses.
func peerAddrs(srv zoocfg.Server) quorumnet.PeerAddrs {
	return quorumnet.PeerAddrs{
		Quorum:   net.JoinHostPort(srv.Host, strconv.Itoa(srv.QuorumPort)),
		Election: net.JoinHostPort(srv.Host, strconv.Itoa(srv.ElectionPort)),
	}
}

// followClientAddress moves the plaintext client port when the active
// configuration gives this member a client address other than the one it
// listens on, as ZooKeeper rebinds its client port on a reconfiguration:
// the new address is opened first (if it cannot be, the member keeps the
// old one and says why), then the old listener is closed; connections
// already open stay. It runs on the loop after a batch.
func (s *Server) followClientAddress() {
	q := s.quorum
	m := q.peer.Node().Membership()
	if s.cfg.Quorum.Reconfig == nil || m.Version == q.clientAddrVersion {
		return
	}
	q.clientAddrVersion = m.Version
	e, err := zoocfg.ParseNextDynamic(m.Text, "configuration")
	if err != nil {
		return
	}
	want := ""
	for _, srv := range e.Servers {
		if srv.ID == int64(s.cfg.Quorum.MyID) && srv.ClientPort != 0 {
			want = net.JoinHostPort(srv.ClientHost, strconv.Itoa(srv.ClientPort))
		}
	}
	old := s.clientListener()
	if want == "" || old == nil || sameAddr(old.Addr(), want) {
		return
	}
	ln, err := s.listenClients(want)
	if err != nil {
		s.log.Warn("configuration moves the client port; keeping the old one", "from", old.Addr().String(), "to", want, "err", err)
		return
	}
	s.lnMu.Lock()
	if s.lnClosed {
		s.lnMu.Unlock()
		ln.Close()
		return
	}
	// The old listener closes before the lock is let go, so that whoever
	// sees the new address (Addr) finds the old port closed.
	s.ln = ln
	old.Close()
	s.lnMu.Unlock()
	cfg := s.plainConnConfig()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.accept(ln, cfg) }()
	s.log.Info("client port moved by the configuration", "from", old.Addr().String(), "to", ln.Addr().String(), "version", m.Version)
}

// followQuorumAddresses moves the quorum and election listeners when the
// active configuration gives this member other ports or another host, as
// ZooKeeper binds its election port anew when a reconfiguration restarts
// leader election: the new ports are opened first (if they cannot be, the
// member keeps the old ones and says why), open links stay. A leader whose
// quorum address changes goes on leading (ZooKeeper's hands over, because
// its leader binds the quorum port once per term): its learners keep their
// links and reach the new address when they next connect.
func (s *Server) followQuorumAddresses() {
	q := s.quorum
	m := q.peer.Node().Membership()
	if s.cfg.Quorum.Reconfig == nil || s.cfg.Quorum.FixedListen || m.Version == q.quorumAddrVersion {
		return
	}
	q.quorumAddrVersion = m.Version
	e, err := zoocfg.ParseNextDynamic(m.Text, "configuration")
	if err != nil {
		return
	}
	for _, srv := range e.Servers {
		if srv.ID != int64(s.cfg.Quorum.MyID) {
			continue
		}
		quorum, election := s.cfg.Quorum.listenAddrs(peerAddrs(srv))
		if err := q.tr.Rebind(quorum, election); err != nil {
			s.log.Warn("configuration moves the quorum and election ports; keeping the old ones", "quorum", quorum, "election", election, "err", err)
		}
	}
}

// sameAddr reports whether a bound address is want (host:port), a
// wildcard host matching a wildcard.
func sameAddr(bound net.Addr, want string) bool {
	b, ok := bound.(*net.TCPAddr)
	w, err := net.ResolveTCPAddr("tcp", want)
	if !ok || err != nil {
		return false
	}
	return b.Port == w.Port && (b.IP.Equal(w.IP) || (b.IP.IsUnspecified() && (w.IP == nil || w.IP.IsUnspecified())))
}
