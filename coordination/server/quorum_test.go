package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/quorumnet"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/internal/testhost"
)

// startEnsemble runs n servers of one ensemble in this process.
func startEnsemble(t *testing.T, n int) []*Server {
	t.Helper()
	return startEnsembleWith(t, n, nil)
}

// startEnsembleWith runs n servers of one ensemble in this process;
// mutate, if set, adjusts each server's configuration before it starts.
func startEnsembleWith(t *testing.T, n int, mutate func(id zab.PeerID, cfg *Config)) []*Server {
	t.Helper()
	ports := testhost.Addrs(t, 2*n)
	peers := map[zab.PeerID]quorumnet.PeerAddrs{}
	var voters []zab.PeerID
	for i := range n {
		id := zab.PeerID(i + 1)
		voters = append(voters, id)
		peers[id] = quorumnet.PeerAddrs{Quorum: ports[2*i], Election: ports[2*i+1]}
	}
	var out []*Server
	for i := range n {
		id := zab.PeerID(i + 1)
		core := zkcore.DefaultConfig()
		core.ServerID = int64(id)
		core.TickMs = 100
		core.MinSessionTimeoutMs = 2000
		core.MaxSessionTimeoutMs = 20000
		cfg := Config{
			ClientAddr: "127.0.0.1:0", Core: core, FourLetterWhitelist: []string{"*"},
			Storage: StorageConfig{DataDir: t.TempDir()},
			Quorum: &QuorumConfig{MyID: id, Voters: voters, Peers: peers,
				ListenQuorum: peers[id].Quorum, ListenElection: peers[id].Election,
				InitLimitTicks: 20, SyncLimitTicks: 10},
		}
		if mutate != nil {
			mutate(id, &cfg)
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
	}
	return out
}

func TestEnsembleOverTCP(t *testing.T) {
	servers := startEnsemble(t, 3)
	deadline := time.Now().Add(testhost.Scale(20 * time.Second))
	for {
		leaders, serving := 0, 0
		for _, s := range servers {
			switch s.quorumRole() {
			case "leader":
				leaders++
				serving++
			case "follower":
				serving++
			}
		}
		if leaders == 1 && serving == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ensemble: roles %q %q %q", servers[0].quorumRole(), servers[1].quorumRole(), servers[2].quorumRole())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr().String())
	}
	c, _, err := zk.Connect(addrs[:1], 10*time.Second, zk.WithLogger(zk.DefaultLogger))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 50 {
		if _, err := c.Create(fmt.Sprintf("/n%d", i), []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	for i, addr := range addrs {
		c2, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(zk.DefaultLogger))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c2.Sync("/"); err != nil {
			t.Fatalf("sync on %d: %v", i, err)
		}
		kids, _, err := c2.Children("/")
		if err != nil || len(kids) != 51 {
			t.Fatalf("server %d: %d children, %v", i, len(kids), err)
		}
		c2.Close()
	}
}

// The leader reports its followers in mntr.
func TestEnsembleMntr(t *testing.T) {
	servers := startEnsemble(t, 3)
	deadline := time.Now().Add(testhost.Scale(20 * time.Second))
	for {
		for _, s := range servers {
			if s.quorumRole() != "leader" {
				continue
			}
			out := string(s.fourLetter(0, "mntr", 0))
			if strings.Contains(out, "zk_synced_followers\t2\n") && strings.Contains(out, "zk_server_state\tleader\n") &&
				strings.Contains(out, "zk_learners\t2\n") && strings.Contains(out, "zk_pending_syncs\t0\n") &&
				strings.Contains(out, "zk_peer_state\tleading - broadcast\n") && strings.Contains(out, "zk_quorum_size\t3\n") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no leader reporting two synced followers")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
