package sim

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/peer"
	coordserver "keeper/coordination/server"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zoocfg"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// Dynamic reconfiguration (Options.Reconfig). Each member runs as a server
// with reconfigEnabled=true does (coordination/server's startQuorum and
// reconfigFor): its configuration comes from ZooKeeper's files — a static
// zoo.cfg and the dynamic files that replace its server lines — on the
// member's own disk, read at every start with zoocfg.Load; zab gets the
// active configuration, the one last seen proposed (zoo.cfg.dynamic.next)
// and peer.MembershipCodec; the core gets the text and version of
// /zookeeper/config and the node's view of the ensemble; and the peer
// persists every configuration zab hands out through the production
// coordserver.ConfigFiles, on the same crash-prone filesystem as the log,
// so that a crash keeps exactly what a power cut would of the files.
//
// A server outside the first configuration starts the way a server about
// to be added is started: its static file names the ensemble and itself
// as a participant, version 0.

// Where a member keeps its configuration files.
const (
	confDir    = "/conf"
	staticPath = confDir + "/zoo.cfg"
)

// The super user the operator authenticates as.
const superAuth = "super:operator"

// superDigest is zoo.cfg's DigestAuthenticationProvider.superDigest for
// superAuth.
func superDigest() string {
	user, _, _ := strings.Cut(superAuth, ":")
	sum := sha1.Sum([]byte(superAuth))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// serverSpec is server id's configuration line, as role, without the
// "server.N=" key: every simulated server keeps one address.
func serverSpec(id zab.PeerID, role string) string {
	return fmt.Sprintf("10.0.0.%d:2888:3888:%s;10.0.0.%d:2181", id, role, id)
}

// reconfigStart is what a member's configuration files gave at start.
type reconfigStart struct {
	voters, observers []zab.PeerID
	text              []byte
	version           zxid.ID
	next              *zab.Membership
	files             *coordserver.ConfigFiles
}

// apply sets zab's configuration as reconfigFor does.
func (rs *reconfigStart) apply(zcfg *zab.Config) {
	zcfg.Voters, zcfg.Observers = rs.voters, rs.observers
	zcfg.ConfigText, zcfg.ConfigVersion = rs.text, rs.version
	zcfg.NextConfig = rs.next
	zcfg.Reconfigs = peer.MembershipCodec{MaxBuffer: jute.DefaultMaxBuffer + 1024}
}

// loadConfig reads the member's configuration files (writing the static
// file at its first start) and sets the core's side of reconfiguration.
func (c *Cluster) loadConfig(s *server, cfg *zkcore.Config) (*reconfigStart, error) {
	fsys := s.disk.fs
	if _, err := fsys.Stat(staticPath); errors.Is(err, fs.ErrNotExist) {
		if err := writeStatic(fsys, c.staticFile(s.id)); err != nil {
			return nil, err
		}
	}
	zc, _, err := zoocfg.Load(staticPath, func(name string) ([]byte, error) { return vfs.ReadFile(fsys, name) })
	if err != nil {
		return nil, err
	}
	rs := &reconfigStart{text: zc.ConfigData(), version: zxid.ID(zc.ConfigVersion),
		files: &coordserver.ConfigFiles{FS: fsys, Static: staticPath, MyID: int64(s.id)}}
	for _, srv := range zc.Servers {
		if srv.Role == zoocfg.Observer {
			rs.observers = append(rs.observers, zab.PeerID(srv.ID))
		} else {
			rs.voters = append(rs.voters, zab.PeerID(srv.ID))
		}
	}
	if zc.NextEnsemble != nil && zc.NextEnsemble.Version > zc.ConfigVersion {
		m, err := (peer.MembershipCodec{}).Parse(zc.NextEnsemble.Data())
		if err != nil {
			return nil, err
		}
		rs.next = &m
	}
	cfg.ReconfigEnabled = true
	cfg.StandaloneEnabled = zc.StandaloneEnabled
	cfg.EnsembleConfig, cfg.EnsembleConfigVersion = rs.text, int64(rs.version)
	cfg.SuperDigest = superDigest()
	return rs, nil
}

// staticFile is server id's zoo.cfg at its first start: the first
// configuration's voters, and itself as a participant if it is not one.
func (c *Cluster) staticFile(id zab.PeerID) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nreconfigEnabled=true\n", c.opts.TickMs, dataDir)
	members := slices.Clone(c.ids[:c.opts.Voters])
	if !slices.Contains(members, id) {
		members = append(members, id)
	}
	for _, m := range members {
		fmt.Fprintf(&b, "server.%d=%s\n", m, serverSpec(m, "participant"))
	}
	return []byte(b.String())
}

// writeStatic writes the static file durably, as an operator's tooling
// would before the first start.
func writeStatic(fsys vfs.FS, data []byte) error {
	if err := fsys.MkdirAll(confDir, 0o755); err != nil {
		return err
	}
	f, err := fsys.Create(staticPath)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fsys.SyncDir(path.Dir(staticPath))
}

// configStore is a member's peer.ConfigStore: the production files, and
// the simulator's check of every activation once they are durable.
type configStore struct {
	s     *server
	files *coordserver.ConfigFiles
}

func (cs configStore) SaveConfig(st zab.ConfigState) error {
	if err := cs.files.SaveConfig(st); err != nil {
		return err
	}
	s := cs.s
	if nx := st.Next; nx != nil && nx.Version != s.nextSeen {
		s.nextSeen = nx.Version
		s.c.tracef("server %d sees proposed configuration %s: voters %v observers %v", s.id, nx.Version, nx.Voters, nx.Observers)
	}
	if v := st.Active.Version; v > s.confVersion {
		s.confVersion = v
		s.c.activated(s, st.Active)
	}
	return nil
}

// activated checks a configuration a member made active (as zab's
// reconfigCluster does): a leader's stamp (counter 0) renumbers the
// configuration before it and changes no member; any other must be held
// durably — logged, or in a snapshot — by a quorum of the configuration
// it replaces and by a quorum of its own; and one version names one
// configuration.
func (c *Cluster) activated(s *server, m zab.Membership) {
	c.tracef("server %d activates configuration %s: voters %v observers %v", s.id, m.Version, m.Voters, m.Observers)
	if old, ok := c.chain[m.Version]; ok {
		if !slices.Equal(old.Voters, m.Voters) || !slices.Equal(old.Observers, m.Observers) {
			c.violate("reconfig", "server %d activated configuration %s as voters %v observers %v, another member as %v %v",
				s.id, m.Version, m.Voters, m.Observers, old.Voters, old.Observers)
		}
		return
	}
	var prev zab.Membership
	for v, p := range c.chain {
		if v < m.Version && v >= prev.Version {
			prev = p
		}
	}
	c.chain[m.Version] = m
	if m.Version.Counter() == 0 {
		if !slices.Equal(sortedIDs(m.Voters), sortedIDs(prev.Voters)) || !slices.Equal(sortedIDs(m.Observers), sortedIDs(prev.Observers)) {
			c.violate("reconfig", "server %d activated the stamp %s as voters %v observers %v over %v %v",
				s.id, m.Version, m.Voters, m.Observers, prev.Voters, prev.Observers)
		}
		return
	}
	c.stats.Reconfigs++
	holds := map[zab.PeerID]bool{}
	for _, o := range c.servers[1:] {
		if o.holds(m.Version) {
			holds[o.id] = true
		}
	}
	if !quorumOf(prev.Voters, holds) || !quorumOf(m.Voters, holds) {
		c.violate("reconfig", "server %d activated configuration %s (voters %v) without both quorums: old voters %v, held by %v",
			s.id, m.Version, m.Voters, prev.Voters, sortedIDs(keysOf(holds)))
	}
}

// holds reports whether the server's storage holds txn z durably, as far
// as the simulator knows: in the history its files give, or appended and
// synced since.
func (s *server) holds(z zxid.ID) bool {
	if _, ok := slices.BinarySearch(s.hist, z); ok {
		return true
	}
	return slices.Contains(s.disk.synced, z)
}

func quorumOf(voters []zab.PeerID, set map[zab.PeerID]bool) bool {
	k := 0
	for _, v := range voters {
		if set[v] {
			k++
		}
	}
	return k > len(voters)/2
}

func keysOf(set map[zab.PeerID]bool) []zab.PeerID {
	out := make([]zab.PeerID, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	return out
}

func sortedIDs(ids []zab.PeerID) []zab.PeerID {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// checkConfigs checks, after healing, that every member up and in the
// final configuration (the newest any of them has active) has it active
// and shows it in /zookeeper/config, and that the final history holds its
// reconfig txn.
func (c *Cluster) checkConfigs() {
	var final zab.Membership
	for _, s := range c.upServers() {
		if m := s.peer.Node().Membership(); m.Version >= final.Version {
			final = m
		}
	}
	if final.Version.Counter() != 0 {
		if _, ok := c.oracle.final.index[final.Version]; !ok {
			c.violate("reconfig", "the final configuration %s is not in the final history", final.Version)
		}
	}
	for _, s := range c.upServers() {
		if !final.IsVoter(s.id) && !final.IsObserver(s.id) {
			continue
		}
		m := s.peer.Node().Membership()
		shown := s.peer.Core().Tree().Node(datatree.ConfigPath)
		switch {
		case m.Version != final.Version:
			c.violate("reconfig", "server %d, in the final configuration %s, has %s active", s.id, final.Version, m.Version)
		case shown == nil || string(shown.Data()) != string(final.Text):
			var got []byte
			if shown != nil {
				got = shown.Data()
			}
			c.violate("reconfig", "server %d shows %q in /zookeeper/config, the final configuration is %q", s.id, got, final.Text)
		}
	}
}
