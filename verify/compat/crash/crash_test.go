package crash

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/internal/keeperbin"
	"keeper/internal/testhost"
)

var (
	seedFlag   = flag.Uint64("seed", 0, "replay the crash schedule of this seed")
	roundsFlag = flag.Int("rounds", 0, "number of crash rounds (default 20, 3 with -short)")
)

// Workload shape. Sixteen sessions each write about writesPerSecond times a
// second; a round runs between minRun and maxRun before the kill, so a
// 20-round test writes tens of thousands of nodes and stays within about
// two minutes, verification included.
const (
	sessions        = 16
	writesPerSecond = 150
	minRun          = 300 * time.Millisecond
	maxRun          = 2500 * time.Millisecond
	snapCount       = 1000 // a snapshot every 500-1000 txns: several per round
	readWorkers     = 32
)

// TestCrashRecovery runs `keeper server` as a child process, has sessions
// write to it, kills it with SIGKILL at a seeded random moment, checks the
// files with `keeper tool`, purges old ones, restarts, and checks that
// every write a client saw acknowledged is there (a set's node holds at
// least the last acknowledged value) and that the recovered tree matches
// its digest.
//
// The digest check compares the `hash` four-letter word (the server's
// incrementally maintained digest after loading the snapshot and replaying
// the log) with a digest this test computes itself (docs/zookeeper-protocol.md §9.5) from a full
// read of the tree through the client. That proves more than checking
// files alone: every node's data and every stat field the server serves
// after recovery agree with the digest it carried through recovery, which
// `keeper tool snapshot verify` (run on the files before each restart)
// ties back to the digest records written into the snapshots before the
// crash.
func TestCrashRecovery(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed=%d (replay: go test ./verify/compat/crash -run TestCrashRecovery -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	rounds := 20
	if testing.Short() {
		rounds = 3
	}
	if *roundsFlag > 0 {
		rounds = *roundsFlag
	}

	// A chaos build that loses un-synced bytes on the kill, as a power
	// loss would (internal/vfs/lazyfs): restarts then meet torn log tails.
	bin, err := keeperbin.Build(t.TempDir(), "", "chaos")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dataDir := filepath.Join(root, "data")
	acks := newAckLog()
	digestsChecked, tornTails, unfinishedSnapshots, syncsUndone := 0, 0, 0, 0
	var prevTree map[string]node
	for round := 0; round <= rounds; round++ {
		srv := startKeeper(t, bin, root, dataDir, round)
		log := srv.logTail()
		if strings.Contains(log, "truncated a torn record") {
			tornTails++
		}
		if strings.Contains(log, "removed unfinished snapshots") {
			unfinishedSnapshots++
		}
		if strings.Contains(log, "lazyfs: rolled back syncs a kill interrupted") {
			syncsUndone++
		}
		// Rounds before the last one read only what the previous round
		// could have changed; the last reads every node again.
		var cached map[string]node
		if round < rounds {
			cached = prevTree
		}
		tree := readTree(t, srv.addr, cached)
		prevTree = tree
		if lost := acks.lost(tree); len(lost) > 0 {
			t.Fatalf("round %d: %d of %d acknowledged writes lost after the restart, e.g. %v\n%s",
				round, len(lost), acks.count(), lost[:min(10, len(lost))], srv.logTail())
		}
		checkDigest(t, srv, tree)
		if round == rounds {
			srv.kill()
			break
		}
		run := minRun + time.Duration(rng.Int64N(int64(maxRun-minRun)))
		before := acks.count()
		w := startWriters(t, srv.addr, round, acks)
		time.AfterFunc(run, srv.kill)
		<-srv.exited
		w.halt()
		t.Logf("round %d: killed after %v, %d writes acknowledged (%d in all)", round, run.Round(time.Millisecond),
			acks.count()-before, acks.count())
		digestsChecked += checkFiles(t, bin, dataDir)
	}
	if digestsChecked == 0 {
		t.Errorf("no snapshot digest was ever checked")
	}
	t.Logf("crash: rounds=%d acked=%d lost=0", rounds, acks.count())
	t.Logf("restarts that cut a torn log tail: %d; that removed an unfinished snapshot: %d; snapshot digests checked: %d; "+
		"restarts that rolled back a sync the kill interrupted: %d", tornTails, unfinishedSnapshots, digestsChecked, syncsUndone)
}

// ---------------------------------------------------------------------------
// The keeper process.

// keeperProc is one run of `keeper server`.
type keeperProc struct {
	addr    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	once    sync.Once
}

// kill sends SIGKILL and waits for the process to be reaped.
func (p *keeperProc) kill() {
	p.once.Do(func() { _ = p.cmd.Process.Kill() })
	<-p.exited
}

func (p *keeperProc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// startKeeper writes a zoo.cfg for a port of its own (testhost) and
// starts the server on dataDir.
func startKeeper(t *testing.T, bin, root, dataDir string, round int) *keeperProc {
	t.Helper()
	port := testhost.Port(t)
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"snapCount=%d\nmaxClientCnxns=0\n4lw.commands.whitelist=*\nadmin.enableServer=false\n", dataDir, port, snapCount)
	cfgPath := filepath.Join(root, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &keeperProc{
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		logPath: filepath.Join(root, fmt.Sprintf("keeper-%02d.log", round)),
		exited:  make(chan struct{}),
	}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "server", cfgPath)
	p.cmd.Env = append(os.Environ(), "KEEPER_FAULTS_FILE="+filepath.Join(root, "faults"), "KEEPER_DROP_UNSYNCED=1",
		"KEEPER_DROP_UNSYNCED_UNDO="+filepath.Join(root, "lazyfs-undo"))
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	if err := p.waitServing(testhost.Scale(30 * time.Second)); err != nil {
		t.Fatalf("round %d: keeper did not start: %v", round, err)
	}
	return p
}

// waitServing polls ruok until the server answers. keeper listens only
// after it has recovered its data, so an answer means recovery is done.
func (p *keeperProc) waitServing(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if reply, err := fourLetter(p.addr, "ruok"); err == nil && reply == "imok" {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("keeper exited:\n%s", p.logTail())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer on %s within %v:\n%s", p.addr, timeout, p.logTail())
		}
	}
}

// fourLetter sends a four-letter word and reads the reply.
func fourLetter(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// runTool runs `keeper tool args...`.
func runTool(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, append([]string{"tool"}, args...)...).CombinedOutput()
	return string(out), err
}

// checkFiles checks the crashed server's files with the offline tools:
// purge keeps three snapshots (and exercises purging crash leftovers), the
// log must have no damage but a torn tail, and every snapshot must be
// intact with its digest matching its tree (after replaying the log to the
// digest's zxid, for a fuzzy one). It returns how many snapshot digests
// were checked.
func checkFiles(t *testing.T, bin, dataDir string) int {
	t.Helper()
	if out, err := runTool(bin, "purge", dataDir, "-n", "3"); err != nil {
		t.Fatalf("keeper tool purge: %v\n%s", err, out)
	}
	if out, err := runTool(bin, "txnlog", "verify", dataDir); err != nil {
		t.Fatalf("keeper tool txnlog verify: %v\n%s", err, out)
	}
	out, err := runTool(bin, "snapshot", "verify", dataDir)
	if err != nil || strings.Contains(out, "SKIPPED BY RECOVERY") {
		t.Fatalf("keeper tool snapshot verify: %v\n%s", err, out)
	}
	if strings.Contains(out, "not checked") {
		t.Logf("keeper tool snapshot verify left a digest unchecked:\n%s", out)
	}
	return strings.Count(out, "matches after replaying the log") + strings.Count(out, "matches the tree")
}

// ---------------------------------------------------------------------------
// Writers and what they saw acknowledged.

// ackLog records acknowledged writes. Safe for concurrent use.
type ackLog struct {
	mu      sync.Mutex
	created map[string]string // path -> data
	set     map[string]int    // path -> highest value acknowledged
	n       int
}

func newAckLog() *ackLog {
	return &ackLog{created: make(map[string]string), set: make(map[string]int)}
}

func (a *ackLog) ackCreate(path, data string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.created[path] = data
	a.n++
}

func (a *ackLog) ackSet(path string, v int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.set[path] = max(a.set[path], v)
	a.n++
}

func (a *ackLog) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// lost lists the acknowledged writes missing from tree.
func (a *ackLog) lost(tree map[string]node) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for p, d := range a.created {
		if n, ok := tree[p]; !ok || string(n.data) != d {
			out = append(out, "create "+p)
		}
	}
	for p, v := range a.set {
		n, ok := tree[p]
		got, err := strconv.Atoi(string(n.data))
		if !ok || err != nil || got < v {
			out = append(out, fmt.Sprintf("set %s: holds %q, %d was acknowledged", p, n.data, v))
		}
	}
	return out
}

// writers are the sessions of one round. Session i creates
// /c/<round>-<i>/<n> with data n and, every fourth write, sets /k/<i> to
// round*1e9+n, so a key's value only ever grows.
type writers struct {
	stop  chan struct{}
	wg    sync.WaitGroup
	conns []*zk.Conn
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func dial(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(testhost.Scale(10 * time.Second))
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

func startWriters(t *testing.T, addr string, round int, acks *ackLog) *writers {
	t.Helper()
	w := &writers{stop: make(chan struct{})}
	setup := dial(t, addr)
	defer setup.Close()
	open := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/c", "/k"} {
		if _, err := setup.Create(p, nil, 0, open); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	for i := range sessions {
		parent := fmt.Sprintf("/c/%d-%d", round, i)
		if _, err := setup.Create(parent, nil, 0, open); err != nil {
			t.Fatal(err)
		}
		acks.ackCreate(parent, "")
		if _, err := setup.Create(fmt.Sprintf("/k/%d", i), []byte("-1"), 0, open); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	for i := range sessions {
		c := dial(t, addr)
		w.conns = append(w.conns, c)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.run(c, round, i, acks)
		}()
	}
	return w
}

func (w *writers) run(c *zk.Conn, round, i int, acks *ackLog) {
	tick := time.NewTicker(time.Second / writesPerSecond)
	defer tick.Stop()
	key := fmt.Sprintf("/k/%d", i)
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		path, data := fmt.Sprintf("/c/%d-%d/%d", round, i, n), strconv.Itoa(n)
		if _, err := c.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll)); err == nil {
			acks.ackCreate(path, data)
		}
		if n%4 == 0 {
			v := round*1_000_000_000 + n
			if _, err := c.Set(key, []byte(strconv.Itoa(v)), -1); err == nil {
				acks.ackSet(key, v)
			}
		}
	}
}

// halt stops the writers; their server is gone, so calls in flight fail.
func (w *writers) halt() {
	close(w.stop)
	for _, c := range w.conns {
		c.Close()
	}
	w.wg.Wait()
}

// ---------------------------------------------------------------------------
// Reading the whole tree and computing its digest.

// node is one znode as a client reads it, with its children's names.
type node struct {
	data []byte
	stat zk.Stat
	kids []string
}

// frozen reports whether path is the parent of one session's creates of
// one round (/c/<round>-<i>): nothing writes under it after its round,
// and its children are created once with their data and never set.
func frozen(path string) bool {
	rest, ok := strings.CutPrefix(path, "/c/")
	return ok && rest != "" && !strings.Contains(rest, "/")
}

// readTree reads every node, many requests in flight at once. With prev
// (the tree read at the previous restart), a frozen subtree whose parent
// has the same stat as in prev (same children: pzxid, cversion and
// numChildren unchanged) is taken from prev instead of read again, so
// that a round reads what it wrote, not the whole history: the server's
// digest, compared with the tree's, still covers every node, and a node
// recovery changed or lost under such a parent shows there.
func readTree(t *testing.T, addr string, prev map[string]node) map[string]node {
	t.Helper()
	conns := make([]*zk.Conn, 4)
	for i := range conns {
		conns[i] = dial(t, addr)
		defer conns[i].Close()
	}
	var (
		mu      sync.Mutex
		tree    = make(map[string]node)
		pending sync.WaitGroup
		errs    []error
	)
	queue := make(chan string, 1<<20)
	visit := func(c *zk.Conn, path string) {
		defer pending.Done()
		data, st, err := c.Get(path)
		if err == nil && frozen(path) {
			if old, ok := prev[path]; ok && old.stat == *st {
				mu.Lock()
				defer mu.Unlock()
				copySubtree(tree, prev, path)
				return
			}
		}
		var kids []string
		if err == nil && st.NumChildren > 0 {
			kids, _, err = c.Children(path)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			return
		}
		tree[path] = node{data: data, stat: *st, kids: kids}
		for _, k := range kids {
			pending.Add(1)
			queue <- strings.TrimSuffix(path, "/") + "/" + k
		}
	}
	var workers sync.WaitGroup
	for i := range readWorkers {
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
		t.Fatalf("reading the tree: %v", errors.Join(errs[:min(5, len(errs))]...))
	}
	return tree
}

// copySubtree copies path and every node under it from src to dst.
func copySubtree(dst, src map[string]node, path string) {
	n := src[path]
	dst[path] = n
	for _, k := range n.kids {
		copySubtree(dst, src, strings.TrimSuffix(path, "/")+"/"+k)
	}
}

// treeDigest computes the tree digest of docs/zookeeper-protocol.md §9.5 from what clients see:
// CRC-32 of the path ("" for the root), the data and the stat fields, with
// the stored cversion recovered as (cversion + numChildren) / 2; nodes
// under /zookeeper/ count zero. The tree must hold only persistent and
// ephemeral nodes, whose ephemeralOwner clients see as stored.
func treeDigest(tree map[string]node) int64 {
	var sum int64
	var b []byte
	for path, n := range tree {
		if strings.HasPrefix(path, "/zookeeper/") {
			continue
		}
		p := path
		if p == "/" {
			p = ""
		}
		crc := crc32.ChecksumIEEE([]byte(p))
		crc = crc32.Update(crc, crc32.IEEETable, n.data)
		s := n.stat
		b = b[:0]
		for _, v := range []int64{s.Czxid, s.Mzxid, s.Pzxid, s.Ctime, s.Mtime} {
			b = binary.BigEndian.AppendUint64(b, uint64(v))
		}
		for _, v := range []int32{s.Version, (s.Cversion + s.NumChildren) / 2, s.Aversion} {
			b = binary.BigEndian.AppendUint32(b, uint32(v))
		}
		b = binary.BigEndian.AppendUint64(b, uint64(s.EphemeralOwner))
		sum += int64(crc32.Update(crc, crc32.IEEETable, b))
	}
	return sum
}

// checkDigest compares the server's digest (the hash four-letter word) with
// the one computed from tree. Nothing changes the tree in between: the
// only txns then are the reading sessions' own createSession and the
// expiry of the killed server's sessions, which own no ephemerals.
func checkDigest(t *testing.T, srv *keeperProc, tree map[string]node) {
	t.Helper()
	reply, err := fourLetter(srv.addr, "hash")
	if err != nil {
		t.Fatalf("hash: %v", err)
	}
	// "<zxid hex>: <digest>"; keeper reports the digest at its last zxid.
	_, digestText, ok := strings.Cut(strings.TrimSpace(reply), ": ")
	served, perr := strconv.ParseInt(digestText, 10, 64)
	if !ok || perr != nil {
		t.Fatalf("hash replied %q", reply)
	}
	if got := treeDigest(tree); got != served {
		t.Fatalf("the server's digest is %d but the tree it serves (%d nodes) has digest %d\n%s",
			served, len(tree), got, srv.logTail())
	}
}
