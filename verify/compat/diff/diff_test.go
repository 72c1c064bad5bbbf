package diff

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"keeper/coordination/zkproto"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "run only this seed (0: the regression seeds, plus a random one unless -short)")
	opsFlag   = flag.Int("diff.ops", 0, "operations per seed (0: 4000, or 1000 with -short)")
	traceFlag = flag.Bool("diff.trace", false, "log every step and ZooKeeper's outcome")
	ungate    = flag.String("diff.ungate", "", "comma-separated knownBugs/undecided names to run anyway (\"all\" for every one)")
)

// regressionSeeds run on every non-short run; seeds that once found a
// difference are added here once it is fixed.
var regressionSeeds = []uint64{1, 2, 3}

// knownBugs switches off generator operation kinds (opKinds names) or
// variants (the names gen.off checks) that keep hitting a keeper bug which
// is reported but not yet fixed, so the rest of the run keeps its value.
// Each entry says what the bug is. Empty means everything runs.
var knownBugs = map[string]string{}

// undecided switches off requests on which keeper deliberately differs from
// Debian's 3.8.0: keeper follows 3.9 there, or 3.8.0 has a bug that later
// releases fixed, or no client sends the request. They are accepted
// deviations, not normalized: the generator does not send them, and
// TestKnownDifferences reproduces each with -diff.bugs.
var undecided = map[string]string{
	variantWatcherType45: "checkWatches/removeWatches with WatcherType 4 or 5: 3.8.0 answers " +
		"MarshallingError (its WatcherType knows only 1-3), keeper answers as 3.9 does (docs/zookeeper-protocol.md §3.5)",
	variantIPv6ACL: "ip ACL ids that are IPv6 literals (ip:::1, ip:fe80::/10): 3.8.0 answers InvalidACL " +
		"(IPv4 only until ZOOKEEPER-4240, 3.9.5), keeper accepts them (docs/zookeeper-protocol.md §7.3, §7.4)",
	variantNullWatchList: "setWatches/setWatches2 with a null (length -1) path vector: 3.8.0 answers " +
		"MarshallingError (a NullPointerException inside), keeper treats it as empty (docs/zookeeper-protocol.md §3.4)",
	variantCheckOthersWatches: "checkWatches on a path that another connection watches: 3.8.0 answers OK " +
		"(WatchManager.containsWatcher checks only that the path has watchers), keeper and 3.9 NoWatcher " +
		"unless the asking connection has one (docs/zookeeper-protocol.md §3.5)",
	variantMultiReadWriteOp: "multiRead holding a write op (check): both answer MarshallingError, but " +
		"3.8.0 sends a body after the error header (an empty MultiResponse, 9 bytes: it had built the " +
		"response before failing), keeper the header alone (docs/zookeeper-protocol.md §1.4, §2.3)",
	variantCheckRelativePath: "checkWatches on a path without a leading slash (\"a\") while any recursive " +
		"watch exists: 3.8.0 answers MarshallingError (its PathParentIterator fails on the path), keeper " +
		"NoWatcher (docs/zookeeper-protocol.md §2.5, §3.5)",
	variantMixedWatchModes: "one connection registering watches of different kinds on one path: 3.8 keeps " +
		"one mode per (connection, path) and table, the last registered, and matches Data/Children " +
		"checks against any mode; keeper keeps a set of modes as 3.9 does (ZOOKEEPER-4466; docs/zookeeper-protocol.md §3.1, §3.5)",
}

// gated is knownBugs and undecided together: what the generator skips.
func gated() map[string]string {
	m := map[string]string{}
	for k, v := range knownBugs {
		m[k] = "keeper bug: " + v
	}
	for k, v := range undecided {
		m[k] = "undecided deviation: " + v
	}
	for _, name := range strings.Split(*ungate, ",") {
		if name == "all" {
			return map[string]string{}
		}
		delete(m, name)
	}
	return m
}

// slots is the number of sessions that exist in parallel on each server.
const slots = 3

const (
	defaultOpsPerSeed = 4000
	shortOpsPerSeed   = 1000
	historyLen        = 40 // steps shown before a difference
)

// TestDifferential runs randomized operation sequences against Apache
// ZooKeeper and keeper and fails on the first difference.
func TestDifferential(t *testing.T) {
	seeds := regressionSeeds
	ops := defaultOpsPerSeed
	switch {
	case *seedFlag != 0:
		seeds = []uint64{*seedFlag}
	case testing.Short():
		seeds, ops = seeds[:1], shortOpsPerSeed
	default:
		seeds = append(seeds[:len(seeds):len(seeds)], rand.Uint64())
	}
	if *opsFlag > 0 {
		ops = *opsFlag
	}
	// The seeds run side by side: each waits mostly on its servers' round
	// trips, and each has its own pair of servers.
	results := make([]*seedResult, len(seeds))
	t.Run("seeds", func(t *testing.T) {
		for i, seed := range seeds {
			r := &seedResult{}
			results[i] = r
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				defer func() { r.failed = t.Failed() }()
				runSeed(t, seed, ops, r)
			})
		}
	})
	counts := map[string]int{}
	var total, events, differences int
	for _, r := range results {
		if r.failed {
			differences++ // a seed stops at its first difference
		}
		total += r.ops
		events += r.events
		for k, v := range r.norm.counts {
			counts[k] += v
		}
	}
	t.Logf("diff: seeds=%d ops=%d differences=%d (events compared: %d)", len(seeds), total, differences, events)
	for _, k := range sortedKeys(counts) {
		t.Logf("diff: normalized %d× %s", counts[k], k)
	}
	off := gated()
	for _, k := range sortedKeys(off) {
		t.Logf("diff: %q switched off: %s", k, off[k])
	}
}

// seedResult is what one seed's run compared.
type seedResult struct {
	ops, events int
	failed      bool // the seed found a difference (or its harness failed)
	norm        normalizer
	byKind      map[string]int // steps per generator kind
	byCode      map[string]int // ZooKeeper's reply codes (multi: per result)
}

// count records what a step exercised, for the coverage summary.
func (r *seedResult) count(st *step, z *outcome) {
	r.ops++
	r.byKind[st.name]++
	for _, evs := range z.events {
		r.events += len(evs)
	}
	if !z.hasReply {
		return
	}
	r.byCode[z.reply.hdr.Err.String()]++
	if m, ok := z.reply.rec.(*zkproto.MultiResponse); ok {
		for _, res := range m.Results {
			if e, ok := res.Record.(*zkproto.ErrorResponse); ok {
				r.byCode["multi:"+e.Err.String()]++
			}
		}
	}
}

// histogram renders counts as "name=n" in name order.
func histogram(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// runSeed runs ops steps from seed on a fresh pair of servers, counting
// into res. It stops at the first difference (after it, the servers' states
// may have drifted).
func runSeed(t *testing.T, seed uint64, ops int, res *seedResult) {
	runSeedOn(t, startPair(t, slots, serverOptions{extendedTypes: true, enforceQuota: true}), seed, ops, res)
}

// runSeedOn runs ops steps from seed on p, counting into res, and stops at
// the first difference.
func runSeedOn(t *testing.T, p *pair, seed uint64, ops int, res *seedResult) {
	res.norm = normalizer{counts: map[string]int{}}
	res.byKind, res.byCode = map[string]int{}, map[string]int{}
	replayCmd := func(seed uint64, ops int) string { return replay(p.runMatch, seed, ops) }
	g := newGen(seed, slots, gated())
	var history []string
	began := time.Now()
	for i := range ops {
		st := g.next()
		if err := p.probeExists(st); err != nil {
			t.Fatalf("seed %d step %d: %v\n%s", seed, i, err, replayCmd(seed, ops))
		}
		k, z, err := p.run(st)
		if err != nil {
			t.Fatalf("seed %d step %d: %s: %v\n%s", seed, i, st, err, replayCmd(seed, ops))
		}
		res.norm.apply(st, k, z)
		kl, zl := p.keeper.render(k), p.zk.render(z)
		if d := firstDifference(kl, zl); d >= 0 {
			t.Fatalf("seed %d step %d: keeper and ZooKeeper differ\nstep: %s\n%s\nkeeper:\n  %s\nzookeeper:\n  %s\nlast steps:\n%s\n%s",
				seed, i, st, differingLine(kl, zl, d),
				strings.Join(kl, "\n  "), strings.Join(zl, "\n  "),
				strings.Join(history, "\n"), replayCmd(seed, ops))
		}
		if *traceFlag {
			t.Logf("step %d: %s\n  %s", i, st, strings.Join(zl, "\n  "))
		}
		history = append(history, fmt.Sprintf("  %d: %s => %s", i, st, summary(zl)))
		if len(history) > historyLen {
			history = history[1:]
		}
		res.count(st, z)
		g.observe(st, z, p.zk.base)
	}
	t.Logf("seed %d: %d steps, %d events compared in %v", seed, res.ops, res.events, time.Since(began).Round(time.Millisecond))
	t.Logf("seed %d: steps by kind: %s", seed, histogram(res.byKind))
	t.Logf("seed %d: reply codes: %s", seed, histogram(res.byCode))
}

// differingLine shows the first line that differs.
func differingLine(k, z []string, i int) string {
	at := func(l []string) string {
		if i < len(l) {
			return l[i]
		}
		return "(nothing)"
	}
	return fmt.Sprintf("first difference:\n  keeper:    %s\n  zookeeper: %s", at(k), at(z))
}

// summary shortens an outcome's lines for the history.
func summary(lines []string) string {
	s := strings.Join(lines, " | ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// replay is the command that replays a seed; run is the -run pattern
// ("" for TestDifferential).
func replay(run string, seed uint64, ops int) string {
	if run == "" {
		run = "TestDifferential$"
	}
	cmd := fmt.Sprintf("replay: KEEPER_REQUIRE_ZK=1 go test ./verify/compat/diff -run '%s' -seed=%d -diff.ops=%d", run, seed, ops)
	if *ungate != "" {
		cmd += " -diff.ungate=" + *ungate
	}
	return cmd + "\n(add -diff.trace -v to log every step)"
}
