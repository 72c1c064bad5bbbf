package ensemble

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
)

// keeperBin is the keeper binary TestMain builds for the whole run.
var keeperBin string

var (
	binFlag      = flag.String("keeper-bin", "", "run this keeper binary instead of building ./cmd/keeper")
	logLevelFlag = flag.String("keeper-log-level", "info", "the servers' --log-level (debug shows every connection)")
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if *binFlag != "" {
		keeperBin = *binFlag
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "keeper-ensemble-bin-")
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

// Options shapes an ensemble. Zero fields take the defaults below.
type Options struct {
	Voters, Observers int
	// TickMs is tickTime; InitLimit and SyncLimit are in ticks.
	TickMs, InitLimit, SyncLimit int
	// SnapCount is zoo.cfg's snapCount (0: keeper's default).
	SnapCount int
	// Extra lines appended to every member's zoo.cfg.
	Extra []string
}

// Defaults: a tick of 100 ms keeps failovers short; syncLimit 10 (1 s)
// tolerates a busy 2-core machine without false leader losses, and
// initLimit 50 (5 s) leaves room for a SNAP of 100,000 nodes.
const (
	defaultTickMs    = 100
	defaultInitLimit = 50
	defaultSyncLimit = 10
	// maxSessionTimeoutMs lets clients keep the 10-30 s sessions they ask
	// for (the default maximum would be 20 ticks, 2 s).
	maxSessionTimeoutMs = 60000
	pollInterval        = 20 * time.Millisecond
)

// electTimeout bounds the wait for a leader and for members to serve.
var electTimeout = testhost.Scale(60 * time.Second)

// startTimeout bounds a member's start (recovery included).
var startTimeout = testhost.Scale(60 * time.Second)

func (o Options) withDefaults() Options {
	if o.Voters == 0 {
		o.Voters = 3
	}
	if o.TickMs == 0 {
		o.TickMs = defaultTickMs
	}
	if o.InitLimit == 0 {
		o.InitLimit = defaultInitLimit
	}
	if o.SyncLimit == 0 {
		o.SyncLimit = defaultSyncLimit
	}
	return o
}

// Ensemble is a set of keeper server processes on loopback.
type Ensemble struct {
	t       testing.TB
	dir     string
	opts    Options
	Members []*Member // Members[i] has id i+1; voters first, then observers
}

// Member is one server of the ensemble. Its ports and data survive
// restarts.
type Member struct {
	ID                   int
	Observer             bool
	ClientPort           int
	QuorumPort, ElecPort int
	Addr                 string // client address, 127.0.0.1:ClientPort
	Dir                  string // zoo.cfg and the logs of every run
	DataDir              string // dataDir; snapshots and logs in version-2

	mu   sync.Mutex
	proc *process // the current run, nil before the first start
	runs int
}

// process is one run of `keeper server`.
type process struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// NewEnsemble writes the configuration of every member, starts them all
// and waits until they serve with one leader. The processes are killed
// when the test ends; if it failed, every member's log tail is printed.
func NewEnsemble(t testing.TB, opts Options) *Ensemble {
	t.Helper()
	opts = opts.withDefaults()
	e := &Ensemble{t: t, dir: t.TempDir(), opts: opts}
	n := opts.Voters + opts.Observers
	// Outside the ephemeral range, so that the outgoing connections of
	// clients and members cannot occupy a killed member's ports before it
	// restarts.
	ports := testhost.Ports(t, 3*n)
	for i := range n {
		m := &Member{ID: i + 1, Observer: i >= opts.Voters,
			ClientPort: ports[3*i], QuorumPort: ports[3*i+1], ElecPort: ports[3*i+2]}
		m.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(m.ClientPort))
		m.Dir = filepath.Join(e.dir, fmt.Sprintf("m%d", m.ID))
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
			e.dumpLogs()
		}
		for _, m := range e.Members {
			m.kill()
		}
	})
	for _, m := range e.Members {
		e.Start(m)
	}
	e.WaitServing(electTimeout)
	return e
}

// writeConfig writes m's zoo.cfg and myid.
func (e *Ensemble) writeConfig(m *Member) error {
	if err := os.MkdirAll(m.DataDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(m.DataDir, "myid"), []byte(strconv.Itoa(m.ID)+"\n"), 0o644); err != nil {
		return err
	}
	o := e.opts
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", o.TickMs, o.InitLimit, o.SyncLimit)
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", m.DataDir, m.ClientPort)
	fmt.Fprintf(&b, "maxClientCnxns=0\nmaxSessionTimeout=%d\n", maxSessionTimeoutMs)
	b.WriteString("4lw.commands.whitelist=*\nadmin.enableServer=false\n")
	if o.SnapCount > 0 {
		fmt.Fprintf(&b, "snapCount=%d\n", o.SnapCount)
	}
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
	for _, l := range o.Extra {
		b.WriteString(l + "\n")
	}
	return os.WriteFile(m.cfgPath(), []byte(b.String()), 0o644)
}

func (m *Member) cfgPath() string { return filepath.Join(m.Dir, "zoo.cfg") }

// Addrs returns every member's client address, in id order.
func (e *Ensemble) Addrs() []string {
	var out []string
	for _, m := range e.Members {
		out = append(out, m.Addr)
	}
	return out
}

// Member returns the member with id.
func (e *Ensemble) Member(id int) *Member { return e.Members[id-1] }

// Start starts m, which must not be running, and waits until it answers
// ruok (keeper listens for clients once it has recovered its data).
func (e *Ensemble) Start(m *Member) {
	e.t.Helper()
	m.mu.Lock()
	if m.proc != nil && m.proc.running() {
		m.mu.Unlock()
		e.t.Fatalf("member %d is already running", m.ID)
	}
	m.runs++
	p := &process{logPath: filepath.Join(m.Dir, fmt.Sprintf("keeper-run%02d.log", m.runs)), exited: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		m.mu.Unlock()
		e.t.Fatal(err)
	}
	p.cmd = exec.Command(keeperBin, "server", m.cfgPath(), "--log-level", *logLevelFlag)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = sysProcAttr()
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

// Stop sends SIGTERM to m and waits for it to exit; it kills m if it
// has not exited within 30 s.
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
	case <-time.After(30 * time.Second):
		m.kill()
		e.t.Errorf("member %d ignored SIGTERM for 30 s; killed it:\n%s", m.ID, m.LogTail(30))
	}
}

// Restart starts m again after Kill or Stop.
func (e *Ensemble) Restart(m *Member) {
	e.t.Helper()
	m.kill()
	e.Start(m)
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

// dumpLogs prints every member's log tail, for a failed test.
func (e *Ensemble) dumpLogs() {
	for _, m := range e.Members {
		e.t.Logf("---- member %d (%s, running=%v) %s ----\n%s",
			m.ID, roleName(m), m.Running(), m.LogPath(), m.LogTail(40))
	}
}

func roleName(m *Member) string {
	if m.Observer {
		return "observer"
	}
	return "voter"
}

// ---------------------------------------------------------------------------
// Four-letter words and the state of the ensemble.

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
	b, err := io.ReadAll(c)
	return string(b), err
}

// Srvr is what the srvr four-letter word reports.
type Srvr struct {
	Mode string // leader, follower, observer; "" when not serving
	Zxid int64
}

// Srvr asks m for srvr. A member that is not serving (ZooKeeper answers
// "This ZooKeeper instance is not currently serving requests") has an
// empty Mode.
func (m *Member) Srvr() (Srvr, error) {
	reply, err := FourLetter(m.Addr, "srvr")
	if err != nil {
		return Srvr{}, err
	}
	var s Srvr
	for _, line := range strings.Split(reply, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		switch k {
		case "Mode":
			s.Mode = strings.TrimSpace(v)
		case "Zxid":
			z, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(v), "0x"), 16, 64)
			if err != nil {
				return s, fmt.Errorf("srvr: bad zxid %q", v)
			}
			s.Zxid = z
		}
	}
	return s, nil
}

// Hash returns m's hash four-letter word reply, "<zxid hex>: <digest>".
func (m *Member) Hash() (string, error) {
	reply, err := FourLetter(m.Addr, "hash")
	if err != nil {
		return "", err
	}
	reply = strings.TrimSpace(reply)
	if !strings.Contains(reply, ": ") {
		return "", fmt.Errorf("hash replied %q", reply)
	}
	return reply, nil
}

// modes asks every running member for srvr and describes the result.
func (e *Ensemble) modes() (map[int]Srvr, string) {
	out := map[int]Srvr{}
	var desc []string
	for _, m := range e.Members {
		if !m.Running() {
			desc = append(desc, fmt.Sprintf("%d:down", m.ID))
			continue
		}
		s, err := m.Srvr()
		if err != nil {
			desc = append(desc, fmt.Sprintf("%d:%v", m.ID, err))
			continue
		}
		out[m.ID] = s
		mode := s.Mode
		if mode == "" {
			mode = "not-serving"
		}
		desc = append(desc, fmt.Sprintf("%d:%s@%#x", m.ID, mode, s.Zxid))
	}
	return out, strings.Join(desc, " ")
}

// WaitServing waits until every running member serves, exactly one of
// them as leader, the voters as leader or follower and the observers as
// observer. It returns the leader.
func (e *Ensemble) WaitServing(timeout time.Duration) *Member {
	e.t.Helper()
	var leader *Member
	e.waitFor(timeout, "every running member serving under one leader", func() (bool, string) {
		got, desc := e.modes()
		leader = nil
		leaders := 0
		for _, m := range e.Members {
			if !m.Running() {
				continue
			}
			s, ok := got[m.ID]
			want := "follower"
			if m.Observer {
				want = "observer"
			}
			switch {
			case !ok:
				return false, desc
			case s.Mode == "leader" && !m.Observer:
				leaders++
				leader = m
			case s.Mode != want:
				return false, desc
			}
		}
		return leaders == 1, desc
	})
	return leader
}

// WaitLeader waits until some member other than not reports Mode: leader
// (not may be nil) and returns it. Other members may still be syncing.
func (e *Ensemble) WaitLeader(timeout time.Duration, not *Member) *Member {
	e.t.Helper()
	var leader *Member
	e.waitFor(timeout, "a new leader", func() (bool, string) {
		got, desc := e.modes()
		for _, m := range e.Members {
			if s, ok := got[m.ID]; ok && s.Mode == "leader" && m != not && m.Running() {
				leader = m
				return true, desc
			}
		}
		return false, desc
	})
	return leader
}

// WaitConverged waits until every running member reports the same hash
// (zxid and digest) and returns it. Nothing may be writing meanwhile.
func (e *Ensemble) WaitConverged(timeout time.Duration) string {
	e.t.Helper()
	var agreed string
	e.waitFor(timeout, "every running member at the same zxid with the same digest", func() (bool, string) {
		var hashes []string
		agreed = ""
		same := true
		for _, m := range e.Members {
			if !m.Running() {
				continue
			}
			h, err := m.Hash()
			if err != nil {
				h = err.Error()
			}
			hashes = append(hashes, fmt.Sprintf("%d=%q", m.ID, h))
			if agreed == "" {
				agreed = h
			} else if h != agreed {
				same = false
			}
		}
		return same && agreed != "", strings.Join(hashes, " ")
	})
	return agreed
}

// waitFor polls cond every pollInterval until it holds, and fails the
// test with cond's last description if timeout passes first.
func (e *Ensemble) waitFor(timeout time.Duration, what string, cond func() (bool, string)) {
	e.t.Helper()
	if err := poll(timeout, cond); err != nil {
		e.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// poll calls cond every pollInterval until it holds or timeout passes;
// the error carries cond's last description.
func poll(timeout time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ok, desc := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v; last: %s", timeout, desc)
		}
		<-tick.C
	}
}
