package migrate

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"keeper/coordination/server"
	"keeper/coordination/snap"
	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
	"keeper/verify/compat/zkreal"
)

var seedFlag = flag.Uint64("seed", 0, "replay the workload of this seed")

// workloadRand returns the workload's random source and logs its seed.
func workloadRand(t *testing.T) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed=%d (replay: go test ./verify/compat/migrate -run %s -seed=%d)", seed, t.Name(), seed)
	return rand.New(rand.NewPCG(seed, 0x316))
}

// zkOptions configures Apache ZooKeeper for these tests: TTL nodes, the
// super user, and a snapshot (with a new log file) every ~1000 txns.
func zkOptions(extra map[string]string) zkreal.Options {
	cfg := map[string]string{"snapCount": "1000"} // becomes -Dzookeeper.snapCount
	for k, v := range extra {
		cfg[k] = v
	}
	return zkreal.Options{ExtendedTypes: true, SuperDigest: superDigest(), ExtraConfig: cfg}
}

// logBuffer collects keeper's logs. Safe for concurrent use.
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

// startKeeper runs an in-process keeper server on dataDir.
func startKeeper(t *testing.T, dataDir string, logs io.Writer, mutate ...func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.Config{
		ClientAddr:          "127.0.0.1:0",
		Core:                zkcore.DefaultConfig(),
		FourLetterWhitelist: []string{"*"},
		Storage:             server.StorageConfig{DataDir: dataDir},
		Logger:              slog.New(slog.NewTextHandler(logs, nil)),
	}
	cfg.Core.ExtendedTypes = true
	cfg.Core.SuperDigest = superDigest()
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("keeper does not start on %s: %v", dataDir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// files lists a data directory's snapshots and log files.
func files(t *testing.T, dataDir string) ([]snap.Info, []txnlog.File) {
	t.Helper()
	infos, err := snap.List(vfs.Default, filepath.Join(dataDir, txnlog.DirName))
	if err != nil {
		t.Fatal(err)
	}
	logs, err := txnlog.Files(vfs.Default, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return infos, logs
}

// zkLastZxid reads the last zxid from ZooKeeper's srvr.
func zkLastZxid(t *testing.T, s *zkreal.Server) zxid.ID {
	t.Helper()
	out, err := s.FourLetter("srvr")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^Zxid: 0x([0-9a-f]+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("srvr has no Zxid line:\n%s", out)
	}
	v, _ := strconv.ParseUint(m[1], 16, 64)
	return zxid.ID(v)
}

// lastLogged reads the whole log and returns the zxid of its last txn and
// its last txn digest (ZooKeeper writes one with every txn but error
// txns) with that txn's zxid; found is false if there is no digest.
func lastLogged(t *testing.T, dataDir string) (last, digestZxid zxid.ID, digest int64, found bool) {
	t.Helper()
	eachLogged(t, dataDir, func(tx *txn.Txn) {
		last = tx.Header.Zxid
		if tx.Digest != nil && tx.Digest.Version == txn.DigestVersion {
			digestZxid, digest, found = tx.Header.Zxid, tx.Digest.TreeDigest, true
		}
	})
	return last, digestZxid, digest, found
}

// eachLogged calls fn with every txn of dataDir's log, in order, up to its
// end or a torn tail.
func eachLogged(t *testing.T, dataDir string, fn func(*txn.Txn)) {
	t.Helper()
	it, err := txnlog.Read(vfs.Default, dataDir, 0, txnlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for {
		tx, err := it.Next()
		if errors.Is(err, io.EOF) || errors.Is(err, txnlog.ErrTorn) {
			return
		}
		if err != nil {
			t.Fatalf("reading the log of %s: %v", dataDir, err)
		}
		fn(tx)
	}
}

// TestKeeperStartsOnZooKeeperData has Apache ZooKeeper write a data
// directory (thousands of znodes of every kind, several log files and
// snapshots, sessions left open with their ephemerals), kills it, starts
// keeper on that directory, and compares the whole tree keeper serves with
// the one ZooKeeper served.
func TestKeeperStartsOnZooKeeperData(t *testing.T) {
	rng := workloadRand(t)
	zs := zkreal.Start(t, zkOptions(nil))
	open := populate(t, zs.Addr(), rng)
	defer closeAll(open)
	want := readTree(t, zs.Addr())
	wantZxid := zkLastZxid(t, zs)
	// The kill below tears a snapshot ZooKeeper is still writing, and
	// ZooKeeper's own recovery skips such a file too. Let the last one
	// finish, so that every snapshot but a rare late one is compared.
	waitSnapshotsTaken(t, zs)
	zs.Stop()
	dataDir := zs.DataDir()
	snaps, logs := files(t, dataDir)
	t.Logf("ZooKeeper served %s up to zxid %v; it left %d snapshots and %d log files", summarize(want), wantZxid, len(snaps), len(logs))
	if len(snaps) < 2 || len(logs) < 2 {
		t.Fatalf("the workload should leave several snapshots and log files: %v %v", snaps, logs)
	}
	zkLog, err := os.ReadFile(zs.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	torn := unfinishedSnapshots(string(zkLog))
	if len(torn) > 0 {
		t.Logf("ZooKeeper was killed while writing %v: not compared", torn)
	}

	t.Run("snap.Read accepts every ZooKeeper snapshot", func(t *testing.T) {
		checkZooKeeperSnapshots(t, dataDir, snaps, torn)
	})

	var logBuf logBuffer
	ks := startKeeper(t, dataDir, &logBuf)
	var lastZxid zxid.ID
	var digest int64
	ks.Inspect(func(core *zkcore.Server) { lastZxid, digest = core.LastZxid(), core.Tree().Digest() })
	t.Logf("keeper's recovery (%d bytes of log):\n%s", len(logBuf.String()), logBuf.String())
	// ZooKeeper may log txns after srvr answered and before it stopped
	// (the closeSession of the client that read the tree), so keeper must
	// resume at the last txn ZooKeeper logged, which is at least there.
	logged, z, d, haveDigest := lastLogged(t, dataDir)
	switch {
	case logged < wantZxid:
		t.Errorf("ZooKeeper's log ends at %v, before the zxid %v it served", logged, wantZxid)
	case lastZxid != logged:
		t.Errorf("keeper resumes at zxid %v; ZooKeeper served %v and logged up to %v", lastZxid, wantZxid, logged)
	}
	var skipped []string
	for _, line := range strings.Split(grepLines(logBuf.String(), "skipped unusable snapshot"), "\n") {
		if line != "" && !slices.ContainsFunc(torn, func(name string) bool { return strings.Contains(line, "file="+name+" ") }) {
			skipped = append(skipped, line)
		}
	}
	if len(skipped) > 0 {
		t.Errorf("keeper's recovery skipped a snapshot ZooKeeper wrote intact (see the subtest above):\n%s", strings.Join(skipped, "\n"))
	}
	if !haveDigest {
		t.Errorf("ZooKeeper's log holds no txn digest")
	} else if z != lastZxid {
		t.Logf("the last txn digest in ZooKeeper's log is at %v, before the last zxid %v: not compared", z, lastZxid)
	} else if d != digest {
		t.Errorf("ZooKeeper's last txn %v recorded tree digest %d; keeper's tree after recovery has %d", z, d, digest)
	} else {
		t.Logf("keeper's tree digest after recovery, %d, equals the one ZooKeeper logged with txn %v", digest, z)
	}
	got := readTree(t, ks.Addr().String())
	if d := diffTrees(want, got); len(d) > 0 {
		t.Errorf("keeper serves a different tree than ZooKeeper did: %d nodes differ, e.g.\n%s", len(d), strings.Join(d[:min(20, len(d))], "\n"))
	}
	checkQuotaStats(t, "ZooKeeper", want)
	checkQuotaStats(t, "keeper", got)

	// keeper goes on writing to ZooKeeper's directory, and starts on it again.
	c := dial(t, ks.Addr().String())
	if _, err := c.Create("/after-migration", []byte("k"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	c.Close()
	ks.Close()
	ks = startKeeper(t, dataDir, io.Discard)
	c = dial(t, ks.Addr().String())
	defer c.Close()
	if data, _, err := c.Get("/after-migration"); err != nil || string(data) != "k" {
		t.Fatalf("after a second restart: %q %v", data, err)
	}
}

// checkZooKeeperSnapshots reads each snapshot ZooKeeper wrote with
// snap.Read, as keeper's recovery does, except the torn ones that
// ZooKeeper was still writing when it was killed.
func checkZooKeeperSnapshots(t *testing.T, dataDir string, snaps []snap.Info, torn []string) {
	for _, info := range snaps {
		if slices.Contains(torn, info.Name) {
			continue
		}
		path := filepath.Join(dataDir, txnlog.DirName, info.Name)
		sn, err := snap.Read(vfs.Default, path, 0)
		if err == nil {
			continue
		}
		detail := ""
		if sn != nil && sn.Digest != nil {
			detail = fmt.Sprintf(" (digest record: zxid %v, digest %d; the stored tree's digest is %d)",
				sn.Digest.Zxid, sn.Digest.TreeDigest, sn.Tree.Digest())
		}
		t.Errorf("%s: %v%s", info.Name, err, detail)
	}
}

// ZooKeeper logs "Snapshotting: 0x<zxid> to <path>" when it starts a
// snapshot, from the thread that writes it (main at start-up, then
// "Snapshot Thread"), and that thread logs nothing else until the file is
// written and closed ("Snapshot taken in <n> ms" on the snapshot thread).
var (
	zkLogThread      = regexp.MustCompile(`^\S+ \[([^\]]+)\]`)
	snapshottingLine = regexp.MustCompile(`Snapshotting: 0x[0-9a-f]+ to .*/(snapshot\.[0-9a-f]+)`)
)

// unfinishedSnapshots returns the names of the snapshots a ZooKeeper log
// shows started, with no later line from the thread writing them.
func unfinishedSnapshots(log string) []string {
	pending := map[string]string{} // thread -> snapshot
	for _, line := range strings.Split(log, "\n") {
		th := zkLogThread.FindStringSubmatch(line)
		if th == nil {
			continue
		}
		delete(pending, th[1])
		if m := snapshottingLine.FindStringSubmatch(line); m != nil {
			pending[th[1]] = m[1]
		}
	}
	return slices.Sorted(maps.Values(pending))
}

// waitSnapshotsTaken polls ZooKeeper's log until no snapshot is being
// written.
func waitSnapshotsTaken(t *testing.T, zs *zkreal.Server) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pending := unfinishedSnapshots(zs.LogTail(1 << 22))
		if len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("ZooKeeper is still writing %v after 30 s", pending)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// complaints returns the lines of a ZooKeeper log, from where it starts
// reading the data directory on, that report trouble: errors, digest
// mismatches and exceptions, except clients going away and the replays
// that fuzzy reports benign. (Before that, zkreal's start-up probe can make
// ZooKeeper log exceptions that have nothing to do with the data.)
func complaints(log string, fuzzy func(line string) bool) string {
	if i := strings.Index(log, "Reading snapshot"); i >= 0 {
		log = log[i:]
	}
	var out []string
	for _, line := range strings.Split(log, "\n") {
		bad := strings.Contains(line, "ERROR") || strings.Contains(line, "igest mismatch") ||
			strings.Contains(line, "Exception") || strings.Contains(line, "CRC")
		benign := strings.Contains(line, "EndOfStreamException") || strings.Contains(line, "ZooKeeperServer not running") ||
			fuzzy(line)
		if bad && !benign {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

var (
	readingSnapshot = regexp.MustCompile(`Reading snapshot .*snapshot\.([0-9a-f]+)`)
	snapshotDigest  = regexp.MustCompile(`digest in the snapshot has digest version of \d+, with zxid as 0x([0-9a-f]+)`)
	ephemeralGone   = regexp.MustCompile(`Ignoring NoNodeException for path \S+ while removing ephemeral for dead session 0x([0-9a-f]+)`)
)

// fuzzyCloses returns what complaints takes for benign among the lines of
// a ZooKeeper log that loaded dataDir: that a closeSession replayed on top
// of the snapshot found one of its session's ephemerals gone, when keeper
// logged that close inside the snapshot's walk (after the zxid the snapshot
// is named for, up to the zxid its digest was taken at). A snapshot is
// fuzzy: the walk may already have seen the close's deletions, and
// ZooKeeper, replaying the close, warns and goes on, as it does over its
// own snapshots; the tree and its digest are checked on their own.
func fuzzyCloses(t *testing.T, dataDir, zkLog string) func(line string) bool {
	t.Helper()
	m1, m2 := readingSnapshot.FindStringSubmatch(zkLog), snapshotDigest.FindStringSubmatch(zkLog)
	if m1 == nil || m2 == nil {
		return func(string) bool { return false }
	}
	from, _ := strconv.ParseUint(m1[1], 16, 64)
	to, _ := strconv.ParseUint(m2[1], 16, 64)
	closed := map[uint64]bool{}
	eachLogged(t, dataDir, func(tx *txn.Txn) {
		if z := uint64(tx.Header.Zxid); tx.Header.Type == zkproto.OpCloseSession && z > from && z <= to {
			closed[uint64(tx.Header.ClientID)] = true
		}
	})
	return func(line string) bool {
		m := ephemeralGone.FindStringSubmatch(line)
		if m == nil {
			return false
		}
		session, _ := strconv.ParseUint(m[1], 16, 64)
		return closed[session]
	}
}

// grepLines returns the lines of text that contain any of the words.
func grepLines(text string, words ...string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestZooKeeperStartsOnKeeperData is the reverse: keeper writes a data
// directory (several log files and snapshots, sessions left open with
// their ephemerals), stops, and Apache ZooKeeper starts on it and must
// serve the tree keeper served.
func TestZooKeeperStartsOnKeeperData(t *testing.T) {
	if err := zkreal.Available(); err != nil && os.Getenv(zkreal.RequireEnv) == "" {
		t.Skipf("zkreal: %v", err)
	}
	rng := workloadRand(t)
	dataDir := t.TempDir()
	ks := startKeeper(t, dataDir, io.Discard, func(c *server.Config) {
		c.Storage.SnapCount = 1000
		c.Storage.PreAllocSizeBytes = 1 << 20
	})
	open := populate(t, ks.Addr().String(), rng)
	defer closeAll(open)
	want := readTree(t, ks.Addr().String())
	var wantZxid zxid.ID
	var keeperDigest int64
	ks.Inspect(func(core *zkcore.Server) { wantZxid, keeperDigest = core.LastZxid(), core.Tree().Digest() })
	if err := ks.Close(); err != nil {
		t.Fatal(err)
	}
	snaps, logs := files(t, dataDir)
	t.Logf("keeper served %s up to zxid %v; it left %d snapshots and %d log files", summarize(want), wantZxid, len(snaps), len(logs))
	if len(snaps) < 2 || len(logs) < 2 {
		t.Fatalf("the workload should leave several snapshots and log files: %v %v", snaps, logs)
	}

	wantDigest := keeperDigest

	zs := zkreal.Start(t, zkOptions(map[string]string{"dataDir": dataDir}))
	zkLog := zs.LogTail(1 << 20)
	m := regexp.MustCompile(`highest zxid is 0x([0-9a-f]+), digest is (-?\d+)`).FindStringSubmatch(zkLog)
	if m == nil {
		t.Fatalf("ZooKeeper did not log what it loaded:\n%s", grepLines(zkLog, "snapshot", "Snapshot", "txns"))
	}
	loadedZxid, _ := strconv.ParseUint(m[1], 16, 64)
	loadedDigest, _ := strconv.ParseInt(m[2], 10, 64)
	t.Logf("ZooKeeper loaded keeper's data:\n%s", grepLines(zkLog, "Reading snapshot", "digest", "txns loaded"))
	if zxid.ID(loadedZxid) != wantZxid || loadedDigest != wantDigest {
		t.Errorf("ZooKeeper loaded up to zxid %#x with tree digest %d; keeper was at %v with digest %d",
			loadedZxid, loadedDigest, wantZxid, wantDigest)
	}
	got := readTree(t, zs.Addr())
	if d := diffTrees(want, got); len(d) > 0 {
		t.Errorf("ZooKeeper serves a different tree than keeper did: %d nodes differ, e.g.\n%s", len(d), strings.Join(d[:min(20, len(d))], "\n"))
	}
	checkQuotaStats(t, "keeper", want)
	checkQuotaStats(t, "ZooKeeper", got)
	// ZooKeeper logs digest mismatches and unreadable records without
	// failing to start; any such line is an incompatibility.
	if bad := complaints(zs.LogTail(1<<20), fuzzyCloses(t, dataDir, zkLog)); bad != "" {
		t.Errorf("ZooKeeper complained while loading keeper's data directory:\n%s", bad)
	}
	c := dial(t, zs.Addr())
	defer c.Close()
	if _, err := c.Create("/after-migration", []byte("z"), 0, openACL); err != nil {
		t.Fatalf("ZooKeeper cannot write after loading keeper's data: %v", err)
	}
}

// TestFuzzyCloses: a dead session's missing ephemeral is benign only when
// keeper logged the session's close inside the walk of the snapshot
// ZooKeeper loaded (the log of a CI run whose snapshot walk saw a close).
func TestFuzzyCloses(t *testing.T) {
	dir := t.TempDir()
	l, err := txnlog.Open(vfs.Default, dir, txnlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	logged := []struct {
		zxid    zxid.ID
		session int64
		op      zkproto.Op
	}{
		{0x1244, 3, zkproto.OpCloseSession}, // the snapshot's own zxid: before the walk
		{0x1248, 4, zkproto.OpCloseSession}, // inside the walk
		{0x1249, 6, zkproto.OpDelete},       // not a close
		{0x1251, 5, zkproto.OpCloseSession}, // after the walk
	}
	for _, x := range logged {
		tx := &txn.Txn{Header: txn.Header{ClientID: x.session, Zxid: x.zxid, Type: x.op}, Record: &txn.Delete{Path: "/x"}}
		if x.op == zkproto.OpCloseSession {
			tx.Record = &txn.CloseSession{Paths: []string{"/eph/gone-0"}}
		}
		if err := l.Append(tx); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	gone := func(session int) string {
		return fmt.Sprintf("17:41:59.954 [main] WARN org.apache.zookeeper.server.DataTree - Ignoring NoNodeException for path /eph/gone-0 while removing ephemeral for dead session 0x%x", session)
	}
	zkLog := strings.Join([]string{
		"17:41:59.136 [main] INFO org.apache.zookeeper.server.persistence.FileSnap - Reading snapshot /tmp/x/version-2/snapshot.1244",
		"17:41:59.681 [main] INFO org.apache.zookeeper.server.DataTree - The digest in the snapshot has digest version of 2, with zxid as 0x1250, and digest value as 7040561764830",
		gone(3), gone(4), gone(5), gone(6),
		"17:42:00.371 [main] ERROR org.apache.zookeeper.server.ZKDatabase - something else",
	}, "\n")
	got := complaints(zkLog, fuzzyCloses(t, dir, zkLog))
	want := strings.Join([]string{gone(3), gone(5), gone(6), "17:42:00.371 [main] ERROR org.apache.zookeeper.server.ZKDatabase - something else"}, "\n")
	if got != want {
		t.Fatalf("complaints:\n%s\nwant:\n%s", got, want)
	}
	if got := complaints(gone(4), fuzzyCloses(t, dir, gone(4))); got != gone(4) {
		t.Fatalf("without the snapshot's lines the missing ephemeral must stay a complaint: %q", got)
	}
}

func TestUnfinishedSnapshots(t *testing.T) {
	const (
		start   = "22:00:57.551 [main] INFO o.a.z.s.p.FileTxnSnapLog - Snapshotting: 0x0 to /d/version-2/snapshot.0"
		mainOn  = "22:00:57.602 [main] INFO o.a.z.s.ContainerManager - Using checkIntervalMs=60000"
		snap338 = "22:00:59.164 [Snapshot Thread] INFO o.a.z.s.p.FileTxnSnapLog - Snapshotting: 0x338 to /d/version-2/snapshot.338"
		taken   = "22:00:59.196 [Snapshot Thread] INFO o.a.z.s.ZooKeeperServer - Snapshot taken in 33 ms"
		snap52c = "22:00:59.773 [Snapshot Thread] INFO o.a.z.s.p.FileTxnSnapLog - Snapshotting: 0x52c to /d/version-2/snapshot.52c"
		other   = "22:00:59.775 [SyncThread:0] INFO o.a.z.s.p.FileTxnLog - Creating new log file: log.52f"
		trace   = "\tat java.base/java.lang.Thread.run(Thread.java:840)"
	)
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string
	}{
		{"empty", nil, nil},
		{"start-up snapshot, then main goes on", []string{start, mainOn}, nil},
		{"start-up snapshot killed", []string{start}, []string{"snapshot.0"}},
		{"all taken", []string{start, mainOn, snap338, taken}, nil},
		{"other threads do not finish it", []string{start, mainOn, snap338, taken, snap52c, other, trace}, []string{"snapshot.52c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unfinishedSnapshots(strings.Join(tc.lines, "\n")); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
