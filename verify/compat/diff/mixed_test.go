package diff

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"keeper/internal/keeperbin"
	"keeper/internal/testhost"
	"keeper/verify/compat/internal/launcher"
	"keeper/verify/compat/zkreal"
)

// The differential test through every member of an ensemble: the reference
// side is an ensemble of three Apache ZooKeeper members, the tested side a
// mixed ensemble of keeper and ZooKeeper members, all real processes. Slot
// i's sessions connect to member i+1 on both sides, so the leader and both
// followers take requests, create sessions and forward writes.

// memberKind is the server an ensemble member runs.
type memberKind int

const (
	zkMember memberKind = iota
	keeperMember
)

func (k memberKind) String() string {
	if k == keeperMember {
		return "keeper"
	}
	return "zookeeper"
}

// Ensemble timing: the standalone servers' tick, so that session timeouts
// negotiate alike, with initLimit and syncLimit roomy enough for a JVM's
// pauses on a busy machine.
const (
	ensembleInitLimit = 10
	ensembleSyncLimit = 5
	mixedOpsPerSeed   = 400 // steps per case unless -diff.ops says otherwise
)

var (
	memberStartTimeout = testhost.Scale(60 * time.Second)
	electionTimeout    = testhost.Scale(60 * time.Second)
)

// ensemble is a set of member processes on loopback.
type ensemble struct {
	members []*launcher.Member // members[i] has id i+1
	kinds   []memberKind
}

// startEnsemble writes a zoo.cfg for one member per kind, starts the two
// with the highest ids and waits until they serve (two members with equal
// zxids elect the higher id, so the last member leads), then starts the
// others, and waits until every member serves under one leader, which it
// returns. Starting a third member before the first two have met would let
// a quick one meet the second first and elect it.
func startEnsemble(t *testing.T, bin, name string, kinds ...memberKind) (*ensemble, *launcher.Member) {
	t.Helper()
	e := &ensemble{kinds: kinds}
	e.members = launcher.Layout(t, t.TempDir(), len(kinds), func(id int) string {
		return fmt.Sprintf("%s-m%d-%s", name, id, kinds[id-1])
	})
	cfg := launcher.Config{TickMs: int(tickTime.Milliseconds()), InitLimit: ensembleInitLimit,
		SyncLimit: ensembleSyncLimit, MaxSessionTimeoutMs: maxSessionMs}
	// The standalone servers' settings (startZooKeeper, zkserverConfig):
	// ZooKeeper turns these zoo.cfg keys into the system properties of the
	// same name (with "zookeeper." in front), keeper reads them as its own.
	lines := []string{
		"extendedTypesEnabled=true",
		"enforceQuota=true",
		"DigestAuthenticationProvider.superDigest=" + digestID(superUser, superPass),
		// keeper's container and TTL reaper, off as containerCheckJavaOpts
		// turns ZooKeeper's off (ZooKeeper reads that only as a JVM flag,
		// and ignores this line).
		"znode.container.checkIntervalMs=2147483647",
	}
	for _, m := range e.members {
		if err := launcher.WriteConfig(m, e.members, cfg, lines); err != nil {
			t.Fatal(err)
		}
	}
	launcher.Cleanup(t, e.members, func(m *launcher.Member) string { return kinds[m.ID-1].String() })
	n := len(e.members)
	for i := n - 1; i >= 0; i-- {
		e.start(t, bin, e.members[i])
		if i == n-2 {
			e.waitServing(t, e.members[i:])
		}
	}
	return e, e.waitServing(t, e.members)
}

// start starts m and waits until it answers ruok.
func (e *ensemble) start(t *testing.T, bin string, m *launcher.Member) {
	t.Helper()
	kind := e.kinds[m.ID-1]
	var cmd *exec.Cmd
	if kind == zkMember {
		cmd = zkreal.QuorumPeerCommand(t, m.CfgPath(), zkreal.Options{
			ExtendedTypes: true,
			SuperDigest:   digestID(superUser, superPass),
			JVMFlags:      []string{containerCheckJavaOpts},
		})
		cmd.Dir = m.Dir
	} else {
		cmd = exec.Command(bin, "server", m.CfgPath())
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	m.Start(t, cmd, func(n int) string { return fmt.Sprintf("run%02d-%s.log", n, kind) },
		memberStartTimeout, 50*time.Millisecond)
}

// waitServing waits until every member of ms serves, exactly one as
// leader, and returns the leader.
func (e *ensemble) waitServing(t *testing.T, ms []*launcher.Member) *launcher.Member {
	t.Helper()
	var leader *launcher.Member
	err := launcher.Poll(electionTimeout, 50*time.Millisecond, func() (bool, string) {
		leader = nil
		leaders, serving := 0, 0
		var desc []string
		for _, m := range ms {
			s, err := m.Srvr()
			desc = append(desc, fmt.Sprintf("%d(%s):%q %v", m.ID, e.kinds[m.ID-1], s.Mode, err))
			switch s.Mode {
			case "leader":
				leaders++
				serving++
				leader = m
			case "follower":
				serving++
			}
		}
		return leaders == 1 && serving == len(ms), strings.Join(desc, " ")
	})
	if err != nil {
		t.Fatalf("waiting for every member to serve under one leader: %v", err)
	}
	return leader
}

// addrs lists the members' client addresses, by id.
func (e *ensemble) addrs() []string {
	out := make([]string, len(e.members))
	for i, m := range e.members {
		out[i] = m.Addr
	}
	return out
}

// portNames rewrites the members' ports, where /zookeeper/config lists
// them ("server.1=127.0.0.1:<quorum>:<election>:participant"), to names:
// the two ensembles listen on different ports. Every port has five
// digits (testhost hands out ports from 10000 up), so the data's length,
// which the Stat and the reply's size show, is compared unchanged.
func (e *ensemble) portNames() *strings.Replacer {
	var pairs []string
	for _, m := range e.members {
		for _, p := range []struct {
			port int
			name string
		}{{m.ClientPort, "client"}, {m.QuorumPort, "quorum"}, {m.ElecPort, "election"}} {
			pairs = append(pairs, ":"+strconv.Itoa(p.port), fmt.Sprintf(":<%s port of %d>", p.name, m.ID))
		}
	}
	return strings.NewReplacer(pairs...)
}

// mixedCase is one tested ensemble: its members' kinds, and which one
// must lead.
type mixedCase struct {
	name   string
	kinds  []memberKind
	leader memberKind
}

var mixedCases = []mixedCase{
	{"keeper-leads", []memberKind{zkMember, zkMember, keeperMember}, keeperMember},
	{"zookeeper-leads", []memberKind{keeperMember, keeperMember, zkMember}, zkMember},
}

// TestDifferentialMixed runs the differential test with both sides
// ensembles of three processes: the reference three ZooKeeper members, the
// tested side a mixed ensemble, once with keeper leading two ZooKeeper
// followers and once with ZooKeeper leading two keeper followers.
func TestDifferentialMixed(t *testing.T) {
	if err := zkreal.Available(); err != nil {
		zkreal.QuorumPeerCommand(t, "", zkreal.Options{}) // skips, or fails with KEEPER_REQUIRE_ZK
		t.Fatalf("zkreal: %v", err)
	}
	seed, ops := regressionSeeds[0], mixedOpsPerSeed
	if *seedFlag != 0 {
		seed = *seedFlag
	}
	if *opsFlag > 0 {
		ops = *opsFlag
	}
	bin := keeperbin.ForTest(t)
	for _, c := range mixedCases {
		t.Run(c.name, func(t *testing.T) {
			p := startMixedPair(t, bin, c)
			r := &seedResult{}
			runSeedOn(t, p, seed, ops, r)
			t.Logf("diff: %s: ops=%d events compared=%d normalized=%s; slow replies nudged with %d pings so far",
				c.name, r.ops, r.events, histogram(r.norm.counts), nudges.Load())
		})
	}
}

// startMixedPair starts the reference ensemble and c's, checks that c's
// leader is of the kind it must be, and opens every slot's session on each.
func startMixedPair(t *testing.T, bin string, c mixedCase) *pair {
	t.Helper()
	ref, refLeader := startEnsemble(t, bin, "reference", zkMember, zkMember, zkMember)
	mixed, leader := startEnsemble(t, bin, c.name, c.kinds...)
	if leader.ID != len(c.kinds) || c.kinds[leader.ID-1] != c.leader {
		t.Fatalf("%s: member %d (%s) leads; member %d (%s) must", c.name,
			leader.ID, c.kinds[leader.ID-1], len(c.kinds), c.leader)
	}
	t.Logf("%s: member %d (%s) leads; reference: member %d leads", c.name, leader.ID, c.kinds[leader.ID-1], refLeader.ID)
	p := &pair{
		zk:       newSide("zookeeper ensemble", ref.addrs(), slots),
		keeper:   newSide("mixed ensemble", mixed.addrs(), slots),
		slots:    slots,
		runMatch: "TestDifferentialMixed/" + c.name,
	}
	p.zk.syncBarrier, p.keeper.syncBarrier = true, true
	p.zk.data, p.keeper.data = ref.portNames(), mixed.portNames()
	t.Cleanup(func() { p.keeper.closeAll(); p.zk.closeAll() })
	// No process has opened a session yet (the launcher only sends
	// four-letter words), but the check costs little: the leader's dump
	// lists every session of the ensemble, on both sides alike.
	for _, a := range []string{refLeader.Addr, leader.Addr} {
		if err := closeStraySessions(a); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*side{p.keeper, p.zk} {
		if err := s.start(); err != nil {
			t.Fatal(err)
		}
	}
	return p
}
