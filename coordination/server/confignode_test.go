package server

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/zab"
	"keeper/coordination/zoocfg"
)

// TestConfigFromZooEnsembleConfig checks what /zookeeper/config is given:
// the configuration's bytes in an ensemble (a quorum of one included),
// nothing standalone.
func TestConfigFromZooEnsembleConfig(t *testing.T) {
	tests := []struct {
		cfg     string
		want    string
		version int64
	}{
		{"", "", 0},
		{"server.1=127.0.0.1:2888:3888\n", "", 0},
		{"standaloneEnabled=false\nserver.1=127.0.0.1:2888:3888\n", "server.1=127.0.0.1:2888:3888:participant\nversion=0", 0},
		{"server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889;2182\nversion=100000000\n",
			"server.1=127.0.0.1:2888:3888:participant\nserver.2=127.0.0.1:2889:3889:participant;0.0.0.0:2182\nversion=100000000", 0x100000000},
	}
	for _, tt := range tests {
		zc, _, err := zoocfg.Parse(strings.NewReader("dataDir=/tmp/x\nclientPort=2181\ninitLimit=5\nsyncLimit=2\n" + tt.cfg))
		if err != nil {
			t.Fatalf("%q: %v", tt.cfg, err)
		}
		zc.MyID = 1
		core := ConfigFromZoo(zc, nil).Core
		if got := string(core.EnsembleConfig); got != tt.want || core.EnsembleConfigVersion != tt.version {
			t.Errorf("%q: EnsembleConfig = %q, version %#x; want %q, %#x", tt.cfg, got, core.EnsembleConfigVersion, tt.want, tt.version)
		}
		if tt.want == "" && core.EnsembleConfig != nil {
			t.Errorf("%q: a standalone server got EnsembleConfig %q", tt.cfg, core.EnsembleConfig)
		}
	}
}

// TestEnsembleConfigNode reads /zookeeper/config on every member: the
// configuration's bytes, the stat Apache ZooKeeper 3.8 gives it (mzxid the
// configuration's version, version -1, aversion -1, the rest zero but
// mtime), world:anyone:r, and no write without the super user.
func TestEnsembleConfigNode(t *testing.T) {
	const data = "server.1=127.0.0.1:1:2:participant\nserver.2=127.0.0.1:3:4:participant\nserver.3=127.0.0.1:5:6:participant\nversion=0"
	servers := startEnsembleWith(t, 3, func(_ zab.PeerID, cfg *Config) {
		cfg.Core.EnsembleConfig = []byte(data)
	})
	waitEnsemble(t, servers)
	for i, s := range servers {
		c, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(zk.DefaultLogger))
		if err != nil {
			t.Fatal(err)
		}
		got, st, err := c.Get("/zookeeper/config")
		if err != nil {
			t.Fatalf("member %d: %v", i+1, err)
		}
		if string(got) != data {
			t.Errorf("member %d: data %q, want %q", i+1, got, data)
		}
		if st.Mtime == 0 {
			t.Errorf("member %d: mtime 0", i+1)
		}
		st.Mtime = 0
		want := zk.Stat{Version: -1, Aversion: -1, DataLength: int32(len(data))}
		if *st != want {
			t.Errorf("member %d: stat %+v, want %+v", i+1, *st, want)
		}
		acl, _, err := c.GetACL("/zookeeper/config")
		if err != nil || fmt.Sprint(acl) != fmt.Sprint(zk.WorldACL(zk.PermRead)) {
			t.Errorf("member %d: acl %v, %v", i+1, acl, err)
		}
		if _, err := c.Set("/zookeeper/config", []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("member %d: setData without auth: %v, want NoAuth", i+1, err)
		}
		c.Close()
	}
}

// quorumListenOnAllIPs listens at the line's ports on every address; the
// peers still dial the line's addresses.
func TestConfigFromZooQuorumListenOnAllIPs(t *testing.T) {
	for _, tt := range []struct {
		extra            string
		quorum, election string
	}{
		{"", "zk1.example:2888", "zk1.example:3888"},
		{"quorumListenOnAllIPs=false\n", "zk1.example:2888", "zk1.example:3888"},
		{"quorumListenOnAllIPs=true\n", ":2888", ":3888"},
	} {
		zc, _, err := zoocfg.Parse(strings.NewReader("dataDir=/tmp/x\nclientPort=2181\ninitLimit=5\nsyncLimit=2\n" + tt.extra +
			"server.1=zk1.example:2888:3888\nserver.2=zk2.example:2888:3888\n"))
		if err != nil {
			t.Fatalf("%q: %v", tt.extra, err)
		}
		zc.MyID = 1
		q := ConfigFromZoo(zc, nil).Quorum
		if q.ListenQuorum != tt.quorum || q.ListenElection != tt.election {
			t.Errorf("%q: listen on %q and %q, want %q and %q", tt.extra, q.ListenQuorum, q.ListenElection, tt.quorum, tt.election)
		}
		if p := q.Peers[1]; p.Quorum != "zk1.example:2888" || p.Election != "zk1.example:3888" {
			t.Errorf("%q: peers dial %+v", tt.extra, p)
		}
	}
	if _, _, err := zoocfg.Parse(strings.NewReader("quorumListenOnAllIPs=maybe\n")); err == nil {
		t.Error("quorumListenOnAllIPs=maybe accepted")
	}
}
