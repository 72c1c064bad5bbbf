package reconfig

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"keeper/internal/keeperbin"
	"keeper/internal/testhost"
	"keeper/verify/compat/internal/launcher"
	"keeper/verify/compat/zkreal"
)

const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

// superDigest is super:test, the super user kazoo's and go-zookeeper's
// harnesses use.
const superDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="

// startEnsemble starts three members of one kind ("keeper" or
// "zookeeper") with reconfigEnabled and the super user, and waits until
// one leads and two follow. It returns the members and the leader.
func startEnsemble(t *testing.T, kind string) ([]*launcher.Member, *launcher.Member) {
	t.Helper()
	ms := launcher.Layout(t, t.TempDir(), 3, func(id int) string { return fmt.Sprintf("m%d-%s", id, kind) })
	launcher.Cleanup(t, ms, func(m *launcher.Member) string { return kind })
	cfg := launcher.Config{TickMs: 200, InitLimit: 10, SyncLimit: 5, MaxSessionTimeoutMs: 60000}
	extra := []string{"reconfigEnabled=true", "DigestAuthenticationProvider.superDigest=" + superDigest}
	for _, m := range ms {
		if err := launcher.WriteConfig(m, ms, cfg, extra); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		var cmd *exec.Cmd
		if kind == "keeper" {
			cmd = exec.Command(keeperbin.ForTest(t), "server", m.CfgPath())
		} else {
			cmd = zkreal.QuorumPeerCommand(t, m.CfgPath(), zkreal.Options{})
		}
		m.Start(t, cmd, func(run int) string { return fmt.Sprintf("run%02d.log", run) }, testhost.Scale(60*time.Second), 50*time.Millisecond)
	}
	var leader *launcher.Member
	err := launcher.Poll(testhost.Scale(60*time.Second), 50*time.Millisecond, func() (bool, string) {
		leader = nil
		modes := ""
		followers := 0
		for _, m := range ms {
			s, _ := m.Srvr()
			modes += fmt.Sprintf(" m%d=%q", m.ID, s.Mode)
			switch s.Mode {
			case "leader":
				leader = m
			case "follower":
				followers++
			}
		}
		return leader != nil && followers == 2, "modes" + modes
	})
	if err != nil {
		t.Fatalf("%s ensemble: %v", kind, err)
	}
	return ms, leader
}

// zkCliScript is the session both ensembles get, through zkCli.sh's
// stdin. F and C stand for the follower the script removes and adds back
// and the one zkCli is connected to; every Q/E/P stands for a member's
// quorum, election and client port.
const zkCliScript = `config
addauth digest super:test
reconfig -remove F
reconfig -add server.F=127.0.0.1:QF:EF:participant;127.0.0.1:PF
reconfig -add server.9=127.0.0.1:1:2:observer;127.0.0.1:3
reconfig -remove 9 -v 1
reconfig -add server.5=127.0.0.1:4:5:participant;127.0.0.1:6
reconfig -remove 1,2,3
reconfig -add server.x=1:2:3
reconfig -remove 2 -add server.2=127.0.0.1:Q2:E2
reconfig -remove 5,9
reconfig -members server.1=127.0.0.1:Q1:E1:participant;127.0.0.1:P1,server.2=127.0.0.1:Q2:E2:participant;127.0.0.1:P2,server.3=127.0.0.1:Q3:E3:participant;127.0.0.1:P3
config
reconfig -members server.1=127.0.0.1:Q1:E1:participant;127.0.0.1:P1,server.9=127.0.0.1:1:2:participant;127.0.0.1:3
reconfig -remove C,F
reconfig
reconfig -v zz -remove 3
config -c
`

// TestZkCliReconfigSideBySide runs the same zkCli.sh session of
// reconfigs (remove and add back a follower, add and remove an observer,
// a stale version, a new participant that is not running, the whole
// membership given at once (-members), one whose new quorum cannot
// answer, invalid
// requests, a change that would leave too few voters, the usage errors)
// against an Apache ZooKeeper 3.8 ensemble and a keeper ensemble, and
// expects the same output once ports and versions are named.
func TestZkCliReconfigSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two ensembles of real processes")
	}
	if err := zkreal.Available(); err != nil {
		skipOrFail(t, "Apache ZooKeeper", err)
	}
	outs := map[string]string{}
	for _, kind := range []string{"zookeeper", "keeper"} {
		ms, leader := startEnsemble(t, kind)
		var followers []*launcher.Member
		for _, m := range ms {
			if m != leader {
				followers = append(followers, m)
			}
		}
		// zkCli talks to one follower while the script removes the other.
		conn, moved := followers[0], followers[1]
		names := map[string]string{"F": fmt.Sprint(moved.ID), "C": fmt.Sprint(conn.ID)}
		for _, m := range ms {
			names[fmt.Sprintf("Q%d", m.ID)] = fmt.Sprint(m.QuorumPort)
			names[fmt.Sprintf("E%d", m.ID)] = fmt.Sprint(m.ElecPort)
			names[fmt.Sprintf("P%d", m.ID)] = fmt.Sprint(m.ClientPort)
		}
		names["QF"], names["EF"], names["PF"] = fmt.Sprint(moved.QuorumPort), fmt.Sprint(moved.ElecPort), fmt.Sprint(moved.ClientPort)
		script := regexp.MustCompile(`\b(QF|EF|PF|Q\d|E\d|P\d|F|C)\b`).ReplaceAllStringFunc(zkCliScript, func(s string) string { return names[s] })
		cmd := exec.Command(zkCliPath, "-server", conn.Addr)
		cmd.Stdin = strings.NewReader(script)
		cmd.Env = append(cmd.Environ(), "ZOO_LOG_DIR="+t.TempDir())
		out, _ := cmd.CombinedOutput()
		if err := serverLinesInIDOrder(string(out)); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
		outs[kind] = normalize(string(out), ms, moved, conn)
		t.Logf("%s:\n%s", kind, outs[kind])
		for _, m := range ms {
			m.Kill()
		}
	}
	if outs["keeper"] != outs["zookeeper"] {
		t.Errorf("zkCli's output differs\n--- zookeeper\n%s\n--- keeper\n%s", outs["zookeeper"], outs["keeper"])
	}
}

// normalize keeps zkCli's answers and replaces what differs between two
// ensembles by name: each member's ports, the ids of the members the
// script picked, and configuration versions.
func normalize(out string, ms []*launcher.Member, moved, conn *launcher.Member) string {
	repl := []string{}
	for _, m := range ms {
		role := "O"
		switch m {
		case moved:
			role = "F"
		case conn:
			role = "C"
		}
		repl = append(repl,
			fmt.Sprint(m.QuorumPort), "Q"+role, fmt.Sprint(m.ElecPort), "E"+role, fmt.Sprint(m.ClientPort), "P"+role,
			fmt.Sprintf("server.%d=", m.ID), "server."+role+"=")
	}
	r := strings.NewReplacer(repl...)
	version := regexp.MustCompile(`(version=|^)[0-9a-f]{9,}\b`)
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "", strings.HasPrefix(line, "SLF4J"), strings.HasPrefix(line, "WATCHER::"),
			strings.HasPrefix(line, "WatchedEvent"), strings.HasPrefix(line, "JLine"),
			strings.HasPrefix(line, "Welcome"), strings.HasPrefix(line, "Connecting"):
			continue
		}
		keep = append(keep, version.ReplaceAllString(r.Replace(line), "${1}V"))
	}
	// Both print a configuration's server lines, and the client addresses
	// of `config -c` ("V host:port,..."), in id order, and which member
	// leads (and so which ids the script's roles get) is up to the
	// election: sorted by role name, they compare whatever the election
	// chose. serverLinesInIDOrder checks the order of the server lines.
	for i, line := range keep {
		if v, list, ok := strings.Cut(line, " "); ok && v == "V" && strings.Contains(list, ",") && !strings.Contains(list, " ") {
			parts := strings.Split(list, ",")
			slices.Sort(parts)
			keep[i] = v + " " + strings.Join(parts, ",")
		}
	}
	for i := 0; i < len(keep); {
		j := i
		for j < len(keep) && strings.HasPrefix(keep[j], "server.") {
			j++
		}
		slices.Sort(keep[i:j])
		i = max(j, i+1)
	}
	return strings.Join(keep, "\n")
}

// serverLinesInIDOrder checks that each configuration zkCli printed (a
// run of server.N lines) lists its servers in ascending id order, as
// ZooKeeper does.
func serverLinesInIDOrder(out string) error {
	prev := int64(-1)
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		id, ok := strings.CutPrefix(line, "server.")
		if !ok {
			prev = -1
			continue
		}
		id, _, _ = strings.Cut(id, "=")
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			return fmt.Errorf("server line %q: %v", line, err)
		}
		if n <= prev {
			return fmt.Errorf("server.%d printed after server.%d", n, prev)
		}
		prev = n
	}
	return nil
}

func TestServerLinesInIDOrder(t *testing.T) {
	for _, tc := range []struct {
		out string
		ok  bool
	}{
		{"server.1=a\nserver.2=b\nversion=1\nserver.1=a\nserver.3=c\n", true},
		{"server.2=b\nserver.1=a\n", false},
		{"server.1=a\nserver.1=a\n", false},
		{"server.x=a\n", false},
		{"Committed new configuration:\nserver.5=a\nversion=2\nserver.4=b\n", true},
	} {
		if err := serverLinesInIDOrder(tc.out); (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok=%v", tc.out, err, tc.ok)
		}
	}
}
