package server

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

var crashSeedFlag = flag.Uint64("crash-seed", 0, "replay TestCrashKeepsAcknowledgedWrites with this seed")

// durableDataDir is where the storage tests keep their data, in a MemFS.
const durableDataDir = "/data"

// durableSnapDir holds the snapshots and (dataLogDir defaulting to
// dataDir) the log files.
var durableSnapDir = filepath.Join(durableDataDir, txnlog.DirName)

// durableConfig is a server keeping its data in fs. Log files grow by
// 64 KiB rather than 64 MiB, so that the memory filesystem stays small.
func durableConfig(fs vfs.FS, mutate ...func(*Config)) Config {
	cfg := Config{
		ClientAddr:          "127.0.0.1:0",
		Core:                zkcore.DefaultConfig(),
		FourLetterWhitelist: []string{"*"},
		Storage:             StorageConfig{FS: fs, DataDir: durableDataDir, PreAllocSizeBytes: 64 << 10},
	}
	cfg.Core.ExtendedTypes = true
	for _, m := range mutate {
		m(&cfg)
	}
	return cfg
}

// startDurable starts a server with cfg and returns Start's error.
func startDurable(t *testing.T, cfg Config) (*Server, error) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { s.Close() })
	return s, nil
}

func mustStartDurable(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := startDurable(t, cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

// logBuffer collects a server's log lines. Safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// logTo sends the server's logs to buf.
func logTo(buf *logBuffer) func(*Config) {
	return func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(buf, nil)) }
}

// ---------------------------------------------------------------------------
// Whole-tree images, to compare a tree before and after a restart.

// znodeImage is everything a snapshot or a replay must reproduce of a node.
type znodeImage struct {
	Data     []byte // nil for null data
	Stat     zkproto.StatPersisted
	Children []string
	ACL      []zkproto.ACL
}

// treeImage is a whole tree.
type treeImage struct {
	Nodes    map[string]znodeImage
	Digest   int64
	LastZxid zxid.ID
}

// imageOf walks tree from the root. It also checks that the tree's
// incremental digest equals one computed from scratch.
func imageOf(t *testing.T, tree *datatree.Tree) treeImage {
	t.Helper()
	img := treeImage{Nodes: make(map[string]znodeImage), Digest: tree.Digest(), LastZxid: tree.LastZxid()}
	stack := []string{"/"}
	for len(stack) > 0 {
		path := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := tree.Node(path)
		img.Nodes[path] = znodeImage{
			Data: bytes.Clone(n.Data()), Stat: n.Persisted(), Children: n.Children(),
			ACL: slices.Clone(tree.ACL(n)),
		}
		for _, c := range n.Children() {
			stack = append(stack, strings.TrimSuffix(path, "/")+"/"+c)
		}
	}
	if got := tree.ComputeDigest(); got != img.Digest {
		t.Errorf("the tree's digest is %d but recomputing it gives %d", img.Digest, got)
	}
	return img
}

// inspectImage takes the image of a running server's tree.
func inspectImage(t *testing.T, s *Server) treeImage {
	t.Helper()
	var img treeImage
	if !s.Inspect(func(core *zkcore.Server) { img = imageOf(t, core.Tree()) }) {
		t.Fatal("server stopped")
	}
	return img
}

// diffImages describes up to ten differences between two images.
func diffImages(want, got treeImage) string {
	var out []string
	if want.Digest != got.Digest {
		out = append(out, fmt.Sprintf("digest %d, want %d", got.Digest, want.Digest))
	}
	if want.LastZxid != got.LastZxid {
		out = append(out, fmt.Sprintf("last zxid %v, want %v", got.LastZxid, want.LastZxid))
	}
	paths := slices.Sorted(maps.Keys(want.Nodes))
	for p := range got.Nodes {
		if _, ok := want.Nodes[p]; !ok {
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		w, inWant := want.Nodes[p]
		g, inGot := got.Nodes[p]
		switch {
		case !inGot:
			out = append(out, "missing "+p)
		case !inWant:
			out = append(out, "unexpected "+p)
		case !reflect.DeepEqual(w, g):
			out = append(out, fmt.Sprintf("%s: got %+v, want %+v", p, g, w))
		}
		if len(out) >= 10 {
			out = append(out, "...")
			break
		}
	}
	return strings.Join(out, "\n")
}

// ---------------------------------------------------------------------------
// Concurrent writers that record what was acknowledged.

// ackLog records the writes clients saw acknowledged. Safe for concurrent
// use.
type ackLog struct {
	mu      sync.Mutex
	created map[string]string // path -> data
	set     map[string]int    // path -> highest value acknowledged
	count   int
}

func newAckLog() *ackLog {
	return &ackLog{created: make(map[string]string), set: make(map[string]int)}
}

func (a *ackLog) ackCreate(path, data string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.created[path] = data
	a.count++
}

func (a *ackLog) ackSet(path string, v int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.set[path] = max(a.set[path], v)
	a.count++
}

func (a *ackLog) acked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count
}

// copy returns what was acknowledged so far.
func (a *ackLog) copy() *ackLog {
	a.mu.Lock()
	defer a.mu.Unlock()
	return &ackLog{created: maps.Clone(a.created), set: maps.Clone(a.set), count: a.count}
}

// merge adds what b acknowledged.
func (a *ackLog) merge(b *ackLog) {
	for p, d := range b.created {
		a.ackCreate(p, d)
	}
	for p, v := range b.set {
		a.ackSet(p, v)
	}
}

// missing lists the acknowledged writes the tree does not hold: a created
// node that is absent or has other data, or a set whose node holds an older
// value than the last one acknowledged.
func (a *ackLog) missing(tree *datatree.Tree) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for p, d := range a.created {
		if n := tree.Node(p); n == nil || string(n.Data()) != d {
			out = append(out, "create "+p)
		}
	}
	for p, v := range a.set {
		n := tree.Node(p)
		if n == nil {
			out = append(out, "set "+p+": node missing")
			continue
		}
		if got, err := strconv.Atoi(string(n.Data())); err != nil || got < v {
			out = append(out, fmt.Sprintf("set %s: value %q, acknowledged %d", p, n.Data(), v))
		}
	}
	slices.Sort(out)
	return out
}

// checkAcked fails the test if s's tree lacks an acknowledged write.
func checkAcked(t *testing.T, s *Server, acks *ackLog) {
	t.Helper()
	var missing []string
	s.Inspect(func(core *zkcore.Server) { missing = acks.missing(core.Tree()) })
	if len(missing) > 0 {
		t.Fatalf("%d acknowledged writes lost (of %d), e.g. %v", len(missing), acks.acked(), missing[:min(len(missing), 10)])
	}
}

// writers are client sessions writing concurrently: each counts n up from
// base, creates /w/<tag>-<writer>-<n> with data "<n>" and sets /k<writer>
// to n every third step. Sets therefore only ever raise a value, across
// rounds too when each round starts from a higher base.
type writers struct {
	base  int
	stop  chan struct{}
	wg    sync.WaitGroup
	conns []*zk.Conn
	acks  *ackLog
}

// prepareWriters creates the nodes the writers write under.
func prepareWriters(t *testing.T, c *zk.Conn, n int) {
	t.Helper()
	if _, err := c.Create("/w", nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := c.Create(fmt.Sprintf("/k%d", i), []byte("-1"), 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
}

// startWriters starts n writer sessions on addr.
func startWriters(t *testing.T, addr, tag string, n, base int, acks *ackLog) *writers {
	t.Helper()
	w := &writers{base: base, stop: make(chan struct{}), acks: acks}
	for i := range n {
		c, _ := dialZK(t, 10*time.Second, addr)
		w.conns = append(w.conns, c)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.run(c, tag, i)
		}()
	}
	return w
}

func (w *writers) run(c *zk.Conn, tag string, i int) {
	key := fmt.Sprintf("/k%d", i)
	for k := w.base; ; k++ {
		select {
		case <-w.stop:
			return
		default:
		}
		path, data := fmt.Sprintf("/w/%s-%d-%d", tag, i, k), strconv.Itoa(k)
		if _, err := c.Create(path, []byte(data), 0, openACL); err == nil {
			w.acks.ackCreate(path, data)
		} else if isFinal(err) {
			return
		}
		if k%3 == 0 {
			if _, err := c.Set(key, []byte(data), -1); err == nil {
				w.acks.ackSet(key, k)
			} else if isFinal(err) {
				return
			}
		}
	}
}

// isFinal reports whether a go-zk error means the session is over for
// good, so the writer should stop.
func isFinal(err error) bool {
	return errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrNoServer)
}

// halt stops the writers and closes their sessions.
func (w *writers) halt() {
	close(w.stop)
	for _, c := range w.conns {
		c.Close()
	}
	w.wg.Wait()
}

// waitAcks waits until at least n writes were acknowledged in total.
func waitAcks(t *testing.T, acks *ackLog, n int) {
	t.Helper()
	eventually(t, 4*waitTimeout, func() bool { return acks.acked() >= n }, "%d acknowledged writes", n)
}

// waitSnapshotIdle waits until no snapshot is being taken.
func waitSnapshotIdle(t *testing.T, s *Server) {
	t.Helper()
	eventually(t, waitTimeout, func() bool {
		var idle bool
		s.Inspect(func(*zkcore.Server) { idle = s.snapshot == nil })
		return idle
	}, "the snapshot in progress to finish")
}

// snapshots lists the snapshot files, newest first.
func snapshots(t *testing.T, fs vfs.FS) []snap.Info {
	t.Helper()
	infos, err := snap.List(fs, durableSnapDir)
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// writeSequentially creates n nodes /s/<tag>-<i> one at a time and returns
// what it acknowledged.
func writeSequentially(t *testing.T, c *zk.Conn, tag string, n int) *ackLog {
	t.Helper()
	acks := newAckLog()
	if _, err := c.Create("/s", nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	for i := range n {
		path, data := fmt.Sprintf("/s/%s-%d", tag, i), strconv.Itoa(i)
		mustCreate(t, c, path, []byte(data), 0, openACL)
		acks.ackCreate(path, data)
	}
	return acks
}

// ---------------------------------------------------------------------------
// The tests.

// TestRestartKeepsEveryWrite writes from many sessions, closes the server
// and starts a new one on the same files: the tree is the same, node for
// node, and so is a tree restored from a crash right after the close.
func TestRestartKeepsEveryWrite(t *testing.T) {
	mem := vfs.NewMem()
	s := mustStartDurable(t, durableConfig(mem, func(c *Config) { c.Storage.SnapCount = 200 }))
	admin := zkOpen(t, s)
	prepareWriters(t, admin, 6)
	// Node kinds and data shapes a snapshot and the log must both keep.
	mustCreate(t, admin, "/null", nil, 0, openACL)
	mustCreate(t, admin, "/empty", []byte{}, 0, openACL)
	mustCreate(t, admin, "/acl", []byte("x"), 0, append(zk.DigestACL(zk.PermAll, "bob", "secret"), zk.WorldACL(zk.PermRead)...))
	if _, err := admin.CreateContainer("/container", nil, zk.FlagContainer, openACL); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, admin, "/container/child", nil, 0, openACL)
	if _, err := admin.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, openACL, time.Hour); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, admin, "/seq-", nil, zk.FlagSequence, openACL)
	acks := newAckLog()
	w := startWriters(t, s.Addr().String(), "a", 6, 0, acks)
	waitAcks(t, acks, 600)
	w.halt()
	before := inspectImage(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(nil)

	for name, fs := range map[string]*vfs.MemFS{"closed": mem, "crashed after close": crashed} {
		t.Run(name, func(t *testing.T) {
			s := mustStartDurable(t, durableConfig(fs))
			if d := diffImages(before, inspectImage(t, s)); d != "" {
				t.Fatalf("tree after restart differs:\n%s", d)
			}
			checkAcked(t, s, acks)
		})
	}
}

// syncPointFS calls a hook before every sync of a log file, while the
// records just written are still unsynced: a crash taken there catches the
// log mid-append, which is how torn tails come about.
type syncPointFS struct {
	vfs.FS
	mu   sync.Mutex
	hook func() // mu guards hook
}

// setHook installs fn (nil removes it).
func (f *syncPointFS) setHook(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = fn
}

func (f *syncPointFS) beforeSync() {
	f.mu.Lock()
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
}

func (f *syncPointFS) wrap(file vfs.File, name string, err error) (vfs.File, error) {
	if err != nil || !strings.HasPrefix(filepath.Base(name), txnlog.FilePrefix) {
		return file, err
	}
	return &syncPointFile{File: file, fs: f}, nil
}

func (f *syncPointFS) Create(name string) (vfs.File, error) {
	file, err := f.FS.Create(name)
	return f.wrap(file, name, err)
}

func (f *syncPointFS) OpenReadWrite(name string) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name)
	return f.wrap(file, name, err)
}

type syncPointFile struct {
	vfs.File
	fs *syncPointFS
}

func (f *syncPointFile) Sync() error     { f.fs.beforeSync(); return f.File.Sync() }
func (f *syncPointFile) SyncData() error { f.fs.beforeSync(); return f.File.SyncData() }

// TestCrashKeepsAcknowledgedWrites crashes the disk (MemFS.CrashClone with
// random partial writes) while sessions write, restarts on what the crash
// left, and checks that every write acknowledged before the crash is
// there. Half the crashes come at a random moment, half right before a
// log sync, with the batch written but not synced, which leaves torn
// tails. Rounds follow each other on the crashed disk, so later rounds
// recover from earlier repairs.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	seed := *crashSeedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed=%d (replay: go test ./server -run TestCrashKeepsAcknowledgedWrites -crash-seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	mut := func(c *Config) {
		c.Storage.SnapCount = 100
		c.Storage.SnapshotStepNodes = 10
	}
	mem := vfs.NewMem()
	fs := &syncPointFS{FS: mem}
	s := mustStartDurable(t, durableConfig(fs, mut))
	prepareWriters(t, zkOpen(t, s), 8)
	durable := newAckLog()
	torn := 0
	for round := range rounds {
		acks := newAckLog()
		w := startWriters(t, s.Addr().String(), fmt.Sprintf("r%d", round), 8, round*1_000_000, acks)
		waitAcks(t, acks, 100+rng.IntN(400))
		var crashed *vfs.MemFS
		var ackedBefore *ackLog
		if round%2 == 0 {
			ackedBefore = acks.copy()
			crashed = mem.CrashClone(rng)
		} else {
			done := make(chan struct{})
			fs.setHook(func() {
				ackedBefore = acks.copy()
				crashed = mem.CrashClone(rng)
				fs.setHook(nil)
				close(done)
			})
			<-done
		}
		w.halt()
		s.Close()
		durable.merge(ackedBefore)

		mem = crashed
		fs = &syncPointFS{FS: mem}
		var logs logBuffer
		s = mustStartDurable(t, durableConfig(fs, mut, logTo(&logs)))
		checkAcked(t, s, durable)
		inspectImage(t, s) // checks the digest against a full recomputation
		out := logs.String()
		if strings.Contains(out, "truncated a torn record") {
			torn++
		}
		t.Logf("round %d: %d writes acknowledged before the crash, all present (torn tail cut: %v, unfinished snapshot removed: %v)",
			round, ackedBefore.acked(), strings.Contains(out, "truncated a torn record"),
			strings.Contains(out, "removed unfinished snapshots"))
	}
	t.Logf("%d rounds, %d writes acknowledged, 0 lost, %d torn tails repaired", rounds, durable.acked(), torn)
}

// TestFuzzySnapshotRestart takes many snapshots while sessions write (one
// node per loop step, so writes land in the middle of every walk), then
// restarts: from the newest snapshot plus the log, and from the log alone.
// Both give the tree the server had.
func TestFuzzySnapshotRestart(t *testing.T) {
	mem := vfs.NewMem()
	mut := func(c *Config) {
		c.Storage.SnapCount = 20
		c.Storage.SnapshotStepNodes = 1
	}
	s := mustStartDurable(t, durableConfig(mem, mut))
	admin := zkOpen(t, s)
	prepareWriters(t, admin, 6)
	writeSequentially(t, admin, "pre", 200) // a tree big enough for long walks
	acks := newAckLog()
	w := startWriters(t, s.Addr().String(), "f", 6, 0, acks)
	waitAcks(t, acks, 1500)
	w.halt()
	waitSnapshotIdle(t, s)
	before := inspectImage(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	infos := snapshots(t, mem)
	fuzzy := 0
	for _, info := range infos {
		sn, err := snap.Read(mem, filepath.Join(durableSnapDir, info.Name), 0)
		if err != nil {
			t.Fatalf("snapshot %s: %v", info.Name, err)
		}
		if sn.Digest != nil && sn.Digest.Zxid > sn.Zxid {
			fuzzy++
		}
	}
	if len(infos) < 5 || fuzzy == 0 {
		t.Fatalf("%d snapshots, %d of them fuzzy; the test needs several fuzzy ones", len(infos), fuzzy)
	}
	t.Logf("%d snapshots, %d fuzzy (digest taken after the snapshot's zxid)", len(infos), fuzzy)

	var logs logBuffer
	s = mustStartDurable(t, durableConfig(mem, mut, logTo(&logs)))
	if d := diffImages(before, inspectImage(t, s)); d != "" {
		t.Fatalf("tree restored from snapshot %s differs:\n%s", infos[0].Name, d)
	}
	if !strings.Contains(logs.String(), "file="+infos[0].Name) {
		t.Fatalf("restart did not load the newest snapshot %s:\n%s", infos[0].Name, logs.String())
	}
	s.Close()

	logOnly := mem.CrashClone(nil)
	for _, info := range snapshots(t, logOnly) {
		if err := logOnly.Remove(filepath.Join(durableSnapDir, info.Name)); err != nil {
			t.Fatal(err)
		}
	}
	s = mustStartDurable(t, durableConfig(logOnly, mut))
	if d := diffImages(before, inspectImage(t, s)); d != "" {
		t.Fatalf("tree replayed from the log alone differs:\n%s", d)
	}
	checkAcked(t, s, acks)
}

// TestSnapshotLateACLStagesTheNext: snapshots stream their nodes after the
// ACL lists cached when the walk started. A node given a new list while the
// walk runs makes that body unreadable, so the snapshot is abandoned and the
// next one staged, and every snapshot left on disk loads to the same tree.
func TestSnapshotLateACLStagesTheNext(t *testing.T) {
	mem := vfs.NewMem()
	var logs logBuffer
	mut := func(c *Config) {
		c.Storage.SnapCount = 20
		c.Storage.SnapshotStepNodes = 1
	}
	s := mustStartDurable(t, durableConfig(mem, mut, logTo(&logs)))
	c := zkOpen(t, s)
	writeSequentially(t, c, "pre", 300) // walks of 300 steps
	const late = "staging the next one"
	for i := 0; !strings.Contains(logs.String(), late); i++ {
		if i == 3000 {
			t.Fatalf("3,000 new ACL lists during walks and no walk was late:\n%s", logs.String())
		}
		acl := append(zk.WorldACL(zk.PermAll), zk.DigestACL(zk.PermRead, fmt.Sprintf("user%d", i), "pw")...)
		if _, err := c.SetACL(fmt.Sprintf("/s/pre-%d", 299-i%300), acl, -1); err != nil {
			t.Fatal(err)
		}
	}
	writeSequentially(t, c, "post", 50)
	waitSnapshotIdle(t, s)
	// The staged snapshot starts at the first txn applied after the late
	// one was abandoned, which may be the loop's last SetACL: the walk,
	// off the loop, can finish before the loop above sees the message, so
	// look for it anywhere after the message, not only after the loop.
	all := logs.String()
	after := all[strings.Index(all, late):]
	if !strings.Contains(after, "staged=true") {
		t.Fatalf("no staged snapshot after the late one:\n%s", after)
	}
	img := inspectImage(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, info := range snapshots(t, mem) {
		if _, err := snap.Read(mem, filepath.Join(durableSnapDir, info.Name), 0); err != nil {
			t.Fatalf("snapshot %s: %v", info.Name, err)
		}
	}
	s = mustStartDurable(t, durableConfig(mem, mut))
	defer s.Close()
	if d := diffImages(img, inspectImage(t, s)); d != "" {
		t.Fatalf("tree after restart differs:\n%s", d)
	}
}

// gateFS holds the creation of a snapshot's final temporary file (the one
// snap.WriteFrom writes the whole file into) until release is closed.
type gateFS struct {
	vfs.FS
	release  chan struct{}
	entered  chan struct{} // closed when a writer is held
	once     sync.Once
	inFlight atomic.Bool
}

func (g *gateFS) Create(name string) (vfs.File, error) {
	base := filepath.Base(name)
	if strings.HasPrefix(base, ".snapshot.") && strings.HasSuffix(base, ".tmp") && !strings.HasSuffix(base, ".nodes.tmp") &&
		base != ".snapshot.0.tmp" { // the one a fresh directory gets at start-up
		g.inFlight.Store(true)
		defer g.inFlight.Store(false)
		g.once.Do(func() { close(g.entered) })
		<-g.release
	}
	return g.FS.Create(name)
}

// TestCloseWaitsForSnapshotWriter checks that Close does not return while
// a snapshot is still being written: after Close, nothing of the server
// may touch its files (a new server may already be recovering from them,
// or an operator truncating them). Close used to return while the writer
// goroutine went on writing, renaming and syncing.
func TestCloseWaitsForSnapshotWriter(t *testing.T) {
	g := &gateFS{FS: vfs.NewMem(), release: make(chan struct{}), entered: make(chan struct{})}
	s := mustStartDurable(t, durableConfig(g, func(c *Config) { c.Storage.SnapCount = 2 }))
	c := zkOpen(t, s)
	writeSequentially(t, c, "g", 4)
	select {
	case <-g.entered:
	case <-time.After(waitTimeout):
		t.Fatal("no snapshot was written")
	}
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
		stillWriting := g.inFlight.Load()
		close(g.release)
		if stillWriting {
			t.Fatal("Close returned while the snapshot writer was still writing the snapshot file")
		}
	case <-time.After(200 * time.Millisecond):
		// Close is waiting for the writer, as it should (when it did not,
		// it returned within a millisecond); let the writer finish.
		close(g.release)
		<-closed
	}
}

// TestRollRequestSurvivesEmptyTake checks that a log roll asked for while
// the persister has nothing queued is not lost: the next batch must start
// a new log file, as each snapshot needs (ZooKeeper rolls the log with
// every snapshot, and purging works file by file). take used to clear the
// roll flag even when it returned no txns, and a stale wake-up made that
// common under load (verify/compat/migrate saw 7 snapshots over 3 log files).
func TestRollRequestSurvivesEmptyTake(t *testing.T) {
	p := (&Server{}).newPersister(nil)
	p.requestRoll()
	if _, _, ok, _ := p.take(); ok {
		t.Fatal("take returned a batch from an empty queue")
	}
	p.submitTxns([]*txn.Txn{{
		Header: txn.Header{ClientID: 1, Zxid: 1, Type: zkproto.OpCreateSession},
		Record: &txn.CreateSession{TimeoutMs: 30000},
	}})
	if b, roll, ok, _ := p.take(); !ok || len(b.txns) != 1 || !roll {
		t.Fatalf("the first batch after a roll request: %d txns, roll %v; want 1 txn and a roll", len(b.txns), roll)
	}
}

// slowLoadFS is a disk slow to give back a large data directory, on the
// server's clock: each Open of a file moves clock ahead by delay, as if
// reading it had taken that long. The clock stands still otherwise, so
// what the test reads off it does not depend on how fast the machine runs.
type slowLoadFS struct {
	vfs.FS
	clock *testClock
	delay time.Duration
}

func (f *slowLoadFS) Open(name string) (vfs.File, error) {
	f.clock.set(func(c *testClock) { c.leap += f.delay })
	return f.FS.Open(name)
}

// TestLoadTimeDoesNotCountAgainstSessions: sessions restored from disk get
// a full timeout from the moment the server serves, however long loading
// took; otherwise a slow start expires every session (and deletes its
// ephemerals) before any client could reconnect. Apache ZooKeeper starts
// its session tracker after the load. The restarted server runs on a
// clock that moves only while it loads (slowLoadFS), so the session's
// expiry is compared with the moment serving began, exactly, whatever
// the machine's speed.
func TestLoadTimeDoesNotCountAgainstSessions(t *testing.T) {
	mem := vfs.NewMem()
	fast := func(c *Config) { c.Core.TickMs, c.Core.MinSessionTimeoutMs, c.Core.MaxSessionTimeoutMs = 50, 100, 1000 }
	s := mustStartDurable(t, durableConfig(mem, fast))
	c := zkOpen(t, s)
	mustCreate(t, c, "/eph", nil, zk.FlagEphemeral, openACL)
	var timeout int64
	s.Inspect(func(core *zkcore.Server) { timeout = int64(core.Sessions().All()[0].TimeoutMs) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c.Close() // too late to end the session: the server is gone

	clock := newTestClock(0)
	slow := &slowLoadFS{FS: mem, clock: clock, delay: time.Duration(timeout+200) * time.Millisecond}
	s2 := mustStartDurable(t, durableConfig(slow, fast, func(c *Config) { c.Clock = clock.read }))
	var left, loadMs int64
	var sessions int
	s2.Inspect(func(core *zkcore.Server) {
		next, _ := core.Sessions().NextExpiryMs()
		now := s2.now().MonoMs
		left, loadMs, sessions = next-now, now, core.Sessions().Len()
	})
	if loadMs <= timeout {
		t.Fatalf("the load took %d ms on the server's clock; the test needs more than the session timeout (%d ms)", loadMs, timeout)
	}
	if sessions != 1 || left < timeout {
		t.Fatalf("after a load of %d ms, longer than the session timeout (%d ms): %d sessions, next expiry in %d ms; want 1 session with its full timeout left",
			loadMs, timeout, sessions, left)
	}
}

// TestAbortedSnapshotLetsServingGoOn aborts a snapshot walk in progress,
// as a member does before a TRUNC or SNAP replaces its state: the writer
// reports back and leaves no file, the loop keeps serving writes, and the
// next snapshot is taken as usual. (Aborting used to happen only at
// shutdown: the loop would have gone on stepping the aborted walk into a
// closed channel, and never learned that the job had ended.)
func TestAbortedSnapshotLetsServingGoOn(t *testing.T) {
	mem := vfs.NewMem()
	s := mustStartDurable(t, durableConfig(mem, func(c *Config) {
		c.Storage.SnapCount = 200
		c.Storage.SnapshotStepNodes = 1
	}))
	admin := zkOpen(t, s)
	writeSequentially(t, admin, "pre", 300)
	var aborted zxid.ID
	round := 0
	eventually(t, waitTimeout, func() bool {
		var job *snapshotJob
		s.Inspect(func(*zkcore.Server) {
			if job = s.snapshot; job != nil && !job.walked.Load() {
				s.abortSnapshot()
				s.abortSnapshot() // twice is harmless
			} else {
				job = nil
			}
		})
		if job == nil {
			round++
			writeSequentially(t, admin, fmt.Sprintf("more%d", round), 5)
			return false
		}
		waitSnapshotIdle(t, s)
		// A walker goroutine may complete the walk before it sees the
		// abort; that job is written, as a complete walk should be. Try
		// the next one.
		if job.aborted.Load() {
			aborted = job.zxid
		}
		return aborted != 0
	}, "a snapshot walk in progress")
	waitSnapshotIdle(t, s)
	for _, info := range snapshots(t, mem) {
		if z, _, _ := snap.ParseName(info.Name); z == aborted {
			t.Fatalf("the aborted snapshot at %s was written: %s", aborted, info.Name)
		}
	}
	before := len(snapshots(t, mem))
	writeSequentially(t, admin, "after", 400)
	eventually(t, waitTimeout, func() bool { return len(snapshots(t, mem)) > before }, "a snapshot after the aborted one")
	waitSnapshotIdle(t, s)
	names, err := mem.List(durableSnapDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".nodes.tmp") {
			t.Fatalf("staging file %s left behind", n)
		}
	}
}

// TestRelaxGCRestores: loads turn the collector off under a memory limit,
// and overlapping loads give the settings back only when the last ends.
func TestRelaxGCRestores(t *testing.T) {
	gcPercent := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	origPercent, origLimit := debug.SetGCPercent(123), debug.SetMemoryLimit(1<<40)
	defer func() { debug.SetGCPercent(origPercent); debug.SetMemoryLimit(origLimit) }()

	end1 := relaxGC(64 << 20)
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != -1 || l >= 1<<40 {
		t.Fatalf("during a load: GOGC %d, memory limit %d; want off under a limit", p, l)
	}
	end2 := relaxGC(64 << 20)
	end1()
	if p := gcPercent(); p != -1 {
		t.Fatalf("one of two loads ended: GOGC %d, want still off", p)
	}
	end2()
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != 123 || l != 1<<40 {
		t.Fatalf("after the loads: GOGC %d, memory limit %d; want 123 and %d", p, l, int64(1<<40))
	}
}
