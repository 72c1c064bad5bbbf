package chaos

import (
	"context"
	"time"
)

// PartitionsScenario is docs/fault-model.md, scenario 1 (partitions): partitions. The leader is
// cut off from the quorum, then the servers split into random halves,
// then into two halves joined by a bridge, over and over, while eight
// clients pinned to different servers run CAS registers on ten keys.
// Checks: linearizable writes (porcupine, patched from the logs), the
// zxid order of reads and sessions, no acknowledged write lost (the
// minority side acknowledges nothing it cannot commit), and every replica
// equal at the end.
func PartitionsScenario() *Scenario {
	return &Scenario{
		ID: 1, Name: "partitions",
		Cluster:  Config{Servers: 5},
		Duration: 14 * time.Second,
		Workloads: []Workload{
			&RegisterWorkload{Prefix: "/reg", Keys: 10, Clients: 8, ClientBase: 100, Think: pacedThink},
		},
		LinearPrefix: "/reg/",
		Nemesis:      Cycle(1500*time.Millisecond, IsolateLeader(3*time.Second), RandomHalves(3*time.Second), Bridge(3*time.Second)),
	}
}

// KillScenario is the "kill -9" scenario (docs/fault-model.md, #2): kill -9 of a random member, the leader half
// of the time, every few seconds, restarted with the same data, under a
// set workload (unique creates) and CAS registers. The kill drops the
// bytes the server had written but not synced, as a power loss would
// (Config.DropUnsynced), so restarts meet torn log tails. Checks: every
// acknowledged create exists at the end on every replica, the trees are
// equal, the sampled digests match the replayed history. Figure: the torn
// tails the restarts cut off. It runs with ZooKeeper's sample timing
// (tickTime 2000, initLimit 10, syncLimit 5), so that failovers are as
// fast as production settings make them, not a short tick.
func KillScenario() *Scenario {
	rs := &Durations{}
	return &Scenario{
		ID: 2, Name: "kill -9",
		Cluster:  Config{Servers: 3, DropUnsynced: true, TickMs: 2000, InitLimit: 10, SyncLimit: 5},
		Check:    func(_ context.Context, r *Run, _ *Committed) { serverDrops(r.Cluster).Report(r.Report) },
		Duration: 12 * time.Second,
		Workloads: []Workload{
			&SetWorkload{Prefix: "/set", Clients: 4, ClientBase: 100, Think: pacedThink},
			&RegisterWorkload{Prefix: "/reg", Keys: 4, Clients: 3, ClientBase: 200, Think: pacedThink},
		},
		LinearPrefix: "/reg/",
		Nemesis: func(ctx context.Context, r *Run) {
			Cycle(time.Second, KillMember(0.5, 1500*time.Millisecond, rs))(ctx, r)
			rs.Figure(r, "restart-to-serving")
		},
	}
}

// SyncFailpointsScenario is the "kill during sync" scenario (docs/fault-model.md, #3), learner-sync durability: named failpoints
// in a chaos build of keeper (package internal/failpoint) kill a server at
// each durability point of a learner's sync and of a snapshot, while a
// follower is forced into a DIFF (a short absence across a new epoch), a
// SNAP (an absence past the leader's snapshot) or a TRUNC (a cut-off
// leader that logged proposals no quorum acknowledged), under CAS
// registers and unique creates. After a point fired during a DIFF or SNAP
// the killed server restarts alone with the old leader (the
// ZOOKEEPER-4643 trap). No committed txn may be lost or truncated, every
// server must start again, and the replicas must converge; the figure
// "failpoints" is the matrix of point/mode outcomes. The sweep starts at
// a cell the seed picks and ends with kills at random moments of a sync.
func SyncFailpointsScenario() *Scenario {
	o, fm := &Outcomes{}, &FailpointMatrix{}
	return &Scenario{
		ID: 3, Name: "failpoints during learner sync",
		// Frequent snapshots let a SNAP be forced in a second or two; small
		// preallocations keep the many log files small.
		Cluster:  Config{Servers: 3, SnapCount: 500, PreAllocSizeKB: 64},
		Duration: 12 * time.Second,
		Workloads: []Workload{
			&SetWorkload{Prefix: "/set", Clients: 3, ClientBase: 100, Think: time.Millisecond},
			&RegisterWorkload{Prefix: "/reg", Keys: 4, Clients: 3, ClientBase: 200, Think: time.Millisecond},
		},
		LinearPrefix: "/reg/",
		Nemesis: func(ctx context.Context, r *Run) {
			Cycle(500*time.Millisecond, FailpointSweep(FailpointCells, fm, KillDuringSync(800*time.Millisecond, o)))(ctx, r)
			fm.Figure(r)
			o.Figure(r, "kills")
		},
	}
}

// SnapCatchUpScenario is the "snapshot catch-up" scenario (docs/fault-model.md, #4): a follower is cut off until the leader has
// committed more txns than it keeps for a DIFF, so it must catch up by
// SNAP, while clients churn children of one parent (sequential,
// ephemeral, deletes) under a child watch and others add unique nodes.
// Checks: every sampled digest matches, the parent's pzxid, cversion and
// numChildren are equal everywhere (the tree comparison covers every
// Stat field of every node), sequence numbers are never reused.
func SnapCatchUpScenario() *Scenario {
	o, catchUp := &Outcomes{}, &Durations{}
	return &Scenario{
		ID: 4, Name: "lagging follower forced to SNAP",
		Cluster:  Config{Servers: 3, SnapCount: 1000000},
		Duration: 16 * time.Second,
		Workloads: []Workload{
			&ChurnWorkload{Prefix: "/churn", Clients: 5, ClientBase: 100},
			&SetWorkload{Prefix: "/set", Clients: 4, ClientBase: 200},
		},
		Nemesis: func(ctx context.Context, r *Run) {
			Cycle(2*time.Second, LagUntilSnap(11000, 25*time.Second, o, catchUp))(ctx, r)
			o.Figure(r, "sync")
			catchUp.Figure(r, "catch-up")
		},
	}
}

// SessionHoldersScenario is the "session holders" scenario (docs/fault-model.md, #5): session holders (long-lived ephemerals)
// and Curator-style lock clients while a holder's client is paused past
// its session timeout, a holder's server is stopped with SIGSTOP or cut
// off the quorum, a holder's link turns slow but stays live, and the
// leader's clock runs fast or leaps ahead (SkewClocks, within what a
// pinging session survives) while a follower's runs slow. Checks:
// a paused session expires and its ephemerals go everywhere; no session
// expires within half a timeout of the client hearing from it (ephemerals
// of a live session never go); no session is answered after its close;
// only owners delete lock nodes; no ephemeral outlives the run's sessions.
func SessionHoldersScenario() *Scenario {
	const timeout = 2 * time.Second
	ps, cs := &PausedSessions{}, &ClockSkews{}
	sc := &Scenario{
		ID: 5, Name: "session holders paused",
		Cluster:        Config{Servers: 3},
		Duration:       19 * time.Second,
		SessionTimeout: timeout,
		Workloads: []Workload{
			&HolderWorkload{Prefix: "/eph", Clients: 6, ClientBase: 200, Every: 100 * time.Millisecond},
			&LockWorkload{Prefix: "/lock", Clients: 4, ClientBase: 300, Hold: 200 * time.Millisecond},
		},
		Nemesis: Cycle(time.Second,
			PauseClient("c2", timeout*2+timeout/2, ps),
			SkewClocks(timeout, cs),
			PauseClientServer("c2", timeout*3/2),
			CutClientServer("c2", timeout*3/2),
			SlowClientLink("c2", 300*time.Millisecond, 2*timeout)),
	}
	sc.Check = func(_ context.Context, r *Run, c *Committed) { ps.Check(r, c); cs.Figure(r, c) }
	return sc
}

// ReconnectScenario is the "reconnect" scenario (docs/fault-model.md, #6): clients move their sessions from server to
// server every 700 ms while one follower at a time lags (the leader's
// messages to it are delayed), reading with watches and writing CAS
// registers. A server behind a session must refuse it (CLIENT_ZXID_AHEAD),
// and probes claim a just-written zxid on the lagging follower to check
// exactly that. Checks: monotonic reads and read-your-writes across
// moves, watch events before the data that triggered them, setWatches
// firing missed triggers exactly once, linearizable writes.
func ReconnectScenario() *Scenario {
	p := &Probes{}
	sc := &Scenario{
		ID: 6, Name: "reconnect to another server, one lagging",
		Cluster:        Config{Servers: 3, SyncLimit: 30},
		Duration:       12 * time.Second,
		SessionTimeout: 6 * time.Second,
		Workloads: []Workload{
			&RegisterWorkload{Prefix: "/reg", Keys: 5, Clients: 6, ClientBase: 100, Watch: true,
				Move: 700 * time.Millisecond, Think: 5 * time.Millisecond},
		},
		LinearPrefix: "/reg/",
		Nemesis:      Cycle(time.Second, LagFollower(800*time.Millisecond, 4*time.Second, p)),
	}
	sc.Check = func(_ context.Context, r *Run, _ *Committed) { p.Figure(r) }
	return sc
}

// DiskFaultsScenario is the "disk faults" scenario (docs/fault-model.md, #7): disk faults. Offline, between a kill and a
// restart: a bit flip or a zeroed byte in the newest log, its tail cut, a
// bit flip in or truncation of the newest snapshot, the data directory
// wiped. Online: the disk fills up (RLIMIT_FSIZE, which a preallocating
// log meets as EFBIG) or every fsync fails with EIO (errorfs in a chaos
// build) under the leader or a follower. A damaged server
// must refuse to start (it is then wiped and must rejoin by SNAP) or
// serve exactly the committed state; the healthy quorum keeps committing.
func DiskFaultsScenario() *Scenario {
	o := &Outcomes{}
	return &Scenario{
		ID: 7, Name: "disk faults",
		Cluster:  Config{Servers: 3, SnapCount: 2000, PreAllocSizeKB: 64},
		Duration: 16 * time.Second,
		Workloads: []Workload{
			&SetWorkload{Prefix: "/set", Clients: 2, ClientBase: 100, Think: time.Millisecond},
			&RegisterWorkload{Prefix: "/reg", Keys: 4, Clients: 3, ClientBase: 200, Think: time.Millisecond},
		},
		LinearPrefix: "/reg/",
		// Servers are killed or lose their disk, never cut off: no deposed
		// leader answers syncs, so a stale sync-then-read is a bug (a
		// member that cannot log must stop serving).
		StrictSyncReads: true,
		Nemesis: func(ctx context.Context, r *Run) {
			Cycle(time.Second, CorruptAndRestart(Corruptions, o), CorruptAndRestart(Corruptions, o), DiskFull(4*time.Second, o),
				SyncEIO(4*time.Second, o))(ctx, r)
			o.Figure(r, "outcomes")
		},
	}
}

// AdversariesScenario is the "adversarial clients" scenario (docs/fault-model.md, #8): hostile clients and peers — oversize and
// negative length prefixes, truncated frames, unknown opcodes, garbage,
// a huge multi and setWatches, a 10,000-level path, hundreds of idle
// connections, garbage and 1 GiB length prefixes on the election and
// quorum ports — while healthy clients run CAS registers. Checks: no
// server crashes, the quorum stays up, the healthy clients' history is
// correct; the figures are their p99 latency and the servers' peak memory.
func AdversariesScenario() *Scenario {
	return &Scenario{
		ID: 8, Name: "adversarial clients",
		Cluster:  Config{Servers: 3},
		Duration: 10 * time.Second,
		Workloads: []Workload{
			&RegisterWorkload{Prefix: "/reg", Keys: 6, Clients: 6, ClientBase: 100, Think: pacedThink},
		},
		LinearPrefix: "/reg/",
		Nemesis:      Adversaries(300, 2*time.Second),
		Check: func(_ context.Context, r *Run, _ *Committed) {
			var peak int64
			for _, s := range r.Cluster.Servers {
				if p := s.Proc(); p != nil && p.Running() {
					if kb, err := memoryHighWaterKB(p.Pid()); err == nil {
						peak = max(peak, kb)
					}
				}
			}
			r.Report.Figure("peak-rss", "%dMB", peak/1024)
		},
	}
}

// Scenarios returns every scenario of this package on the coordination
// service, by number; LedgerScenarios has the ledger store's (9 and 10).
func Scenarios() []*Scenario {
	return []*Scenario{PartitionsScenario(), KillScenario(), SyncFailpointsScenario(), SnapCatchUpScenario(), SessionHoldersScenario(), ReconnectScenario(), DiskFaultsScenario(), AdversariesScenario(),
		SlowConsumers(), ReconfigScenario()}
}
