// Package mixed runs ensembles that mix keeper servers with real Apache
// ZooKeeper 3.8 servers (Debian's package, QuorumPeerMain) on loopback:
// keeper leading Java followers, keeper following a Java leader, and a
// ZooKeeper ensemble rolled to keeper one server at a time and back under
// writes (docs/migration.md). Its tests write through every member, then
// check that no acknowledged write is lost and that every member holds the
// same tree (docs/zookeeper-protocol.md §10.5). TestMixedObservers also
// holds every member's admin commands that depend on the ensemble to
// ZooKeeper's, role by role (docs/observability.md, "AdminServer
// commands").
//
// Every test starts its own ensemble (testhost ports, its own directories)
// and runs in parallel with the others, as many at once as go test's
// -parallel allows (the number of CPUs by default): they spend most of
// their time waiting for processes to start, elect and sync, not
// computing, so running them one after another left the machine idle.
//
// The tests skip when ZooKeeper is not installed, unless KEEPER_REQUIRE_ZK
// is set (make test sets it), as the other compat tests do.
package mixed
