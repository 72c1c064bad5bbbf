package chaos

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"keeper/coordination/datatree"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

const (
	// walkWorkers is how many requests a tree walk keeps in flight.
	walkWorkers = 16
	// walkTimeout bounds one server's walk.
	walkTimeout = 90 * time.Second
	// maxTreeDiffs bounds the differences reported per server.
	maxTreeDiffs = 10
)

// znode is a node as a client reads it.
type znode struct {
	data     string
	stat     zkproto.Stat
	children int
}

// WalkTree reads every node of s's tree (data and Stat) over a direct
// connection of its own.
func WalkTree(ctx context.Context, s *Server) (map[string]znode, error) {
	ctx, cancel := context.WithTimeout(ctx, walkTimeout)
	defer cancel()
	conn, err := Dial(ctx, s.Addr, DialOptions{Timeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = conn.Close(cctx)
		ccancel()
	}()
	var (
		mu    sync.Mutex
		nodes = map[string]znode{}
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, walkWorkers)
	)
	var visit func(path string)
	visit = func(path string) {
		defer wg.Done()
		sem <- struct{}{}
		n, children, err := readNode(ctx, conn, path)
		<-sem
		mu.Lock()
		if err != nil {
			if first == nil {
				first = fmt.Errorf("chaos: walk %s: %s: %w", s.Name, path, err)
			}
			mu.Unlock()
			return
		}
		nodes[path] = n
		mu.Unlock()
		for _, ch := range children {
			wg.Add(1)
			go visit(zkproto.ChildPath(path, ch))
		}
	}
	wg.Add(1)
	visit("/")
	wg.Wait()
	return nodes, first
}

// readNode reads one node's data, Stat and children.
func readNode(ctx context.Context, conn *Conn, path string) (znode, []string, error) {
	r, err := conn.Do(ctx, zkproto.OpGetData, &zkproto.GetDataRequest{Path: path})
	if err != nil {
		return znode{}, nil, err
	}
	if r.Header.Err != zkproto.CodeOK {
		return znode{}, nil, fmt.Errorf("getData: %v", r.Header.Err)
	}
	gd := r.Record.(*zkproto.GetDataResponse)
	r, err = conn.Do(ctx, zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: path})
	if err != nil {
		return znode{}, nil, err
	}
	if r.Header.Err != zkproto.CodeOK {
		return znode{}, nil, fmt.Errorf("getChildren2: %v", r.Header.Err)
	}
	gc := r.Record.(*zkproto.GetChildren2Response)
	if gc.Stat != gd.Stat {
		return znode{}, nil, fmt.Errorf("the node changed during the walk: %+v then %+v", gd.Stat, gc.Stat)
	}
	return znode{data: string(gd.Data), stat: gd.Stat, children: len(gc.Children)}, gc.Children, nil
}

// treeOf lists a datatree's nodes as clients would read them.
func treeOf(t *datatree.Tree) map[string]znode {
	out := map[string]znode{}
	var walk func(path string)
	walk = func(path string) {
		n := t.Node(path)
		if n == nil {
			return
		}
		out[path] = znode{data: string(n.Data()), stat: n.Stat(), children: n.NumChildren()}
		for _, ch := range n.Children() {
			walk(zkproto.ChildPath(path, ch))
		}
	}
	walk("/")
	return out
}

// CheckTrees compares every running server's tree, node by node (data and
// every Stat field), with the committed history's final tree. It returns
// the number of nodes compared per server.
func CheckTrees(ctx context.Context, servers []*Server, c *Committed, r *Report) int {
	want := treeOf(c.Final)
	for _, s := range servers {
		got, err := WalkTree(ctx, s)
		if err != nil {
			r.Violate("convergence", "%v", err)
			continue
		}
		diffTrees(s.Name, got, want, r)
	}
	return len(want)
}

// configNode holds a member's view of the ensemble, written from its own
// zoo.cfg at start and not by any txn (docs/zookeeper-protocol.md §5.6);
// in a chaos cluster every member lists its peers by the addresses of its
// own proxies, so it differs from member to member by design.
const configNode = "/zookeeper/config"

// diffTrees reports how got differs from want, except at configNode.
func diffTrees(server string, got, want map[string]znode, r *Report) {
	var paths []string
	for p := range want {
		paths = append(paths, p)
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	diffs := 0
	for _, p := range paths {
		if p == configNode {
			continue
		}
		g, gok := got[p]
		w, wok := want[p]
		var msg string
		switch {
		case !gok:
			msg = "missing"
		case !wok:
			msg = fmt.Sprintf("present (%+v) but not in the committed history", g.stat)
		case g != w:
			msg = fmt.Sprintf("is %q %+v (%d children); committed %q %+v (%d children)", g.data, g.stat, g.children, w.data, w.stat, w.children)
		default:
			continue
		}
		if diffs++; diffs <= maxTreeDiffs {
			r.Violate("convergence", "%s: %s %s", server, p, msg)
		}
	}
}

// DigestSample is a server's (zxid, digest) at some moment of the run.
type DigestSample struct {
	Server string
	Hash
}

// SampleDigests polls every running, unpaused server's hash four-letter
// word every interval until ctx ends.
func SampleDigests(ctx context.Context, cl *Cluster, interval time.Duration) []DigestSample {
	var out []DigestSample
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		for _, s := range cl.Servers {
			if p := s.Proc(); p == nil || !p.Running() || p.Paused() {
				continue
			}
			if h, err := s.Hash(); err == nil {
				out = append(out, DigestSample{Server: s.Name, Hash: h})
			}
		}
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
	}
}

// CheckDigests checks every sampled digest against the committed history
// replayed: a server at zxid z has the tree the history has after z, and
// z is committed. This stands in for ZooKeeper's per-txn digest check.
func CheckDigests(samples []DigestSample, c *Committed, r *Report) int {
	mismatches := 0
	for _, s := range samples {
		d, ok := c.DigestAt(zxid.ID(s.Zxid))
		switch {
		case zxid.ID(s.Zxid) > c.Last():
			// After convergence (the checkers' own sessions).
		case !ok:
			mismatches++
			r.Violate("digest", "%s was at zxid %#x, which is not committed", s.Server, s.Zxid)
		case d != s.Digest:
			mismatches++
			r.Violate("digest", "%s had digest %d at zxid %#x; the committed history has %d there", s.Server, s.Digest, s.Zxid, d)
		}
	}
	return mismatches
}
