// Package chaos injects faults into real keeper processes and judges what
// their clients saw: the scenarios of docs/fault-model.md, with its
// fault catalogue and checks. It is tier 4 (verification); the
// tests run every scenario briefly (`go test ./chaos`), `make chaos` runs
// them for longer.
//
// # Processes and the network
//
// A Cluster runs `keeper server` processes (BuildKeeper builds cmd/keeper
// once) on loopback; Process is a plain child-process launcher (output to
// a log file, SIGKILL, SIGTERM, SIGSTOP/SIGCONT, death with the harness)
// that a bookie launcher can reuse for `keeper bookie`.
//
// Every link between nodes runs through a Proxy the harness controls. A
// server listens where its own server.N line says, and dials the others
// where theirs say, so each server gets a zoo.cfg of its own in which its
// own line names its real quorum and election ports and every other
// server's line names a proxy that forwards to that server's real port:
//
//	s1's zoo.cfg: server.1=127.0.0.1:Q1:E1   server.2=127.0.0.1:P(1→2)q:P(1→2)e ...
//	s2's zoo.cfg: server.1=127.0.0.1:P(2→1)q:P(2→1)e   server.2=127.0.0.1:Q2:E2 ...
//
// No server change is needed: the election handshake carries the
// dialler's address, but keeper (like ZooKeeper) dials back the address in
// its own configuration, never the one sent. Clients ("c1", "c2", ...)
// reach a server through a proxy of their own too; the four-letter words
// and the checkers' reads go to the real ports.
//
// The Network holds one Rule per direction between named nodes:
// blackhole (bytes and the end of stream are held, new connections wait),
// latency with jitter, and loss. The links are TCP streams, so loss shows
// as TCP shows it to the application — a late chunk (RetransmitDelay) —
// never as a hole in the stream. Partition, IsolateLeader, RandomHalves
// and Bridge build partitions from rules; Reset sends RSTs.
//
// # Clients and histories
//
// The harness has its own small client (Conn, and Client around it):
// unlike zkclient it resumes a session on another server (session id,
// password, last seen zxid), tells a refused handshake
// (CLIENT_ZXID_AHEAD, not serving) from a lost one, keeps a session's xids
// across connections so that every request can be found in the committed
// log by session and xid, re-registers watches with setWatches, and can be
// paused to stand for a stopped client process. Every request, handshake
// and notification goes into a History with its invocation and return
// times, reply zxid and result; a request without a reply has an unknown
// outcome.
//
// Workloads: CAS registers (getData/exists/getChildren2, setData with the
// version last seen, blind sets, sync-then-read, deletes, creates, unique
// values, optional watches and session moves), unique creates (a set),
// create/delete churn under one parent with a child watch, Curator-style
// ephemeral-sequential locks, and long-lived ephemeral holders.
//
// # Checks
//
// At the end the network heals, paused servers continue, stopped ones
// start, clients close their sessions, and the servers converge. The
// committed history is then read from the servers' txn logs (ReadCommitted:
// logs must agree, be gapless, and be prefixes of one history except
// where a SNAP's snapshot covers them) and replayed from an empty tree.
// Against it:
//
//   - every write's txn is found by session and xid: an acknowledged write
//     must be there (else it is lost), with the reply's code, zxid and
//     version; a write with an unknown outcome took effect exactly if its
//     txn is there;
//   - the register writes are linearizable (porcupine, verify/sim/model's register
//     model, the unknown writes patched from the log);
//   - writes commit in real-time order;
//   - every read returns exactly the committed state (data and every Stat
//     field) at the zxid in its reply header, and that zxid is committed;
//   - a session's zxids never go back, across its connections (monotonic
//     reads, read-your-writes; a lagging server must refuse it);
//   - no session is answered after its close; none expires sooner than
//     its timeout, less syncLimit (a cut-off follower answers pings until
//     it notices), after its client last heard from it; only owners
//     delete lock nodes; no ephemeral outlives the sessions;
//   - watches fire once, with the type of the first change after their
//     zxid, before any reply that shows the change; setWatches fires the
//     triggers missed while disconnected (ZooKeeper's rules);
//   - every running server's tree equals the replayed tree, node by node;
//     every (zxid, digest) sampled from the hash four-letter word during
//     the run equals the replay's digest there (keeper's stand-in for
//     ZooKeeper's per-txn digest check).
//
// Each scenario prints one line,
//
//	chaos: scenario=N ops=… faults=… violations=0 lost=0 unavailable=…s …
//
// with its figures (ops/s before, during and after the faults, p99,
// restart and catch-up times, expiry lateness, refused handshakes, …). A
// failed run keeps its directory under os.TempDir(): history.json,
// report.txt, and every server's zoo.cfg, data and logs; Recheck judges it
// again offline.
//
// # The ledger store (scenarios 9 and 10)
//
// LedgerScenarios run on a metadata server and `keeper bookie` processes
// (Bookies). A bookie listens on 127.0.0.(10+i):P and advertises
// 127.0.0.1, so its id and registered address are 127.0.0.1:P, where the
// harness's front for it listens. The front tells which process dialled
// it (its socket's inode among a registered child's descriptors, from
// /proc; Bookies.Own) and passes the connection through the Network proxy
// from that node ("w1" for a `keeper ledger write` child, "h" for the
// harness's own clients) to the bookie: one writer can be cut off one
// bookie. The fronts also parse the requests going by, v3 or v2, to count
// the entries recovery writes back, and can swallow one request of a kind
// (a fencing read, a LAC read: READ_LAC, or in v2 a plain read of entry −1)
// from one node to one bookie, leaving the connection open
// (Bookies.DropOne). Scenario 9 races a writer process against
// a recovery; scenario 10 kills, restarts and wipes bookies under a writer
// and two following readers. checkLedger judges each ledger: closed, not
// before any acknowledged entry, every entry read back as sent, in order,
// and stored at Qa or more bookies of its write set, read from each
// directly. V2(sc) runs a scenario with every ledger client, the writer
// processes (--v2) and the harness's own, on BookKeeper's v2 protocol, as
// Pulsar's clients are; scenarios 9 and 10 run both ways.
//
// # Slow consumers (scenario 11)
//
// SlowConsumers attacks one server at a time with the clients of package
// verify/slowconsumer — large reads pipelined and never read, a reader of
// a byte a second, one that stops half-way through a reply, and 2,000
// connections that each pipeline a few reads and never read — while
// healthy clients run CAS registers and every server answers ruok five
// times a second. Besides the usual checks it holds the servers to the
// bounds of docs/backpressure.md: ruok within 2 s, the healthy operations'
// p99 under 1 s, every server's peak RSS under 1 GiB, no crash; its
// figures are the attacks and the connections the server closed, by kind,
// ruok and healthy latencies, and every server's peak RSS.
// verify/compat/slowconsumers runs the same attack against Apache
// ZooKeeper and keeper side by side. SlowBookieConsumers (scenario 12)
// does the same to one bookie at a time with READ_ENTRY of a 1 MB entry
// on v3 connections, dialled straight to the bookie, while a writer adds
// and a reader tails; it holds the healthy adds' p99 under 1 s and every
// bookie's peak RSS under 1.2 GiB, and checks every ledger as scenario 10
// does.
//
// # Hooks in the binary
//
// The harness builds keeper with the chaos build tag (BuildKeeper). Such a
// binary opens the server's and the bookie's storage through internal/vfs/errorfs
// when KEEPER_FAULTS_FILE names a file, and loads errorfs rules from it
// (errorfs.ParseLine: "ops=anysync err=EIO") at start and on SIGUSR1
// (Process.ReloadFaults); release builds have no such hook. Scenario 7
// uses it for EIO on fsync (SyncEIO). The file's "clock …" lines
// (internal/skewclock: "clock rate=1.5 offset=300ms") skew the monotonic
// clock that times the server's session expiry and Zab ticks; scenario 5
// runs the leader's fast or leaping and a follower's slow (SkewClocks).
// With KEEPER_DROP_UNSYNCED=1 (Config.DropUnsynced, scenarios 2 and 10)
// the storage keeps written bytes in the process until they are synced
// (internal/vfs/lazyfs), so that a kill loses the un-synced ones, torn, and an
// fsync it interrupts is rolled back at the next start to a random
// prefix, as a power loss would (figure torn-tails-repaired).
// The file's "failpoint …" lines (internal/failpoint: "failpoint
// name=learner-truncated action=kill count=1") arm named points at the
// durability points of learner sync and snapshot writing, where the
// process kills itself with SIGKILL; scenario 3 sweeps them across DIFF,
// TRUNC and SNAP (FailpointSweep) and reports the matrix.
package chaos
