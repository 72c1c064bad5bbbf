package sim

import (
	"slices"
	"sync"
	"testing"
)

// reconfigRegressionSeeds once found bugs in runs with reconfiguration,
// and run on every go test.
var reconfigRegressionSeeds = []uint64{}

// reconfigKnownBugSeeds fail, in runs with reconfiguration, because of
// bugs in zab, zkcore or peer that are not fixed yet; the sweep skips
// them (run one with -seed=N, or all with -sim.knownbugs).
var reconfigKnownBugSeeds = bySeed(map[string][]uint64{
	bugStaleConfigNode: {28, 29, 99, 116, 138, 171, 237, 711, 832, 855, 880, 929},
	bugObserverQuorum:  {142, 283, 355, 410, 474, 504, 512, 612, 758, 954, 1003, 1019},
	bugNotActivated:    {227},
})

// The known bugs of runs with reconfiguration, found by this simulator.
const (
	// A member whose configuration files are newer than its log (it
	// activated a configuration it heard of while looking, then crashed)
	// replays at start an older reconfig txn, which sets the core's
	// configuration back (zkcore's Apply of a reconfig txn sets
	// EnsembleConfig whatever its version); a snapshot from its leader is
	// then restored with that stale text (zkcore's Restore), and its
	// /zookeeper/config shows an older configuration than the one its
	// node has active, until the next reconfiguration.
	bugStaleConfigNode = "R1: a restarted member shows an older configuration in /zookeeper/config than the one it has active"
	// A reconfiguration in flight whose new voters are learners connected
	// as observers (observers of the active configuration, or followers
	// it turned into observers after the leader checked QuorumSynced) has
	// no quorum of its new voters: zab's leader counts no ACK from a
	// learner connected as an observer (tryEstablish, tryCommit), where
	// ZooKeeper counts a NEWLEADER ack towards every configuration the
	// learner votes in. No leader establishes again; the ensemble stalls.
	bugObserverQuorum = "R2: a reconfiguration whose new voters are connected as observers never commits, and no leader can establish"
	// Not yet diagnosed: a member restarted with a reconfig txn in its
	// log, not yet committed, follows the leader that later commits it,
	// and never activates it.
	bugNotActivated = "R3: a member of the final configuration keeps an older configuration active"
)

// reconfigOptionsFor derives a reconfiguration run's options from its
// seed: five servers, three of them voters at first (every fourth run
// four servers), three clients and the operator.
func reconfigOptionsFor(seed uint64) (Options, int) {
	opts := Options{Seed: seed, Servers: 5, Voters: 3, Clients: 3, Reconfig: true}
	if seed%4 == 0 {
		opts.Servers = 4
	}
	opts.CheckEarlyExpiry = *expiryFlag
	return opts, 300
}

// TestReconfigSimulation runs ensembles whose membership an operator
// changes at random (add, remove — the leader too —, voter to observer
// and back, replace), under the same faults, and checks every invariant
// of TestSimulation and those of reconfiguration (reconfig.go): no
// configuration active without a quorum of the old and of the new voters
// holding it, one configuration per version, at most one leader per
// epoch, and every member of the final configuration showing it in
// /zookeeper/config. Regression seeds always run; when not -short, a
// sweep of -sim.seeds more (1000, or 100 under -race).
func TestReconfigSimulation(t *testing.T) {
	seeds := slices.Clone(reconfigRegressionSeeds)
	switch {
	case *seedFlag != 0:
		seeds = []uint64{*seedFlag}
	case !testing.Short():
		n := sweepCount()
		if raceDetector && *seedsFlag == 0 {
			n = 100 // a reconfiguration run costs about four plain ones
		}
		seeds = append(seeds, sweepSeeds(n, reconfigKnownBugSeeds)...)
	}
	var mu sync.Mutex
	var total Stats
	runSeeds(t, "seeds", seeds, reconfigOptionsFor, "TestReconfigSimulation", &mu, &total)
	if !t.Failed() {
		t.Logf("sim: reconfiguration seeds=%d reconfigs sent=%d answered OK=%d activated=%d violations=0 (%+v)",
			len(seeds), total.ReconfigsSent, total.ReconfigsOK, total.Reconfigs, total)
	}
}

// TestReconfigKnownBugs (with -sim.knownbugs) reruns the known-bug seeds
// of reconfiguration runs and fails for any that passes.
func TestReconfigKnownBugs(t *testing.T) {
	if !*knownBugsFlag {
		t.Skip("run with -sim.knownbugs")
	}
	for _, seed := range sortedSeeds(reconfigKnownBugSeeds) {
		opts, steps := reconfigOptionsFor(seed)
		c := NewCluster(opts)
		c.Run(steps)
		if err := c.Check(); err == nil {
			t.Errorf("seed %d (%s) passes now: move it to reconfigRegressionSeeds", seed, reconfigKnownBugSeeds[seed])
		}
	}
}
