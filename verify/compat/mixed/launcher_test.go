package mixed

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"keeper/internal/keeperbin"
	"keeper/internal/testhost"
	"keeper/verify/compat/internal/launcher"
	"keeper/verify/compat/zkreal"
)

// keeperBin is the keeper binary TestMain builds for the whole run.
var keeperBin string

var binFlag = flag.String("keeper-bin", "", "run this keeper binary instead of building ./cmd/keeper")

func TestMain(m *testing.M) {
	os.Exit(keeperbin.RunTests(m, binFlag, &keeperBin))
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
	// afterPhase, if set, runs at the end of each of runMixed's phases
	// with the phase's name, while every member of the phase serves.
	afterPhase func(phase string)
}

// Member is one server. Its ports, configuration and data survive
// restarts; its kind changes only through Switch, while it is stopped.
type Member struct {
	*launcher.Member
	Kind Kind
	// Extra are zoo.cfg lines of this member's own (TLS settings, say);
	// SetExtra rewrites the file.
	Extra []string
	// JVMFlags are java's -D flags for this member from its next start
	// on (the JAAS file, say): on java's command line for ZooKeeper, in
	// SERVER_JVMFLAGS, where zkServer.sh puts them, for keeper.
	JVMFlags []string

	mu   sync.Mutex   // guards runs and their checked
	runs []*memberRun // every run, the current (or last) one at the end
}

// memberRun is what checkAlive knows of one run of a member.
type memberRun struct {
	kind    Kind
	logPath string
	checked int // bytes of the log checkAlive has read
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
	for _, lm := range launcher.Layout(t, e.dir, len(kinds), func(id int) string { return fmt.Sprintf("m%d-%s", id, kinds[id-1]) }) {
		e.Members = append(e.Members, &Member{Member: lm, Kind: kinds[lm.ID-1]})
	}
	for _, m := range e.Members {
		if err := e.writeConfig(m); err != nil {
			t.Fatal(err)
		}
	}
	// The kind is read when the test ends: Switch changes it.
	launcher.Cleanup(t, e.launched(), func(lm *launcher.Member) string { return e.Member(lm.ID).Kind.String() })
	return e
}

// writeConfig writes m's zoo.cfg, which both servers read, and myid.
func (e *Ensemble) writeConfig(m *Member) error {
	c := launcher.Config{TickMs: tickMs, InitLimit: initLimit, SyncLimit: syncLimit, MaxSessionTimeoutMs: maxSessionTimeoutMs}
	return launcher.WriteConfig(m.Member, e.launched(), c, m.Extra)
}

// launched returns the members as the launcher knows them.
func (e *Ensemble) launched() []*launcher.Member {
	out := make([]*launcher.Member, len(e.Members))
	for i, m := range e.Members {
		out[i] = m.Member
	}
	return out
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

// EnableAdmin gives every member an admin server on a port of its own
// (launcher.Member.AdminAddr), before any member starts.
func (e *Ensemble) EnableAdmin() {
	e.t.Helper()
	ports := testhost.Ports(e.t, len(e.Members))
	for i, m := range e.Members {
		m.AdminPort = ports[i]
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

// Member returns the member with id.
func (e *Ensemble) Member(id int) *Member { return e.Members[id-1] }

// Start starts m, which must not be running, and waits until its client
// port answers ruok.
func (e *Ensemble) Start(m *Member) {
	e.t.Helper()
	var cmd *exec.Cmd
	if m.Kind == ZooKeeper {
		cmd = zkreal.QuorumPeerCommand(e.t, m.CfgPath(), zkreal.Options{JVMFlags: m.JVMFlags})
		cmd.Dir = m.Dir
	} else {
		cmd = exec.Command(keeperBin, "server", m.CfgPath())
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if len(m.JVMFlags) > 0 {
			cmd.Env = append(os.Environ(), "SERVER_JVMFLAGS="+strings.Join(m.JVMFlags, " "))
		}
	}
	kind := m.Kind
	m.Member.Start(e.t, cmd, func(n int) string {
		m.mu.Lock()
		defer m.mu.Unlock()
		name := fmt.Sprintf("run%02d-%s.log", n, kind)
		m.runs = append(m.runs, &memberRun{kind: kind, logPath: filepath.Join(m.Dir, name)})
		return name
	}, startTimeout, pollInterval)
}

// Kill sends SIGKILL to m and waits until it is reaped.
func (e *Ensemble) Kill(m *Member) { m.Kill() }

// Stop asks m to shut down as an operator does (SIGTERM, what zkServer.sh
// stop sends) and waits until it has exited; a member that has not exited
// within startTimeout fails the test.
func (e *Ensemble) Stop(m *Member) {
	e.t.Helper()
	if !m.Member.Stop(startTimeout) {
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

// Mode asks m for srvr and returns its Mode line: leader, follower,
// observer, or "" when it does not serve.
func (m *Member) Mode() string {
	s, _ := m.Srvr()
	return s.Mode
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
	if err := launcher.Poll(timeout, pollInterval, cond); err != nil {
		e.t.Fatalf("waiting for %s: %v", what, err)
	}
}
