// Package ensemble runs real keeper server processes as ZooKeeper
// ensembles on loopback and checks what replication promises clients:
//
//   - TestLeaderKillUnderLoad: go-zookeeper clients, each given every
//     member's address, write unique znodes while the leader is killed with
//     SIGKILL again and again; writes resume on a new leader, the killed
//     member rejoins, no acknowledged write is lost, every member ends with
//     the same digest, and the unavailability window of each kill is
//     reported (tickTime 2000, initLimit 10, syncLimit 5).
//   - TestFollowerCatchUpBySnap: a follower stopped while 100,000 txns are
//     written comes back, is brought up to date by SNAP (the leader's
//     snapshot appears in its data directory) and serves the leader's data.
//   - TestObservers: a five-server ensemble with two observers takes writes
//     through the observers, survives a leader kill, and replicates
//     everything to all five.
//   - TestSessionExpiryProduction: with tickTime 2000, go-zookeeper
//     sessions attached to the leader and to a follower die; every
//     ephemeral goes, none before the timeout after its session's last
//     request, and the time from death to expiry is reported.
//   - TestSessionFailover: a go-zookeeper session holding an ephemeral
//     survives the kill of the member it is connected to (a follower, then
//     the leader): it moves to another member with the same session id and
//     the ephemeral stays.
//
// The package has tests only. Its launcher (launcher_test.go, over
// verify/compat/internal/launcher, which the mixed ensembles share) builds
// the keeper binary once per test run, writes a zoo.cfg and myid file per
// member with free loopback ports, starts, stops, kills and restarts the
// processes, keeps each run's log, and prints the log tails of every member
// when a test fails. Every wait polls with a deadline.
package ensemble
