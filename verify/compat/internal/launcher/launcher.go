// Package launcher runs ensemble members as real server processes on
// loopback for the compatibility tests (verify/compat/ensemble and
// verify/compat/mixed): each member's ports, directories, zoo.cfg and
// myid, its runs with a log file each, and the four-letter words that say
// whether it serves. What a member runs (keeper, or Apache ZooKeeper) is
// the caller's command; the package only starts, watches and stops it.
package launcher

import (
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

	"keeper/internal/testhost"
)

// Member is one server of an ensemble. Its ports, configuration and data
// survive restarts.
type Member struct {
	ID                   int
	Observer             bool // peerType=observer, and ":observer" in every server line
	ClientPort           int
	QuorumPort, ElecPort int
	Addr                 string // client address, 127.0.0.1:ClientPort
	Dir                  string // zoo.cfg and the logs of every run
	DataDir              string // dataDir: myid, and snapshots and logs in version-2
	// AdminPort, when set, turns on the member's admin server on
	// 127.0.0.1:AdminPort (AdminAddr); 0 leaves it off.
	AdminPort int

	mu   sync.Mutex // guards below
	proc *process   // the current (or last) run, nil before the first start
	runs int
}

// process is one run of a member.
type process struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{} // closed once the process has been reaped
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

// Layout gives n members ids 1 to n, three ports each (client, quorum,
// election) and a directory under dir named by name(id), with dataDir
// inside it. The ports come from testhost, outside the ephemeral range,
// so that the outgoing connections of clients and members cannot occupy
// a killed member's ports before it restarts.
func Layout(t testing.TB, dir string, n int, name func(id int) string) []*Member {
	ports := testhost.Ports(t, 3*n)
	ms := make([]*Member, n)
	for i := range ms {
		m := &Member{ID: i + 1, ClientPort: ports[3*i], QuorumPort: ports[3*i+1], ElecPort: ports[3*i+2]}
		m.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(m.ClientPort))
		m.Dir = filepath.Join(dir, name(m.ID))
		m.DataDir = filepath.Join(m.Dir, "data")
		ms[i] = m
	}
	return ms
}

// Config is what every member's zoo.cfg says besides its own lines.
type Config struct {
	TickMs, InitLimit, SyncLimit int // tickTime, and the limits in ticks
	MaxSessionTimeoutMs          int
	SnapCount                    int // snapCount; 0 leaves it out (the server's default)
}

// WriteConfig writes m's zoo.cfg (CfgPath), which keeper and ZooKeeper
// both read, and its myid: c, a server line for each of all, then extra.
func WriteConfig(m *Member, all []*Member, c Config, extra []string) error {
	if err := os.MkdirAll(m.DataDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(m.DataDir, "myid"), []byte(strconv.Itoa(m.ID)+"\n"), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", c.TickMs, c.InitLimit, c.SyncLimit)
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", m.DataDir, m.ClientPort)
	fmt.Fprintf(&b, "maxClientCnxns=0\nmaxSessionTimeout=%d\n", c.MaxSessionTimeoutMs)
	b.WriteString("4lw.commands.whitelist=*\n")
	if m.AdminPort > 0 {
		fmt.Fprintf(&b, "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=%d\n", m.AdminPort)
	} else {
		b.WriteString("admin.enableServer=false\n")
	}
	if c.SnapCount > 0 {
		fmt.Fprintf(&b, "snapCount=%d\n", c.SnapCount)
	}
	if m.Observer {
		b.WriteString("peerType=observer\n")
	}
	for _, p := range all {
		role := ""
		if p.Observer {
			role = ":observer"
		}
		fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d%s\n", p.ID, p.QuorumPort, p.ElecPort, role)
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	return os.WriteFile(m.CfgPath(), []byte(b.String()), 0o644)
}

// AdminAddr is m's admin server address, "" when it has none.
func (m *Member) AdminAddr() string {
	if m.AdminPort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.AdminPort))
}

// CfgPath is m's zoo.cfg.
func (m *Member) CfgPath() string { return filepath.Join(m.Dir, "zoo.cfg") }

// Start runs cmd as m's next run, which must not be running, with its
// output in Dir/logName(run) (runs count from 1), and waits, polling every
// interval, until it answers ruok. It fails t if m is running, if cmd
// does not start, if it exits first, or if timeout passes first.
func (m *Member) Start(t testing.TB, cmd *exec.Cmd, logName func(run int) string, timeout, interval time.Duration) {
	t.Helper()
	m.mu.Lock()
	if m.proc != nil && m.proc.running() {
		m.mu.Unlock()
		t.Fatalf("member %d is already running", m.ID)
	}
	m.runs++
	p := &process{cmd: cmd, logPath: filepath.Join(m.Dir, logName(m.runs)), exited: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		m.mu.Unlock()
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		m.mu.Unlock()
		logFile.Close()
		t.Fatalf("start member %d: %v", m.ID, err)
	}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	m.proc = p
	m.mu.Unlock()
	err = Poll(timeout, interval, func() (bool, string) {
		if !p.running() {
			t.Fatalf("member %d exited during start-up:\n%s", m.ID, m.LogTail(40))
		}
		reply, err := FourLetter(m.Addr, "ruok")
		return err == nil && reply == "imok", fmt.Sprintf("ruok: %q %v", reply, err)
	})
	if err != nil {
		t.Fatalf("waiting for member %d answers ruok: %v", m.ID, err)
	}
}

// Kill sends SIGKILL to m's current run, if it is running, and waits
// until it is reaped.
func (m *Member) Kill() {
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

// Stop asks m to shut down as an operator does (SIGTERM, what zkServer.sh
// stop sends) and waits until it has exited. A member still running after
// timeout is killed, and Stop reports false.
func (m *Member) Stop(timeout time.Duration) bool {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil || !p.running() {
		return true
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return true
	case <-time.After(timeout):
		m.Kill()
		return false
	}
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

// Cleanup has every member killed when t ends; if t failed, it first logs
// each member's log tail, headed by describe(m) (its role or kind).
func Cleanup(t testing.TB, ms []*Member, describe func(m *Member) string) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range ms {
				t.Logf("---- member %d (%s, running=%v) %s ----\n%s", m.ID, describe(m), m.Running(), m.LogPath(), m.LogTail(40))
			}
		}
		for _, m := range ms {
			m.Kill()
		}
	})
}

// Poll calls cond every interval until it holds or timeout passes; the
// error carries cond's last description.
func Poll(timeout, interval time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
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

// maxReplyBytes bounds a four-letter word's reply; the longest, a large
// server's wchp or dump, stays far below it.
const maxReplyBytes = 1 << 20

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
	b, err := io.ReadAll(io.LimitReader(c, maxReplyBytes))
	return string(b), err
}

// Srvr is what the srvr four-letter word reports.
type Srvr struct {
	Mode string // leader, follower, observer; "" when not serving
	Zxid int64
}

// Srvr asks m for srvr. A member that is not serving (ZooKeeper answers
// "This ZooKeeper instance is not currently serving requests") has an
// empty Mode. A Zxid line that does not parse is an error, with the Mode
// still reported.
func (m *Member) Srvr() (Srvr, error) {
	reply, err := FourLetter(m.Addr, "srvr")
	if err != nil {
		return Srvr{}, err
	}
	var s Srvr
	var zxidErr error
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
				zxidErr = fmt.Errorf("srvr: bad zxid %q", v)
				continue
			}
			s.Zxid = z
		}
	}
	return s, zxidErr
}
