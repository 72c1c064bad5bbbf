package migrate

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/internal/testhost"
)

// superSecret is the super user both servers start with, so that the
// reading client sees every node whatever its ACL.
const superSecret = "super:secret"

// superDigest is the server setting for superSecret.
func superDigest() string {
	sum := sha1.Sum([]byte(superSecret))
	return "super:" + base64.StdEncoding.EncodeToString(sum[:])
}

// sessionTimeout is what every workload session asks for. The servers
// grant it (ZooKeeper's tickTime of 2 s allows up to 40 s), and it is long
// enough for the ephemerals of the sessions left open to outlive the
// restart and the comparison.
const sessionTimeout = 30 * time.Second

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// dial opens a session on addr and waits until it is established.
func dial(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(testhost.Scale(20 * time.Second))
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			c.Close()
			t.Fatalf("no session with %s", addr)
		}
	}
	return c
}

// closeAll closes sessions in parallel: a session whose server is gone
// takes a second to give up.
func closeAll(conns []*zk.Conn) {
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() { defer wg.Done(); c.Close() }()
	}
	wg.Wait()
}

var (
	openACL  = zk.WorldACL(zk.PermAll)
	bobACL   = zk.DigestACL(zk.PermAll, "bob", "bobpw")
	readOnly = zk.WorldACL(zk.PermRead)
	ipACL    = []zk.ACL{{Perms: zk.PermRead | zk.PermWrite | zk.PermAdmin, Scheme: "ip", ID: "127.0.0.1"}}
)

// aclVariants are the ACL lists the workload gives nodes: world, digest,
// ip, the creator's own identity (auth), and mixtures.
var aclVariants = [][]zk.ACL{
	openACL,
	bobACL,
	readOnly,
	ipACL,
	zk.AuthACL(zk.PermAll),
	append(slices.Clone(bobACL), readOnly...),
	append(append(slices.Clone(ipACL), bobACL...), zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}),
}

// randomData returns data of a random shape: null, empty, text, binary,
// or (rarely) a few hundred KiB.
func randomData(rng *rand.Rand) []byte {
	switch r := rng.IntN(100); {
	case r < 10:
		return nil
	case r < 20:
		return []byte{}
	case r < 60:
		return fmt.Appendf(nil, "value-%d", rng.IntN(1_000_000))
	case r < 99:
		b := make([]byte, rng.IntN(2048))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	return bytes.Repeat([]byte{byte(rng.Uint32())}, 200<<10+rng.IntN(100<<10))
}

// op is one client call of the workload.
type op func(c *zk.Conn) error

// runParallel runs ops on the given sessions with eight goroutines, and
// fails the test on the first error.
func runParallel(t *testing.T, conns []*zk.Conn, ops []op) {
	t.Helper()
	work := make(chan op)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range 8 {
		c := conns[i%len(conns)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				if err := o(c); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, o := range ops {
		work <- o
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d workload calls failed, e.g. %v", len(errs), errors.Join(errs[:min(5, len(errs))]...))
	}
}

func create(path string, data []byte, flags int32, acl []zk.ACL) op {
	return func(c *zk.Conn) error {
		if _, err := c.Create(path, data, flags, acl); err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		return nil
	}
}

// populate writes several thousand znodes of every kind through addr and
// returns the sessions that own ephemerals and must stay open. The tree is
// what rng makes it; the order of concurrent writes is not, so tests
// compare servers with each other, never with a model.
func populate(t *testing.T, addr string, rng *rand.Rand) (keepOpen []*zk.Conn) {
	t.Helper()
	var writers []*zk.Conn
	for range 4 {
		c := dial(t, addr)
		if err := c.AddAuth("digest", []byte("alice:alicepw")); err != nil {
			t.Fatal(err)
		}
		writers = append(writers, c)
	}
	defer closeAll(writers)

	setup := writers[0]
	for _, p := range []string{"/p", "/seq", "/cont", "/ttl", "/acl", "/eph", "/multi", "/deep"} {
		if _, err := setup.Create(p, []byte(p), 0, openACL); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	// Quotas (not enforced) whose stats every later write below them
	// updates: ephemerals and a closed session's deletes, multis, and a
	// quota set before its path exists. None is nested in another: live,
	// a nested quota's nodes count only towards it, but loading a
	// snapshot recounts the outer one over its whole subtree, on both
	// servers alike.
	for _, q := range []struct{ path, limits string }{
		{"/p", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=100000"},
		{"/eph", "count=-1,bytes=1000000=;byteHardLimit=-1;countHardLimit=-1"},
		{"/multi", "count=10,bytes=100"},
		{"/deep/d0/d1/d2", "count=5,bytes=-1"},
	} {
		setQuota(t, setup, q.path, q.limits)
	}

	var ops []op
	for i := range 2000 {
		ops = append(ops, create(fmt.Sprintf("/p/n%d", i), randomData(rng), 0, openACL))
	}
	for range 300 {
		ops = append(ops, create("/seq/s-", randomData(rng), zk.FlagSequence, openACL))
	}
	for i := range 200 {
		// Containers keep a child, so that no server's container check
		// deletes them while the test runs.
		p := fmt.Sprintf("/cont/c%d", i)
		data := randomData(rng)
		ops = append(ops, func(c *zk.Conn) error {
			if _, err := c.CreateContainer(p, data, zk.FlagContainer, openACL); err != nil {
				return fmt.Errorf("createContainer %s: %w", p, err)
			}
			return create(p+"/k", nil, 0, openACL)(c)
		})
	}
	for i := range 200 {
		p, data := fmt.Sprintf("/ttl/t%d", i), randomData(rng)
		ops = append(ops, func(c *zk.Conn) error {
			_, err := c.CreateTTL(p, data, zk.FlagTTL, openACL, time.Hour)
			return err
		})
	}
	for range 50 {
		data := randomData(rng)
		ops = append(ops, func(c *zk.Conn) error {
			_, err := c.CreateTTL("/ttl/ts-", data, zk.FlagPersistentSequentialWithTTL, openACL, time.Hour)
			return err
		})
	}
	for i := range 300 {
		ops = append(ops, create(fmt.Sprintf("/acl/a%d", i), randomData(rng), 0, aclVariants[rng.IntN(len(aclVariants))]))
	}
	rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	runParallel(t, writers, ops)

	deep := "/deep"
	for i := range 40 {
		deep += fmt.Sprintf("/d%d", i)
		if _, err := setup.Create(deep, randomData(rng), 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	runParallel(t, writers, mutations(rng))
	closedSession(t, addr)
	return ephemerals(t, addr, rng)
}

// setQuota creates the quota nodes of path with the znode requests zkCli's
// setquota sends: the quota directories with null data, the limits, then
// the stats at zero. The quota's own path need not exist yet.
func setQuota(t *testing.T, c *zk.Conn, path, limits string) {
	t.Helper()
	dir := "/zookeeper/quota"
	for _, name := range strings.Split(path, "/")[1:] {
		dir += "/" + name
		if _, err := c.Create(dir, nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", dir, err)
		}
	}
	for _, n := range []struct{ name, data string }{{"zookeeper_limits", limits}, {"zookeeper_stats", "count=0,bytes=0"}} {
		if _, err := c.Create(dir+"/"+n.name, []byte(n.data), 0, openACL); err != nil {
			t.Fatalf("create %s/%s: %v", dir, n.name, err)
		}
	}
}

// mutations change existing nodes: data (versions), ACLs (aversion),
// deletes (parent cversion and pzxid), and multis, one of them failing.
func mutations(rng *rand.Rand) []op {
	var ops []op
	perm := rng.Perm(2000)
	for _, i := range perm[:600] {
		p, data, twice := fmt.Sprintf("/p/n%d", i), randomData(rng), rng.IntN(3) == 0
		ops = append(ops, func(c *zk.Conn) error {
			if _, err := c.Set(p, data, -1); err != nil {
				return fmt.Errorf("set %s: %w", p, err)
			}
			if twice {
				_, err := c.Set(p, data, 1)
				return err
			}
			return nil
		})
	}
	for _, i := range perm[600:750] {
		p, acl := fmt.Sprintf("/p/n%d", i), aclVariants[rng.IntN(len(aclVariants))]
		ops = append(ops, func(c *zk.Conn) error {
			_, err := c.SetACL(p, acl, -1)
			return err
		})
	}
	for _, i := range perm[750:1000] {
		p := fmt.Sprintf("/p/n%d", i)
		ops = append(ops, func(c *zk.Conn) error { return c.Delete(p, -1) })
	}
	for i := range 100 {
		target, data := fmt.Sprintf("/p/n%d", perm[1000+i]), randomData(rng)
		m := fmt.Sprintf("/multi/m%d", i)
		ops = append(ops, func(c *zk.Conn) error {
			_, err := c.Multi(
				&zk.CreateRequest{Path: m, Data: data, Acl: openACL},
				&zk.CheckVersionRequest{Path: target, Version: 0},
				&zk.SetDataRequest{Path: target, Data: data, Version: -1},
				&zk.CreateRequest{Path: m + "/s-", Data: nil, Acl: openACL, Flags: zk.FlagSequence},
			)
			return err
		})
	}
	ops = append(ops, func(c *zk.Conn) error {
		// Fails on its second op: logged as an error multi, changes nothing.
		_, err := c.Multi(
			&zk.CreateRequest{Path: "/multi/never", Acl: openACL},
			&zk.DeleteRequest{Path: "/p/missing", Version: -1},
		)
		if !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("failing multi: %v", err)
		}
		return nil
	})
	return ops
}

// ephemerals has three sessions create ephemerals, plain and sequential,
// and returns them open.
func ephemerals(t *testing.T, addr string, rng *rand.Rand) []*zk.Conn {
	t.Helper()
	var conns []*zk.Conn
	for s := range 3 {
		c := dial(t, addr)
		conns = append(conns, c)
		var ops []op
		for i := range 100 {
			ops = append(ops, create(fmt.Sprintf("/eph/s%d-%d", s, i), randomData(rng), zk.FlagEphemeral, openACL))
		}
		for range 20 {
			ops = append(ops, create(fmt.Sprintf("/eph/es%d-", s), randomData(rng), zk.FlagEphemeralSequential, openACL))
		}
		runParallel(t, []*zk.Conn{c}, ops)
	}
	return conns
}

// closedSession creates ephemerals in a session and closes it: its
// closeSession txn deletes them.
func closedSession(t *testing.T, addr string) {
	t.Helper()
	c := dial(t, addr)
	for i := range 50 {
		if _, err := c.Create(fmt.Sprintf("/eph/gone-%d", i), nil, zk.FlagEphemeral, openACL); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
}

// ---------------------------------------------------------------------------
// Reading and comparing whole trees.

// znode is a node as clients see it.
type znode struct {
	Data []byte
	Stat zk.Stat
	ACL  []zk.ACL
}

// readTree reads every node with its data, stat and ACL, as the super
// user, with many requests in flight.
func readTree(t *testing.T, addr string) map[string]znode {
	t.Helper()
	var conns []*zk.Conn
	for range 4 {
		c := dial(t, addr)
		if err := c.AddAuth("digest", []byte(superSecret)); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer closeAll(conns)
	var (
		mu      sync.Mutex
		tree    = make(map[string]znode)
		errs    []error
		pending sync.WaitGroup
	)
	queue := make(chan string, 1<<16)
	visit := func(c *zk.Conn, path string) {
		defer pending.Done()
		data, st, err := c.Get(path)
		var acl []zk.ACL
		var kids []string
		if err == nil {
			acl, _, err = c.GetACL(path)
		}
		if err == nil && st.NumChildren > 0 {
			kids, _, err = c.Children(path)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			return
		}
		tree[path] = znode{Data: data, Stat: *st, ACL: acl}
		for _, k := range kids {
			pending.Add(1)
			queue <- strings.TrimSuffix(path, "/") + "/" + k
		}
	}
	var workers sync.WaitGroup
	for i := range 32 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for p := range queue {
				visit(conns[i%len(conns)], p)
			}
		}()
	}
	pending.Add(1)
	queue <- "/"
	pending.Wait()
	close(queue)
	workers.Wait()
	if len(errs) > 0 {
		t.Fatalf("reading the tree from %s: %v", addr, errors.Join(errs[:min(5, len(errs))]...))
	}
	return tree
}

// diffTrees describes how got differs from want, field by field, for up
// to 20 nodes.
func diffTrees(want, got map[string]znode) []string {
	paths := make([]string, 0, len(want)+len(got))
	for p := range want {
		paths = append(paths, p)
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out []string
	for _, p := range paths {
		w, inWant := want[p]
		g, inGot := got[p]
		var d []string
		switch {
		case !inGot:
			d = append(d, "missing")
		case !inWant:
			d = append(d, "unexpected node")
		default:
			d = diffNode(w, g)
		}
		if len(d) > 0 {
			out = append(out, p+": "+strings.Join(d, "; "))
		}
	}
	return out
}

func diffNode(w, g znode) []string {
	var d []string
	if (w.Data == nil) != (g.Data == nil) || !bytes.Equal(w.Data, g.Data) {
		d = append(d, fmt.Sprintf("data %s, want %s", dataText(g.Data), dataText(w.Data)))
	}
	if w.Stat != g.Stat {
		d = append(d, fmt.Sprintf("stat %+v, want %+v", g.Stat, w.Stat))
	}
	if !slices.Equal(w.ACL, g.ACL) {
		d = append(d, fmt.Sprintf("acl %v, want %v", g.ACL, w.ACL))
	}
	return d
}

func dataText(b []byte) string {
	switch {
	case b == nil:
		return "null"
	case len(b) > 32:
		return fmt.Sprintf("%d bytes %q...", len(b), b[:32])
	}
	return fmt.Sprintf("%q", b)
}

// checkQuotaStats checks that each quota's zookeeper_stats in tree holds
// the node count and data bytes of the quota's subtree, less the subtrees
// of the quotas nested in it.
func checkQuotaStats(t *testing.T, who string, tree map[string]znode) {
	t.Helper()
	const quotaDir, statsSuffix = "/zookeeper/quota", "/zookeeper_stats"
	want := map[string][2]int{} // quota path -> count, bytes
	for p := range tree {
		if q, ok := strings.CutPrefix(p, quotaDir); ok && strings.HasSuffix(q, "/zookeeper_limits") {
			want[strings.TrimSuffix(q, "/zookeeper_limits")] = [2]int{}
		}
	}
	for p, n := range tree {
		if p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/") {
			continue
		}
		deepest := ""
		for q := range want {
			if (p == q || strings.HasPrefix(p, q+"/")) && len(q) > len(deepest) {
				deepest = q
			}
		}
		if deepest != "" {
			w := want[deepest]
			want[deepest] = [2]int{w[0] + 1, w[1] + len(n.Data)}
		}
	}
	if len(want) == 0 {
		t.Errorf("%s: the tree has no quotas", who)
	}
	for q, w := range want {
		stats := tree[quotaDir+q+statsSuffix]
		if got := fmt.Sprintf("count=%d,bytes=%d", w[0], w[1]); string(stats.Data) != got {
			t.Errorf("%s: stats of the quota on %s are %q, the tree holds %s", who, q, stats.Data, got)
		}
	}
}

// summarize counts a tree's nodes by kind, for the test log.
func summarize(tree map[string]znode) string {
	var ephemeral, withACL, nullData int
	for _, n := range tree {
		if n.Stat.EphemeralOwner != 0 {
			ephemeral++
		}
		if !slices.Equal(n.ACL, openACL) {
			withACL++
		}
		if n.Data == nil {
			nullData++
		}
	}
	return fmt.Sprintf("%d nodes (%d ephemeral, %d with a non-open ACL, %d with null data)", len(tree), ephemeral, withACL, nullData)
}
