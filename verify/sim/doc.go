// Package sim is keeper's deterministic simulator: it runs a whole
// ensemble — 3 to 5 peer.Peers, each driving a zab.Node and a zkcore
// — and its clients in virtual time, under faults, and then checks what
// the clients saw and what the replicas hold against ZooKeeper's
// guarantees. A run is a pure function of its seed: any failure replays
// with
//
//	go test ./verify/sim -run TestSimulation -seed=N
//
// # The world
//
// Time is virtual: a min-heap of events (message deliveries, ticks, client
// wake-ups) ordered by time and then by the order they were scheduled. Run
// advances it a tick at a time; each server's zkcore.Now is derived from
// it (a skewed wall clock, a monotonic clock with its own origin).
//
// Links between servers behave like TCP connections: FIFO; when one fails
// (partition, crash, reset, or a peer closing it) what is in flight is
// lost, and each end learns of it by a MsgDisconnected that arrives before
// anything sent later on that link; until an end has learned of it, what
// it sends is lost too (it is writing to the dead connection). Election
// notifications travel apart, may be lost, and are not ordered.
//
// Disks (disk.go) are the production storage: each member persists
// through coordination/server's MemberLog — Apache ZooKeeper's transaction
// log (txnlog), snapshots (snap) and epoch files, written as a real member
// writes them — on its own in-memory filesystem (vfs.MemFS), and every
// start recovers with the production recovery code (OpenMemberLog: newest
// valid snapshot, torn tail repaired, log replayed, unaccounted data
// refused). A crash keeps what MemFS.CrashClone leaves: the synced bytes
// and directory entries, and a random prefix of the rest, the last write
// perhaps torn. Failpoints crash a server at a storage call (before
// saving epochs, before an append, between append and sync, before a
// truncate or a snapshot install) or at one of the next few file
// operations inside one (crashfs.go): between an epoch file's write and
// its rename, half way through a snapshot, between a log cut and the
// removal of the snapshots above it. A start that refuses its files is a
// violation.
//
// Members run the production loop's work (persister.go): each member's
// peer sits in a coordination/server Member, whose methods are those the
// server's select loop dispatches to — Drive (client bytes, new writes
// and Zab's Early messages out at once, one batch at a time to disk,
// the role, a snapshot and a log roll when snapCount says), Persist and
// Finish (the persister's work and the loop's when a batch comes back),
// a snapshot walk's steps, its writer and the writer's report, and the
// steps of an autopurge pass (its plan, each file it removes, its end).
// The simulator plays the goroutines between them: every hand-off is an
// event whose delay is drawn from the seed, so messages, ticks and client
// requests arrive while a batch is on its way to disk, writes go on
// between the steps of a fuzzy snapshot, a TRUNC or SNAP batch comes
// while a snapshot job runs (the member holds it until the job ends, as a
// server does), and autopurge removes files while the member goes on. A
// pass holds the server's storage lock from its plan to its end, and a
// TRUNC or SNAP batch due on disk meanwhile waits for it, as the
// persister goroutine does; the simulator learns that from the lock
// itself (Member.PersistWaits), so a server without it would let the
// interleaving happen. A crash loses what the persister had not written
// and a snapshot half done; the next start recovers from whatever
// snapshots, rolled logs and purges left on disk. snapCount (or none),
// the walk's step size, the hand-off delays, the purge interval and the
// time a purge step takes are drawn per run; the fuzzy walk visits
// children in name order (datatree.StartFuzzyBodyInOrder), so that a run
// stays a pure function of its seed (TestReplayIsExact). The connection goroutines and the
// select statement itself are not simulated (a loop blocked on its own
// inbox is out of reach). Standalone runs (Options.Standalone,
// standalone.go) drive one standalone server through the same Member and
// persister batches, without Zab: writes queued as they come, a batch the
// persister takes when the last one came back, the same snapshots, log
// rolls, autopurge, failpoints and crashes.
// docs/fault-model.md lists which past bugs the simulator finds when
// their fixes are undone, before and after it ran the member's loop work.
//
// Clients (client.go) each hold one session on one connection, pipeline a
// few requests as zkproto records through the server core, decode the
// reply frames, time out like the Java client (then the outcome of what was
// in flight is unknown and the session is reattached elsewhere, with its
// password and last zxid), start a new session when told theirs expired,
// and sometimes close or abandon their session. The workload is a few
// register znodes (create, compare-and-set setData, delete; every write a
// unique payload), a few contended ephemeral znodes, reads with and without
// watches, and syncs.
//
// Faults (faults.go) are drawn per tick at rates drawn per seed: crashes
// (a quorum stays up, except in runs that allow losing it), failpoints,
// restarts, partitions (the leader alone, random halves, single links),
// link resets, slow links, paused processes, and client connection resets.
//
// # Reconfiguration
//
// With Options.Reconfig (TestReconfigSimulation) the members run as
// servers with reconfigEnabled=true do (reconfig.go): each reads its
// configuration at every start from ZooKeeper's files on its own disk (a
// static zoo.cfg, the dynamic file it comes to name, zoo.cfg.dynamic.next)
// with zoocfg.Load, and persists every configuration zab hands out through
// coordination/server's ConfigFiles on the same crash-prone filesystem as
// its log; the core gets /zookeeper/config's text and version and the
// node's view of the ensemble; zab gets peer.MembershipCodec. Some servers
// start outside the first configuration, configured as a server about to
// be added is (the ensemble and itself). An operator client
// (operator.go) authenticates as the super user and issues reconfigs at
// random — add, remove (the leader too), voter to observer and back,
// replace the member list — whose every refusal is legal. A reconfig is a
// write to the checkers below; reconfig.go adds that no configuration
// becomes active anywhere unless a quorum of the voters before it and a
// quorum of its own hold its txn durably, that one version names one
// configuration, and that after healing every member of the final
// configuration has it active and shows it in /zookeeper/config. Every
// run also checks that no two servers serve as leader of one epoch.
//
// # The checks
//
// While the run goes on, the oracle (oracle.go) records every logged txn
// (one payload per zxid), every txn a replica applied (such a txn must
// never be truncated), each replica's tree digest at every zxid (equal
// zxids, equal digests) and each replica's history. Check then heals the
// cluster, lets the clients finish and leave, waits for convergence and for
// every session to expire, replays the final committed history on a fresh
// tree, and runs the checkers, one per file:
//
//	check_replicas.go      every replica ends with the final history; digests
//	                       match the replay at every zxid
//	check_durability.go    nothing applied or acknowledged is lost
//	check_fifo.go          replies in request order; a session's zxids never
//	                       go back; its writes commit in order
//	check_reads.go         a read returns the committed state at its zxid
//	check_ephemerals.go    no session acts after its close; no ephemeral
//	                       outlives its session (also sampled on every
//	                       replica while the run goes on); optionally, no
//	                       session expires early (Options.CheckEarlyExpiry)
//	check_watches.go       an event arrives before any reply reflecting its
//	                       change, and only for an armed watch
//	check_linearizable.go  the zxid order of acknowledged writes respects
//	                       real time, and register writes are linearizable
//	                       (porcupine, model verify/sim/model), timed-out writes
//	                       patched from the final history
package sim
