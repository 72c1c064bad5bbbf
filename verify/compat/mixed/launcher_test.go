package mixed

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"keeper/internal/keeperbin"
	"keeper/internal/testhost"
	"keeper/verify/compat/zkreal"
)

// keeperBin is the keeper binary TestMain builds for the whole run.
var keeperBin string

var binFlag = flag.String("keeper-bin", "", "run this keeper binary instead of building ./cmd/keeper")

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if *binFlag != "" {
		keeperBin = *binFlag
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "keeper-mixed-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	keeperBin, err = keeperbin.Build(dir, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Kind is the server a member runs.
type Kind int

// Kinds.
const (
	Keeper Kind = iota
	ZooKeeper
)

func (k Kind) String() string {
	if k == ZooKeeper {
		return "zookeeper"
	}
	return "keeper"
}

// Timing. A tick of 100 ms keeps elections short; syncLimit 20 (2 s)
// and initLimit 100 (10 s) leave room for a JVM's pauses on a busy
// 2-core machine.
const (
	tickMs              = 100
	initLimit           = 100
	syncLimit           = 20
	maxSessionTimeoutMs = 60000
	pollInterval        = 50 * time.Millisecond
)

// electTimeout bounds the wait for a leader and for members to serve.
var electTimeout = testhost.Scale(60 * time.Second)

// startTimeout bounds a member's start (a JVM takes a few seconds).
var startTimeout = testhost.Scale(60 * time.Second)

// Ensemble is a set of member processes on loopback, some keeper, some
// Apache ZooKeeper, sharing one zoo.cfg layout.
type Ensemble struct {
	t       testing.TB
	dir     string
	Members []*Member // Members[i] has id i+1
}

// Member is one server. Its ports, configuration and data survive
// restarts; its kind changes only through Switch, while it is stopped.
type Member struct {
	ID                   int
	Kind                 Kind
	ClientPort           int
	QuorumPort, ElecPort int
	Addr                 string
	Dir, DataDir         string
	// Extra are zoo.cfg lines of this member's own (TLS settings, say);
	// SetExtra rewrites the file.
	Extra []string
	// Observer makes the member an observer (MakeObservers).
	Observer bool

	mu   sync.Mutex
	proc *process
	runs []*process // every run, the current (or last) one at the end
}

type process struct {
	kind    Kind
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	checked int // bytes of the log checkAlive has read
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// NewEnsemble writes the configuration of one member per kind (ids from
// 1) and starts none of them. It skips the test (or fails it, with
// KEEPER_REQUIRE_ZK) when ZooKeeper is not installed. Every process is
// killed when the test ends; if it failed, the log tails are printed.
func NewEnsemble(t testing.TB, kinds ...Kind) *Ensemble {
	t.Helper()
	if err := zkreal.Available(); err != nil {
		// QuorumPeerCommand skips or fails the test the same way.
		zkreal.QuorumPeerCommand(t, "", zkreal.Options{})
		t.Fatalf("zkreal: %v", err)
	}
	e := &Ensemble{t: t, dir: t.TempDir()}
	// Outside the ephemeral range (testhost), so that outgoing connections
	// cannot occupy a killed member's ports before it restarts.
	ports := testhost.Ports(t, 3*len(kinds))
	for i, k := range kinds {
		m := &Member{ID: i + 1, Kind: k, ClientPort: ports[3*i], QuorumPort: ports[3*i+1], ElecPort: ports[3*i+2]}
		m.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(m.ClientPort))
		m.Dir = filepath.Join(e.dir, fmt.Sprintf("m%d-%s", m.ID, k))
		m.DataDir = filepath.Join(m.Dir, "data")
		e.Members = append(e.Members, m)
	}
	for _, m := range e.Members {
		if err := e.writeConfig(m); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range e.Members {
				t.Logf("---- member %d (%s, running=%v) %s ----\n%s", m.ID, m.Kind, m.Running(), m.LogPath(), m.LogTail(40))
			}
		}
		for _, m := range e.Members {
			m.kill()
		}
	})
	return e
}

// writeConfig writes m's zoo.cfg, which both servers read, and myid.
func (e *Ensemble) writeConfig(m *Member) error {
	if err := os.MkdirAll(m.DataDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(m.DataDir, "myid"), []byte(strconv.Itoa(m.ID)+"\n"), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", tickMs, initLimit, syncLimit)
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", m.DataDir, m.ClientPort)
	fmt.Fprintf(&b, "maxClientCnxns=0\nmaxSessionTimeout=%d\n", maxSessionTimeoutMs)
	b.WriteString("4lw.commands.whitelist=*\nadmin.enableServer=false\n")
	if m.Observer {
		b.WriteString("peerType=observer\n")
	}
	for _, p := range e.Members {
		role := ""
		if p.Observer {
			role = ":observer"
		}
		fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d%s\n", p.ID, p.QuorumPort, p.ElecPort, role)
	}
	for _, l := range m.Extra {
		b.WriteString(l + "\n")
	}
	return os.WriteFile(m.cfgPath(), []byte(b.String()), 0o644)
}

// MakeObservers makes ms observers, before any member starts: every
// member's zoo.cfg names them so.
func (e *Ensemble) MakeObservers(ms ...*Member) {
	e.t.Helper()
	for _, m := range ms {
		m.Observer = true
	}
	for _, m := range e.Members {
		if err := e.writeConfig(m); err != nil {
			e.t.Fatal(err)
		}
	}
}

// SetExtra gives m its own zoo.cfg lines from its next start on.
func (e *Ensemble) SetExtra(m *Member, lines ...string) {
	e.t.Helper()
	m.Extra = lines
	if err := e.writeConfig(m); err != nil {
		e.t.Fatal(err)
	}
}

func (m *Member) cfgPath() string { return filepath.Join(m.Dir, "zoo.cfg") }

// Member returns the member with id.
func (e *Ensemble) Member(id int) *Member { return e.Members[id-1] }

// Start starts m, which must not be running, and waits until its client
// port answers ruok.
func (e *Ensemble) Start(m *Member) {
	e.t.Helper()
	m.mu.Lock()
	if m.proc != nil && m.proc.running() {
		m.mu.Unlock()
		e.t.Fatalf("member %d is already running", m.ID)
	}
	p := &process{kind: m.Kind, logPath: filepath.Join(m.Dir, fmt.Sprintf("run%02d-%s.log", len(m.runs)+1, m.Kind)),
		exited: make(chan struct{})}
	m.runs = append(m.runs, p)
	logFile, err := os.Create(p.logPath)
	if err != nil {
		m.mu.Unlock()
		e.t.Fatal(err)
	}
	if m.Kind == ZooKeeper {
		p.cmd = zkreal.QuorumPeerCommand(e.t, m.cfgPath(), zkreal.Options{})
		p.cmd.Dir = m.Dir
	} else {
		p.cmd = exec.Command(keeperBin, "server", m.cfgPath())
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		m.mu.Unlock()
		logFile.Close()
		e.t.Fatalf("start member %d: %v", m.ID, err)
	}
	go func() {
		_ = p.cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	m.proc = p
	m.mu.Unlock()
	e.waitFor(startTimeout, fmt.Sprintf("member %d answers ruok", m.ID), func() (bool, string) {
		if !p.running() {
			e.t.Fatalf("member %d exited during start-up:\n%s", m.ID, m.LogTail(40))
		}
		reply, err := FourLetter(m.Addr, "ruok")
		return err == nil && reply == "imok", fmt.Sprintf("ruok: %q %v", reply, err)
	})
}

// Kill sends SIGKILL to m and waits until it is reaped.
func (e *Ensemble) Kill(m *Member) { m.kill() }

// Stop asks m to shut down as an operator does (SIGTERM, what zkServer.sh
// stop sends) and waits until it has exited; a member that has not exited
// within startTimeout fails the test.
func (e *Ensemble) Stop(m *Member) {
	e.t.Helper()
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil || !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(startTimeout):
		m.kill()
		e.t.Fatalf("member %d (%s) did not exit within %v of SIGTERM", m.ID, m.Kind, startTimeout)
	}
}

// Switch makes m, which must be stopped, run as kind from its next Start,
// with the same id, zoo.cfg and data directory: one step of a rolling
// migration.
func (e *Ensemble) Switch(m *Member, kind Kind) {
	e.t.Helper()
	if m.Running() {
		e.t.Fatalf("member %d: switch to %s while it runs", m.ID, kind)
	}
	m.Kind = kind
}

func (m *Member) kill() {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil {
		return
	}
	if p.running() {
		_ = p.cmd.Process.Kill()
	}
	<-p.exited
}

// Running reports whether m's process is alive.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc != nil && m.proc.running()
}

// LogPath returns the log of m's current (or last) run.
func (m *Member) LogPath() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return ""
	}
	return m.proc.logPath
}

// LogTail returns the last n lines of m's current (or last) run.
func (m *Member) LogTail(n int) string {
	b, _ := os.ReadFile(m.LogPath())
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// FourLetter sends a four-letter word to addr and reads the reply.
func FourLetter(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(c, 1<<20))
	return string(b), err
}

// Mode asks m for srvr and returns its Mode line: leader, follower,
// observer, or "" when it does not serve.
func (m *Member) Mode() string {
	reply, err := FourLetter(m.Addr, "srvr")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(reply, "\n") {
		if v, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// WaitServing waits until every running member serves under exactly one
// leader (observers as observers) and returns the leader.
func (e *Ensemble) WaitServing() *Member {
	e.t.Helper()
	var leader *Member
	e.waitFor(electTimeout, "every running member serving under one leader", func() (bool, string) {
		leader = nil
		leaders, ok := 0, true
		var desc []string
		for _, m := range e.Members {
			if !m.Running() {
				desc = append(desc, fmt.Sprintf("%d:down", m.ID))
				continue
			}
			mode := m.Mode()
			desc = append(desc, fmt.Sprintf("%d(%s):%q", m.ID, m.Kind, mode))
			switch mode {
			case "leader":
				leaders++
				leader = m
			case "follower":
				ok = ok && !m.Observer
			case "observer":
				ok = ok && m.Observer
			default:
				ok = false
			}
		}
		return ok && leaders == 1, strings.Join(desc, " ")
	})
	return leader
}

// waitFor polls cond until it holds, failing the test with cond's last
// description after timeout.
func (e *Ensemble) waitFor(timeout time.Duration, what string, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ok, desc := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("waiting for %s: not within %v; last: %s", what, timeout, desc)
		}
		<-tick.C
	}
}
