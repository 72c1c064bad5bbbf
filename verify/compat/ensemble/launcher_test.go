package ensemble

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"keeper/internal/keeperbin"
	"keeper/internal/testhost"
	"keeper/verify/compat/internal/launcher"
)

// keeperBin is the keeper binary TestMain builds for the whole run.
var keeperBin string

var (
	binFlag      = flag.String("keeper-bin", "", "run this keeper binary instead of building ./cmd/keeper")
	logLevelFlag = flag.String("keeper-log-level", "info", "the servers' --log-level (debug shows every connection)")
)

func TestMain(m *testing.M) {
	os.Exit(keeperbin.RunTests(m, binFlag, &keeperBin))
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
	*launcher.Member
}

// NewEnsemble writes the configuration of every member, starts them all
// and waits until they serve with one leader. The processes are killed
// when the test ends; if it failed, every member's log tail is printed.
func NewEnsemble(t testing.TB, opts Options) *Ensemble {
	t.Helper()
	opts = opts.withDefaults()
	e := &Ensemble{t: t, dir: t.TempDir(), opts: opts}
	n := opts.Voters + opts.Observers
	for _, lm := range launcher.Layout(t, e.dir, n, func(id int) string { return fmt.Sprintf("m%d", id) }) {
		lm.Observer = lm.ID > opts.Voters
		e.Members = append(e.Members, &Member{lm})
	}
	for _, m := range e.Members {
		if err := e.writeConfig(m); err != nil {
			t.Fatal(err)
		}
	}
	launcher.Cleanup(t, e.launched(), roleName)
	for _, m := range e.Members {
		e.Start(m)
	}
	e.WaitServing(electTimeout)
	return e
}

// writeConfig writes m's zoo.cfg and myid.
func (e *Ensemble) writeConfig(m *Member) error {
	o := e.opts
	c := launcher.Config{TickMs: o.TickMs, InitLimit: o.InitLimit, SyncLimit: o.SyncLimit,
		MaxSessionTimeoutMs: maxSessionTimeoutMs, SnapCount: o.SnapCount}
	return launcher.WriteConfig(m.Member, e.launched(), c, o.Extra)
}

// launched returns the members as the launcher knows them.
func (e *Ensemble) launched() []*launcher.Member {
	out := make([]*launcher.Member, len(e.Members))
	for i, m := range e.Members {
		out[i] = m.Member
	}
	return out
}

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
	cmd := exec.Command(keeperBin, "server", m.CfgPath(), "--log-level", *logLevelFlag)
	cmd.SysProcAttr = sysProcAttr()
	m.Member.Start(e.t, cmd, func(run int) string { return fmt.Sprintf("keeper-run%02d.log", run) }, startTimeout, pollInterval)
}

// Kill sends SIGKILL to m and waits until it is reaped.
func (e *Ensemble) Kill(m *Member) { m.Kill() }

// Stop sends SIGTERM to m and waits for it to exit; it kills m if it
// has not exited within 30 s.
func (e *Ensemble) Stop(m *Member) {
	e.t.Helper()
	if !m.Member.Stop(30 * time.Second) {
		e.t.Errorf("member %d ignored SIGTERM for 30 s; killed it:\n%s", m.ID, m.LogTail(30))
	}
}

// Restart starts m again after Kill or Stop.
func (e *Ensemble) Restart(m *Member) {
	e.t.Helper()
	m.Kill()
	e.Start(m)
}

func roleName(m *launcher.Member) string {
	if m.Observer {
		return "observer"
	}
	return "voter"
}

// ---------------------------------------------------------------------------
// Four-letter words and the state of the ensemble.

// Hash returns m's hash four-letter word reply, "<zxid hex>: <digest>".
func (m *Member) Hash() (string, error) {
	reply, err := launcher.FourLetter(m.Addr, "hash")
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
func (e *Ensemble) modes() (map[int]launcher.Srvr, string) {
	out := map[int]launcher.Srvr{}
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
	if err := launcher.Poll(timeout, pollInterval, cond); err != nil {
		e.t.Fatalf("waiting for %s: %v", what, err)
	}
}
