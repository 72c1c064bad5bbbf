package server

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/zab"
	"keeper/internal/testhost"
)

// reconfigEnsemble starts n members with reconfigEnabled, each with a
// static file holding the servers (as a zoo.cfg ZooKeeper would start
// from) and the super user super:pw. It returns the members and their
// static files.
func reconfigEnsemble(t *testing.T, n int) ([]*Server, []string) {
	t.Helper()
	sum := sha1.Sum([]byte("super:pw"))
	digest := "super:" + base64.StdEncoding.EncodeToString(sum[:])
	statics := make([]string, n)
	var lines string
	servers := startEnsembleWith(t, n, func(id zab.PeerID, cfg *Config) {
		if lines == "" {
			for i := 1; i <= n; i++ {
				a := cfg.Quorum.Peers[zab.PeerID(i)]
				lines += fmt.Sprintf("server.%d=%s:%s:participant\n", i, a.Quorum, portOf(a.Election))
			}
		}
		static := filepath.Join(t.TempDir(), "zoo.cfg")
		if err := os.WriteFile(static, []byte("tickTime=100\ndataDir="+cfg.Storage.DataDir+"\nreconfigEnabled=true\n"+lines), 0o644); err != nil {
			t.Fatal(err)
		}
		statics[id-1] = static
		cfg.Core.SuperDigest = digest
		// A client port outside the kernel's ephemeral range (testhost):
		// once a reconfiguration moves it, nothing else on the machine
		// binds the old one, and no dial to it connects to itself, so a
		// connection there can only be this member still listening.
		cfg.ClientAddr = testhost.Addr(t)
		cfg.AdminAddr = "127.0.0.1:0"
		cfg.Core.ReconfigEnabled = true
		cfg.Core.EnsembleConfig = []byte(lines + "version=0")
		cfg.Quorum.Reconfig = &QuorumReconfig{StaticFile: static, Backup: true}
	})
	return servers, statics
}

func portOf(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

// waitRoles waits until one member leads and every other one follows.
func waitRoles(t *testing.T, servers []*Server) (leader *Server, followers []*Server) {
	t.Helper()
	eventually(t, testhost.Scale(20*time.Second), func() bool {
		leader, followers = nil, nil
		for _, s := range servers {
			switch s.quorumRole() {
			case "leader":
				leader = s
			case "follower":
				followers = append(followers, s)
			}
		}
		return leader != nil && len(followers) == len(servers)-1
	}, "a leader and followers")
	return leader, followers
}

// A reconfig sent to a follower is answered there once it commits, and a
// client's later requests on that connection go on: an observer added,
// then removed, through the follower; every member's files then name the
// last configuration.
func TestReconfigThroughFollower(t *testing.T) {
	servers, statics := reconfigEnsemble(t, 3)
	_, followers := waitRoles(t, servers)
	c := zkOpen(t, followers[0])
	if err := c.AddAuth("digest", []byte("super:pw")); err != nil {
		t.Fatal(err)
	}
	joining := "server.100=127.0.0.1:1:2:observer;127.0.0.1:3"
	start := time.Now()
	if _, err := c.IncrementalReconfig([]string{joining}, nil, -1); err != nil {
		t.Fatalf("add after %v: %v", time.Since(start), err)
	}
	data, _, err := c.Get("/zookeeper/config")
	if err != nil || !strings.Contains(string(data), joining) {
		t.Fatalf("configuration %q (%v) lacks %q", data, err, joining)
	}
	if _, err := c.IncrementalReconfig(nil, []string{"100"}, -1); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if data, _, err = c.Get("/zookeeper/config"); err != nil || strings.Contains(string(data), "server.100") {
		t.Fatalf("configuration %q (%v) still has server 100", data, err)
	}
	if _, err := c.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	version := string(data[strings.LastIndex(string(data), "version=")+len("version="):])
	for _, static := range statics {
		eventually(t, waitTimeout, func() bool {
			b, _ := os.ReadFile(static)
			return strings.Contains(string(b), "dynamicConfigFile="+static+".dynamic."+version)
		}, "the static file names the last configuration")
		if _, err := os.Stat(static + ".bak"); err != nil {
			t.Fatal(err)
		}
	}
}

// Removing the leader: once the change commits, the old leader stops
// leading and a member of the new configuration leads it; the sessions of
// the remaining members' clients go on and writes succeed.
func TestReconfigRemoveLeader(t *testing.T) {
	servers, _ := reconfigEnsemble(t, 3)
	leader, followers := waitRoles(t, servers)
	c := zkOpen(t, followers[0])
	if err := c.AddAuth("digest", []byte("super:pw")); err != nil {
		t.Fatal(err)
	}
	gone := fmt.Sprint(leader.cfg.Quorum.MyID)
	// The reply may be lost with the follower's link to its old leader, as
	// with ZooKeeper; the change is then seen in /zookeeper/config.
	_, err := c.IncrementalReconfig(nil, []string{gone}, -1)
	t.Logf("reconfig removing leader %s: %v", gone, err)
	eventually(t, testhost.Scale(20*time.Second), func() bool {
		data, _, err := c.Get("/zookeeper/config")
		return err == nil && !strings.Contains(string(data), "server."+gone+"=")
	}, "the leader removed from the configuration")
	var newLeader *Server
	eventually(t, testhost.Scale(20*time.Second), func() bool {
		newLeader = nil
		for _, s := range followers {
			if s.quorumRole() == "leader" {
				newLeader = s
			}
		}
		return newLeader != nil && leader.quorumRole() != "leader"
	}, "a leader of the new configuration")
	eventually(t, testhost.Scale(20*time.Second), func() bool {
		_, err := c.Create("/after-removal", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil || err == zk.ErrNodeExists
	}, "a write with the two members left")
}

// A reconfiguration that gives a member another client port moves its
// client port there (the old one stops taking connections; sessions on it
// go on), and the admin server's view of the ensemble follows the active
// configuration.
func TestReconfigMovesClientPort(t *testing.T) {
	servers, _ := reconfigEnsemble(t, 3)
	leader, followers := waitRoles(t, servers)
	mover := followers[0]
	before := mover.Addr().String()
	c := zkOpen(t, leader)
	if err := c.AddAuth("digest", []byte("super:pw")); err != nil {
		t.Fatal(err)
	}
	onMover := zkOpen(t, mover)
	id := mover.cfg.Quorum.MyID
	a := mover.cfg.Quorum.Peers[id]
	newAddr := testhost.Addrs(t, 1)[0]
	line := fmt.Sprintf("server.%d=%s:%s:participant;%s", id, a.Quorum, portOf(a.Election), newAddr)
	if _, err := c.IncrementalReconfig([]string{line}, nil, -1); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, func() bool { return mover.Addr().String() == newAddr }, "the client port moved to %s", newAddr)
	if conn, err := net.DialTimeout("tcp", before, time.Second); err == nil {
		conn.Close()
		t.Fatalf("the old client port %s still takes connections", before)
	}
	moved, _ := dialZK(t, 10*time.Second, newAddr)
	if _, err := moved.Create("/moved", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := onMover.Get("/moved"); err != nil {
		t.Fatalf("a session on the old port: %v", err)
	}
}

// A reconfiguration that gives members other quorum and election ports
// moves their listeners (the old ports stop taking connections): the
// leader's and a follower's. The ensemble goes on committing, and after
// the leader is stopped the two left elect a leader over the new election
// port and sync over the new quorum port.
func TestReconfigMovesQuorumPorts(t *testing.T) {
	servers, _ := reconfigEnsemble(t, 3)
	leader, followers := waitRoles(t, servers)
	c := zkOpen(t, followers[1])
	if err := c.AddAuth("digest", []byte("super:pw")); err != nil {
		t.Fatal(err)
	}
	type moved struct {
		s         *Server
		old, want [2]string
	}
	var moves []moved
	for _, s := range []*Server{leader, followers[0]} {
		id := s.cfg.Quorum.MyID
		ports := testhost.Addrs(t, 2)
		line := fmt.Sprintf("server.%d=%s:%s:participant;%s", id, ports[0], portOf(ports[1]), s.Addr())
		old := [2]string{s.quorum.tr.QuorumAddr(), s.quorum.tr.ElectionAddr()}
		if _, err := c.IncrementalReconfig([]string{line}, nil, -1); err != nil {
			t.Fatal(err)
		}
		moves = append(moves, moved{s, old, [2]string{ports[0], ports[1]}})
	}
	for _, m := range moves {
		eventually(t, waitTimeout, func() bool {
			return m.s.quorum.tr.QuorumAddr() == m.want[0] && m.s.quorum.tr.ElectionAddr() == m.want[1]
		}, "member %d listening on %v", m.s.cfg.Quorum.MyID, m.want)
		for _, old := range m.old {
			if conn, err := net.DialTimeout("tcp", old, time.Second); err == nil {
				conn.Close()
				t.Fatalf("member %d's old port %s still takes connections", m.s.cfg.Quorum.MyID, old)
			}
		}
	}
	if _, err := c.Create("/after-move", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	leader.Close()
	eventually(t, testhost.Scale(30*time.Second), func() bool {
		return followers[0].quorumRole() == "leader" || followers[1].quorumRole() == "leader"
	}, "a leader among the two left")
	eventually(t, testhost.Scale(20*time.Second), func() bool {
		_, err := c.Create("/after-leader-stopped", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil || err == zk.ErrNodeExists
	}, "a write with the two members left")
}

// Removing a follower: the admin server's quorum commands on the others
// count the voters of the new configuration.
func TestReconfigAdminFollowsConfiguration(t *testing.T) {
	servers, _ := reconfigEnsemble(t, 3)
	leader, followers := waitRoles(t, servers)
	c := zkOpen(t, leader)
	if err := c.AddAuth("digest", []byte("super:pw")); err != nil {
		t.Fatal(err)
	}
	gone := followers[1].cfg.Quorum.MyID
	if _, err := c.IncrementalReconfig(nil, []string{fmt.Sprint(gone)}, -1); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Server{leader, followers[0]} {
		eventually(t, waitTimeout, func() bool {
			view, _ := adminJSON(t, s, "voting_view")["current_config"].(map[string]any)
			return len(view) == 2 && view[fmt.Sprint(gone)] == nil
		}, "member %d's voting view without member %d", s.cfg.Quorum.MyID, gone)
	}
}
