package server

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/coordination/quorumnet"
	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
	"keeper/internal/testhost"
	"keeper/internal/vfs"
)

// members is an in-process ensemble whose members a test stops and starts
// again on the same data directories and ports.
type members struct {
	t    *testing.T
	cfgs []Config
	up   []*Server // nil while stopped
}

// newMembers configures n members as startEnsembleWith does and starts
// none; every member still up is closed when the test ends.
func newMembers(t *testing.T, n int, mutate func(cfg *Config)) *members {
	ports := testhost.Addrs(t, 2*n)
	peers := map[zab.PeerID]quorumnet.PeerAddrs{}
	var voters []zab.PeerID
	for i := range n {
		id := zab.PeerID(i + 1)
		voters = append(voters, id)
		peers[id] = quorumnet.PeerAddrs{Quorum: ports[2*i], Election: ports[2*i+1]}
	}
	m := &members{t: t, up: make([]*Server, n)}
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
			mutate(&cfg)
		}
		m.cfgs = append(m.cfgs, cfg)
	}
	t.Cleanup(func() {
		for i := range m.up {
			m.stop(i)
		}
	})
	return m
}

// start starts member i with cfg (its own, changed).
func (m *members) start(i int, cfg Config) (*Server, error) {
	s, err := New(cfg)
	if err != nil {
		m.t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	m.up[i] = s
	return s, nil
}

func (m *members) mustStart(i int) *Server {
	m.t.Helper()
	s, err := m.start(i, m.cfgs[i])
	if err != nil {
		m.t.Fatalf("start member %d: %v", i+1, err)
	}
	return s
}

func (m *members) stop(i int) {
	if m.up[i] != nil {
		m.up[i].Close()
		m.up[i] = nil
	}
}

// TestEnsembleMemberWithDamagedSnapshot damages a follower's newest
// snapshot after a purge took what came before it. Like a standalone
// server it refuses to start; with snapshot.trust.empty it starts empty,
// but it makes no quorum with the one other member up, so no leader is
// elected without the old one; once that one is back, the empty member
// rejoins through the leader's snapshot with every acknowledged write.
func TestEnsembleMemberWithDamagedSnapshot(t *testing.T) {
	m := newMembers(t, 3, func(cfg *Config) { cfg.Storage.SnapCount = 20 })
	servers := []*Server{m.mustStart(0), m.mustStart(1), m.mustStart(2)}
	leader := waitEnsemble(t, servers)
	victim, other := (leader+1)%3, (leader+2)%3
	c := zkOpen(t, servers[leader])
	acks := newAckLog()
	victimDir := m.cfgs[victim].Storage.DataDir
	victimSnaps := func() []snap.Info {
		infos, err := snap.List(vfs.Default, filepath.Join(victimDir, txnlog.DirName))
		if err != nil {
			t.Fatal(err)
		}
		return infos
	}
	// Write until a purge to the newest snapshot leaves a log that does not
	// begin at the first txn: the snapshot is past the start of a second
	// log file (how many snapshots that takes depends on whether the
	// follower took one when it synced).
	purgeLeavesAGap := func() bool {
		snaps := victimSnaps()
		logs, err := txnlog.Files(vfs.Default, victimDir)
		if err != nil {
			t.Fatal(err)
		}
		return len(snaps) >= 2 && len(logs) >= 2 && snaps[0].Zxid >= logs[1].Start
	}
	for round := 0; !purgeLeavesAGap(); round++ {
		if round == 20 {
			t.Fatalf("the follower has only snapshots %v after %d rounds of writes", victimSnaps(), round)
		}
		acks.merge(writeSequentially(t, c, "a"+strings.Repeat("x", round), 20))
	}
	m.stop(victim)
	if _, err := Purge(vfs.Default, victimDir, "", 1, 0, nil); err != nil {
		t.Fatal(err)
	}
	newest := victimSnaps()[0]
	flipBit(t, vfs.Default, filepath.Join(victimDir, txnlog.DirName, newest.Name), newest.Size/2) // one bit: Adler-32 sees it
	if _, err := m.start(victim, m.cfgs[victim]); !errors.Is(err, ErrUnaccounted) {
		t.Fatalf("the damaged member started: %v, want it to refuse", err)
	}

	// Writes go on without it; then the leader stops.
	acks.merge(writeSequentially(t, c, "b", 20))
	last := zxid.ID(mustStat(t, c, "/s/b-19").Czxid)
	m.stop(leader)

	var logs logBuffer
	trusting := m.cfgs[victim]
	trusting.Storage.TrustEmptySnapshot = true
	trusting.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	v, err := m.start(victim, trusting)
	if err != nil {
		t.Fatalf("with snapshot.trust.empty: %v", err)
	}
	if !strings.Contains(logs.String(), "lost its state") {
		t.Fatalf("the member does not say it lost its state:\n%s", logs.String())
	}
	// The empty member and the follower without the leader must not elect
	// one of them: the follower could lack writes the empty member had
	// acknowledged. Elections take well under a second here.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, o := v.quorumRole(), servers[other].quorumRole(); r != "" || o == "leader" || o == "follower" {
			t.Fatalf("without the old leader the empty member is %q and the other %q", r, o)
		}
	}

	back := m.mustStart(leader)
	waitEnsemble(t, []*Server{back, servers[other], v})
	eventually(t, testhost.Scale(20*time.Second), func() bool {
		var missing []string
		v.Inspect(func(core *zkcore.Server) { missing = acks.missing(core.Tree()) })
		return len(missing) == 0
	}, "the empty member to hold every acknowledged write")
	// It came back through a SNAP: it had no file left to replay and wrote
	// no snapshot while its state was lost, and now holds the leader's.
	infos := victimSnaps()
	if len(infos) == 0 || infos[len(infos)-1].Zxid < last {
		t.Fatalf("the member's snapshots %v, want the leader's, at or after %s", infos, last)
	}
}
