package ensemble

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
)

// Catch-up workload: catchUpTxns creates spread over catchUpParents
// parents, sent by catchUpConns pipelined sessions with catchUpWindow
// creates in flight each. The follower is far more than the leader's
// in-memory tail (server.QuorumConfig.MaxRecentEntries, 10,000 txns)
// behind, so only a SNAP can bring it up to date.
const (
	catchUpTxns    = 100_000
	catchUpParents = 100
	catchUpConns   = 4
	catchUpWindow  = 1000
	catchUpSample  = 2000 // nodes whose data and stat are compared
	// catchUpSnapCount keeps every server from taking snapshots of its
	// own, so a new snapshot in the follower's data directory can only be
	// the one the leader streamed.
	catchUpSnapCount = 10_000_000
)

// TestFollowerCatchUpBySnap stops a follower, writes 100,000 txns through
// the leader with keeper's pipelined client, and restarts the follower.
// It must catch up by SNAP, which shows as a snapshot file named after the
// leader's last zxid in its data directory (no server takes snapshots of
// its own here), and then serve the leader's data: the same digest at the
// same zxid, the same child counts, and the same data and stat for a
// random sample of nodes.
func TestFollowerCatchUpBySnap(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 txns; skipped with -short")
	}
	e := NewEnsemble(t, Options{SnapCount: catchUpSnapCount})
	leader := e.WaitServing(electTimeout)
	var follower *Member
	for _, m := range e.Members {
		if m != leader {
			follower = m
			break
		}
	}
	setup := dialZK(t, []string{leader.Addr})
	ensurePath(t, setup, "/catchup")
	setup.Close()
	e.WaitConverged(electTimeout)
	stopped, err := follower.Srvr()
	if err != nil {
		t.Fatal(err)
	}
	e.Stop(follower)
	before := snapshotFiles(t, follower)

	start := time.Now()
	writeMany(t, leader.Addr)
	leaderState, err := leader.Srvr()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("follower %d stopped at zxid %#x; %d creates through leader %d in %v; leader at %#x",
		follower.ID, stopped.Zxid, catchUpTxns, leader.ID, time.Since(start).Round(time.Millisecond), leaderState.Zxid)

	start = time.Now()
	e.Start(follower)
	e.WaitServing(electTimeout)
	hash := e.WaitConverged(electTimeout)
	t.Logf("follower %d caught up in %v; hash %s", follower.ID, time.Since(start).Round(time.Millisecond), hash)

	after := snapshotFiles(t, follower)
	var fromLeader []string
	for name, z := range after {
		if _, old := before[name]; !old && z > stopped.Zxid {
			fromLeader = append(fromLeader, fmt.Sprintf("%s (zxid %#x)", name, z))
		}
	}
	if len(fromLeader) == 0 {
		t.Fatalf("follower %d has no new snapshot after zxid %#x: it did not catch up by SNAP (before %v, after %v)",
			follower.ID, stopped.Zxid, before, after)
	}
	t.Logf("snapshot installed from the leader: %v", fromLeader)
	compareServed(t, leader, follower)
}

// snapshotFiles maps m's snapshot file names to their zxids.
func snapshotFiles(t *testing.T, m *Member) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(m.DataDir, "version-2"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, ent := range ents {
		hex, ok := strings.CutPrefix(ent.Name(), "snapshot.")
		if !ok {
			continue
		}
		z, err := strconv.ParseInt(strings.TrimSuffix(hex, ".gz"), 16, 64)
		if err == nil {
			out[ent.Name()] = z
		}
	}
	return out
}

// catchUpPath is the i-th node of the workload, and catchUpData its data
// (10 to 100 bytes that differ per node).
func catchUpPath(i int) string {
	return fmt.Sprintf("/catchup/p%02d/n%06d", i%catchUpParents, i)
}

func catchUpData(i int) []byte {
	return []byte(strings.Repeat(strconv.Itoa(i)+".", 100)[:10+i%91])
}

// writeMany creates the parents and then catchUpTxns nodes through addr,
// catchUpWindow creates in flight per session. Every create must succeed.
func writeMany(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conns := make([]*zkclient.Conn, catchUpConns)
	for i := range conns {
		c, err := zkclient.Dial(ctx, addr, zkclient.Options{})
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		defer c.Close()
	}
	for p := range catchUpParents {
		if _, _, err := conns[0].Create(ctx, fmt.Sprintf("/catchup/p%02d", p), nil, zkclient.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for ci, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			window := make(chan struct{}, catchUpWindow)
			var done sync.WaitGroup
			for i := ci; i < catchUpTxns; i += catchUpConns {
				window <- struct{}{}
				done.Add(1)
				req := &zkproto.CreateRequest{Path: catchUpPath(i), Data: catchUpData(i), ACL: zkproto.OpenACLUnsafe}
				c.Go(zkproto.OpCreate, req, func(r zkclient.Result) {
					if r.Err != nil && failed.Add(1) == 1 {
						firstErr.Store(fmt.Errorf("create %s: %w", req.Path, r.Err))
					}
					<-window
					done.Done()
				})
			}
			done.Wait()
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d creates failed, the first: %v", n, firstErr.Load())
	}
}

// compareServed compares what leader and follower serve: every parent's
// stat (so its child count), the root's children and a random sample of
// nodes' data and stats. Each side is synced first.
func compareServed(t *testing.T, leader, follower *Member) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var conns [2]*zkclient.Conn
	for i, m := range []*Member{leader, follower} {
		c, err := zkclient.Dial(ctx, m.Addr, zkclient.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Sync(ctx, "/"); err != nil {
			t.Fatalf("sync on member %d: %v", m.ID, err)
		}
		conns[i] = c
	}
	paths := []string{"/", "/catchup"}
	for p := range catchUpParents {
		paths = append(paths, fmt.Sprintf("/catchup/p%02d", p))
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for range catchUpSample {
		paths = append(paths, catchUpPath(rng.IntN(catchUpTxns)))
	}
	var got [2][]nodeRead
	for i, c := range conns {
		got[i] = readNodes(ctx, t, c, paths)
	}
	diffs := 0
	for k, p := range paths {
		l, f := got[0][k], got[1][k]
		if !reflect.DeepEqual(l, f) {
			diffs++
			if diffs <= 10 {
				t.Errorf("%s: leader %d serves %+v, follower %d serves %+v", p, leader.ID, l, follower.ID, f)
			}
		}
	}
	if n := got[0][1].stat.NumChildren; n != catchUpParents {
		t.Errorf("/catchup has %d children on the leader, want %d", n, catchUpParents)
	}
	total := 0
	for k := 2; k < 2+catchUpParents; k++ {
		total += int(got[1][k].stat.NumChildren)
	}
	if total != catchUpTxns {
		t.Errorf("the follower's parents hold %d children in all, want %d", total, catchUpTxns)
	}
	if diffs == 0 {
		t.Logf("leader and follower serve the same data and stats for %d nodes (%d parents, %d sampled)",
			len(paths), catchUpParents, catchUpSample)
	}
}

// nodeRead is one get: data and stat, or the error.
type nodeRead struct {
	data []byte
	stat zkproto.Stat
	err  string
}

// readNodes gets every path, pipelined.
func readNodes(ctx context.Context, t *testing.T, c *zkclient.Conn, paths []string) []nodeRead {
	t.Helper()
	out := make([]nodeRead, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		c.Go(zkproto.OpGetData, &zkproto.GetDataRequest{Path: p}, func(r zkclient.Result) {
			defer wg.Done()
			if r.Err != nil {
				out[i].err = r.Err.Error()
				return
			}
			resp := r.Record.(*zkproto.GetDataResponse)
			out[i] = nodeRead{data: resp.Data, stat: resp.Stat}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("reading %d nodes from %s: %v", len(paths), c.Addr(), ctx.Err())
	}
	return out
}
