// Package diff is a differential test: it runs the same randomized
// operation sequences against Apache ZooKeeper 3.8 (Debian's package,
// started by the test through verify/compat/zkreal) and against an in-process
// keeper, or against an ensemble of ZooKeeper servers and a mixed ensemble of
// keeper and ZooKeeper servers, and fails on any difference a client could
// see other than times and session ids.
//
// Everything lives in the package's tests; this file only documents it.
//
// # How a run works
//
// A seeded generator (gen_test.go) produces steps for three session slots.
// Each slot holds one session on keeper and one on ZooKeeper, and every step
// goes to the same slot on both servers, which run it at the same time. The
// steps cover every create mode and opcode (valid and invalid flags and
// TTLs), delete, setData, exists, getData, getChildren(2), getACL, setACL
// (valid and invalid ACLs, aversion checks), digest auth as several users,
// a wrong password and the super user, multi with failures anywhere,
// multiRead, sync, addWatch, checkWatches, removeWatches,
// getAllChildrenNumber, getEphemerals, whoAmI, closeSession followed by a
// new session, dropping a connection and reattaching with setWatches(2),
// refused reattaches, requests the server answers by closing the
// connection, and quotas: both servers run with enforceQuota=true, and
// quota nodes are made, changed, read and removed with the requests zkCli's
// setquota and delquota send (genquota_test.go), so creates, setDatas and
// multis below a quota meet its limits and every zookeeper_stats read is
// compared. Paths come from a small space (three names, depth three, plus
// the sequential nodes made so far and a few system and invalid paths), so
// NodeExists, NoNode, NotEmpty and NoChildrenForEphemerals are common.
//
// After a step the test pings every connection and waits for the reply: a
// server sends the notifications a write triggers before any later reply
// on the same connection, so the events each connection has received by
// then are a deterministic stream. The test then compares (compare_test.go):
//
//   - the reply header's error code and zxid. Both servers consume zxids
//     alike, but zkreal's readiness probe has already used some on
//     ZooKeeper, so each side's zxids are shown relative to its zxid when
//     the first test session was made;
//   - the reply body field by field, with session ids mapped to slot
//     labels, zxids rebased as above, and ctime/mtime replaced by what must
//     agree (zero or not; equal while version is 0; mtime never before
//     ctime), plus the body's length in bytes;
//   - handshakes, which connections the server closed, and the
//     notifications each connection received, in order (as a multiset for
//     session close and expiry, where ZooKeeper deletes ephemerals in hash
//     order).
//
// Children, getEphemerals and whoAmI lists are sorted, and so is each run of
// digest entries with equal perms in an ACL (what an "auth" entry expands
// to): ZooKeeper returns these in hash order.
//
// # Through every member of a mixed ensemble
//
// TestDifferentialMixed (mixed_test.go) runs the same steps with both sides
// ensembles of three real processes: the reference side three Apache
// ZooKeeper members, the tested side a mixed ensemble, once with a keeper
// member leading two ZooKeeper followers and once with a ZooKeeper member
// leading two keeper followers (the test checks who leads before the run).
// Slot i's sessions connect to member i+1 on both sides, so the leader and
// both followers take requests, forward writes and create sessions. What
// differs from the standalone run, on both sides alike:
//
//   - the barrier first sends a sync on every connection: a member applies
//     writes made through other members a little later, and the sync makes
//     it catch up with the leader's commit point (the notifications those
//     writes fire arrive before its reply). After a step that made or
//     reattached sessions (txns too), every connection is synced again;
//   - /zookeeper/config lists the members with their ports, which differ
//     between the two ensembles: each side names its ports by member before
//     the data is compared (the ports all have five digits, so lengths are
//     compared unchanged);
//   - the container and TTL reaper is off on every member (keeper's by
//     znode.container.checkIntervalMs in zoo.cfg), as on the standalone
//     servers;
//   - stray sessions are looked for on each side's leader, which lists every
//     session of the ensemble (there are none: nothing but four-letter
//     words reaches a member before the test's sessions);
//   - while a reply is late (500 ms) the test pings that connection: a
//     ZooKeeper 3.8.0 follower can hold a committed request until another
//     request reaches it (ZOOKEEPER-4537), and a ping wakes it without
//     changing anything. The run's summary says how many pings were sent.
//
// It runs 400 steps of seed 1 per ensemble (-seed and -diff.ops change
// that), about 15 s each once the members serve.
//
// # Intended differences
//
// keeper follows a few rules of later ZooKeeper releases (docs/zookeeper-protocol.md §11). The
// test normalizes exactly these and counts each normalization:
//
//   - exists() on a node the session may not read: keeper answers NoAuth
//     (3.8.4+), 3.8.0 answers with the Stat. Before such an exists the test
//     asks keeper alone whether it will refuse, sends the request without a
//     watch (so both servers register the same watches), and checks with
//     getData on both that the session indeed lacks READ.
//   - a create2 inside multi: keeper answers with a create2 result (3.7,
//     3.8.4+, 3.9), 3.8.0 with a create result. The paths must agree, and
//     keeper's Stat must be that of a node the multi created.
//
// Other differences are either keeper bugs (knownBugs in diff_test.go) or
// deviations awaiting a decision (undecided). Both switch off the requests
// that show them, by name, so the rest of a run keeps its value; each has a
// minimal reproduction in known_test.go, run with -diff.bugs.
//
// # Flags
//
//	-seed=N          run only seed N
//	-diff.ops=N      steps per seed (default 4000; 1000 with -short;
//	                 TestDifferentialMixed: 400 per ensemble)
//	-diff.trace      log every step and ZooKeeper's outcome (with -v)
//	-diff.ungate=a,b run switched-off kinds anyway ("all" for every one)
//	-diff.bugs       run the reproductions of knownBugs and undecided
//	-diff.disk       keeper keeps its log and snapshots on disk (snapshots
//	                 every ~1000 txns) instead of in memory
//
// A failure prints the seed, the step, both outcomes, the steps before it
// and the command that replays it, for example
//
//	KEEPER_REQUIRE_ZK=1 go test ./verify/compat/diff -run 'TestDifferential' -seed=7 -diff.ops=4000
package diff
