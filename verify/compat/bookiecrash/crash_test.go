package bookiecrash

import (
	"context"
	"errors"
	"flag"
	"fmt"
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

	"keeper/coordination/server"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkcore"
	"keeper/ledgerstore/bookierpc"

	"keeper/internal/keeperbin"
	"keeper/internal/testhost"
)

var (
	seedFlag   = flag.Uint64("seed", 0, "replay the crash schedule of this seed")
	roundsFlag = flag.Int("rounds", 0, "number of crash rounds (default 20, 12 under -race, 3 with -short)")
)

// Workload shape: each round writes to ledgersPerRound new ledgers, each
// keeping inflight adds outstanding, for minRun to maxRun before the kill.
// Checkpoints (flushInterval), journal rolls (1 MB files), entry log rolls
// and GC all run several times a round, so that a kill lands in each of
// them sooner or later.
const (
	ledgersPerRound = 8
	inflight        = 8
	minRun          = 300 * time.Millisecond
	maxRun          = 1500 * time.Millisecond
	sampleOld       = 2000 // entries of earlier rounds re-read after each restart
)

// TestBookieCrash runs `keeper bookie` as a child process against an
// in-process metadata server, has clients add entries to many ledgers
// (fencing one ledger and writing explicit LACs along the way), kills it
// with SIGKILL at a seeded random moment, checks its files with
// `keeper tool`, restarts it, and checks that every acknowledged add
// reads back with the right payload and digest, every acknowledged fence
// still refuses normal adds, and every acknowledged explicit LAC is still
// there.
func TestBookieCrash(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed=%d (replay: go test ./verify/compat/bookiecrash -run TestBookieCrash -seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0xb00c))
	rounds := defaultRounds
	if testing.Short() {
		rounds = 3
	}
	if *roundsFlag > 0 {
		rounds = *roundsFlag
	}

	// A chaos build that loses un-synced bytes on the kill, as a power
	// loss would (internal/vfs/lazyfs): restarts then meet torn tails.
	bin, err := keeperbin.Build(t.TempDir(), "", "chaos")
	if err != nil {
		t.Fatal(err)
	}
	meta := startMetadataServer(t)
	zc := connectZK(t, meta.Addr().String())
	root := t.TempDir()
	port := testhost.Port(t)
	cfgPath := writeConfig(t, root, port, meta.Addr().String())
	id := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	m := newModel()
	var owner int64
	lost, repaired := 0, 0
	for round := 0; round <= rounds; round++ {
		p := startBookie(t, bin, cfgPath, root, round, port)
		owner = p.waitRegistered(t, zc, id, owner)
		for _, msg := range []string{"cutting torn tail", "removing entry log with a torn header",
			"lazyfs: rolled back syncs a kill interrupted"} {
			repaired += strings.Count(p.logTail(), msg)
		}
		c := p.client(t)
		full := round == rounds
		if n := verify(t, c, m, rng, full); n > 0 {
			lost += n
			t.Errorf("round %d: %d acknowledged updates lost after the restart\n%s", round, n, p.logTail())
		}
		if full {
			c.Close()
			p.kill()
			break
		}
		run := minRun + time.Duration(rng.Int64N(int64(maxRun-minRun)))
		before := m.ackCount()
		w := startWriters(t, c, zc, m, round, rng)
		time.AfterFunc(run, p.kill)
		<-p.exited
		w.wait()
		c.Close()
		t.Logf("round %d: killed after %v; %d adds acknowledged (%d in all), %d fences, %d explicit LACs",
			round, run.Round(time.Millisecond), m.ackCount()-before, m.ackCount(), m.fenceCount(), m.lacCount())
		checkFiles(t, bin, root)
	}
	t.Logf("bookiecrash: rounds=%d acked=%d lost=%d torn-tails-repaired-or-syncs-undone=%d", rounds, m.ackCount(), lost,
		repaired)
	if lost > 0 {
		t.Fatalf("replay: go test ./verify/compat/bookiecrash -run TestBookieCrash -seed=%d", seed)
	}
}

// ---------------------------------------------------------------------------
// The processes.

// startMetadataServer runs an in-memory keeper coordination server whose
// short tick lets the killed bookie's session expire within a second.
func startMetadataServer(t *testing.T) *server.Server {
	t.Helper()
	core := zkcore.DefaultConfig()
	core.TickMs = 50
	core.MinSessionTimeoutMs = 100
	s, err := server.New(server.Config{ClientAddr: "127.0.0.1:0", Core: core})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// connectZK opens the test's own session, to watch the bookie register
// and to write ledger znodes.
func connectZK(t *testing.T, addr string) *zkclient.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := zkclient.OpenSession(ctx, []string{addr}, zkclient.SessionOptions{
		Options: zkclient.Options{SessionTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// writeConfig writes the bookie's bookkeeper.conf: small journal files
// and entry logs, a small write cache and frequent checkpoints and GC, so
// that every mechanism runs many times per round.
func writeConfig(t *testing.T, root string, port int, zkAddr string) string {
	t.Helper()
	conf := fmt.Sprintf(`# bookiecrash
bookiePort=%d
bookieId=127.0.0.1:%d
advertisedAddress=127.0.0.1
journalDirectories=%s
ledgerDirectories=%s,%s
zkServers=%s
zkTimeout=1000
flushInterval=250
journalMaxSizeMB=1
journalPreAllocSizeMB=1
journalMaxBackups=0
logSizeLimit=1048576
dbStorage_writeCacheMaxSizeMb=4
gcWaitTime=700
minorCompactionInterval=2
majorCompactionInterval=3
`, port, port, filepath.Join(root, "journal"), filepath.Join(root, "ledgers1"), filepath.Join(root, "ledgers2"), zkAddr)
	path := filepath.Join(root, "bookkeeper.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// bookieProc is one run of `keeper bookie`.
type bookieProc struct {
	addr    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	once    sync.Once
}

func startBookie(t *testing.T, bin, cfgPath, root string, round, port int) *bookieProc {
	t.Helper()
	p := &bookieProc{
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		logPath: filepath.Join(root, fmt.Sprintf("bookie-%02d.log", round)),
		exited:  make(chan struct{}),
	}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "bookie", cfgPath, "--listen-host", "127.0.0.1")
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
	return p
}

// kill sends SIGKILL and waits for the process to be reaped.
func (p *bookieProc) kill() {
	p.once.Do(func() { _ = p.cmd.Process.Kill() })
	<-p.exited
}

func (p *bookieProc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// waitRegistered waits until the bookie's registration znode exists and
// belongs to a session other than prevOwner (the killed process's, which
// the new process waits out). The bookie registers only after it has
// replayed its journal and started serving. It returns the new owner.
func (p *bookieProc) waitRegistered(t *testing.T, zc *zkclient.Session, id string, prevOwner int64) int64 {
	t.Helper()
	path := "/ledgers/available/" + id
	deadline := time.NewTimer(testhost.Scale(60 * time.Second))
	defer deadline.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		stat, ok, ch, err := zc.ExistsW(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if ok && stat.EphemeralOwner != prevOwner {
			return stat.EphemeralOwner
		}
		select {
		case <-ch:
		case <-p.exited:
			t.Fatalf("bookie exited before registering:\n%s", p.logTail())
		case <-deadline.C:
			t.Fatalf("bookie did not register within 60s:\n%s", p.logTail())
		}
	}
}

func (p *bookieProc) client(t *testing.T) *bookierpc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := bookierpc.Dial(ctx, p.addr)
	if err != nil {
		t.Fatalf("dial: %v\n%s", err, p.logTail())
	}
	return c
}

// checkFiles runs the offline tools over the crashed bookie's files: a
// torn tail is normal, any other damage is not.
func checkFiles(t *testing.T, bin, root string) {
	t.Helper()
	runs := [][]string{
		{"tool", "journal", "dump", filepath.Join(root, "journal"), "--ledger-dirs",
			filepath.Join(root, "ledgers1") + "," + filepath.Join(root, "ledgers2")},
		{"tool", "entrylog", "dump", "--headers", filepath.Join(root, "ledgers1")},
		{"tool", "entrylog", "dump", "--headers", filepath.Join(root, "ledgers2")},
	}
	for _, args := range runs {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil && !(errors.As(err, new(*exec.ExitError)) && strings.Contains(string(out), "holds no")) {
			t.Fatalf("keeper %s: %v\n%s", strings.Join(args, " "), err, tail(string(out)))
		}
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}
