package server

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"keeper/coordination/quorumnet"
	"keeper/coordination/zab"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkcore"
	"keeper/internal/memnet"
	"keeper/internal/vfs"
)

// TestEnsembleOverMemnet runs a three-member ensemble whose client,
// quorum and election ports all go through Config.Listen and Config.Dial
// (an in-memory network), each member on its own MemFS, inside a
// synctest bubble: it elects a leader, a write through one member is read
// through another, and Close ends every goroutine (the bubble checks).
func TestEnsembleOverMemnet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		peers := map[zab.PeerID]quorumnet.PeerAddrs{}
		voters := []zab.PeerID{1, 2, 3}
		for _, id := range voters {
			peers[id] = quorumnet.PeerAddrs{Quorum: fmt.Sprintf("127.0.0.1:%d", 3000+id), Election: fmt.Sprintf("127.0.0.1:%d", 4000+id)}
		}
		var servers []*Server
		for _, id := range voters {
			core := zkcore.DefaultConfig()
			core.ServerID = int64(id)
			core.StartWallMs = time.Now().UnixMilli()
			s, err := New(Config{
				ClientAddr: fmt.Sprintf("127.0.0.1:%d", 2180+id), Core: core, Listen: n.Listen, Dial: n.Dial,
				Storage: StorageConfig{FS: vfs.NewMem(), DataDir: "/data"},
				Quorum: &QuorumConfig{MyID: id, Voters: voters, Peers: peers,
					ListenQuorum: peers[id].Quorum, ListenElection: peers[id].Election,
					InitLimitTicks: 10, SyncLimitTicks: 5},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			servers = append(servers, s)
		}
		// Virtual time: the wait costs nothing real.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
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
				t.Fatalf("no ensemble after a virtual minute: roles %q %q %q", servers[0].quorumRole(), servers[1].quorumRole(), servers[2].quorumRole())
			}
		}
		ctx := context.Background()
		opts := zkclient.Options{SessionTimeout: 10 * time.Second, DialContext: n.Dial}
		w, err := zkclient.Dial(ctx, servers[0].Addr().String(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := w.Create(ctx, "/seam", []byte("x"), zkclient.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r, err := zkclient.Dial(ctx, servers[2].Addr().String(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Sync(ctx, "/seam"); err != nil {
			t.Fatal(err)
		}
		if data, _, err := r.Get(ctx, "/seam", false); err != nil || string(data) != "x" {
			t.Fatalf("read through member 3: %q, %v", data, err)
		}
		w.Close()
		r.Close()
		for _, s := range servers {
			s.Close()
		}
	})
}
