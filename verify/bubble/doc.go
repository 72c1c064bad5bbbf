// Package bubble runs the production coordination server whole inside a
// testing/synctest bubble, standalone (TestStandaloneBubble) or as a
// three-member ensemble (TestEnsembleBubble), and checks what it answers.
//
// verify/sim drives the work of the server's select loop through
// server.Member on one goroutine, so the select statement itself and the
// connection goroutines are never run there. Here they are: a standalone
// server.Server, started with Start as the binary starts it, runs its
// loop, persister, snapshot walk and writer, autopurge and one reader and
// one writer goroutine per connection, on the bubble's fake clock. Its
// storage is a vfs.MemFS and its client port an internal/memnet listener;
// keeper's own client (coordination/zkclient Sessions, which reconnect
// and reattach) dials it over the same network. Nothing in a run reads
// the machine's clock or touches a socket or a file, so whenever every
// goroutine waits, the bubble's time jumps to the next timer, and a run
// of several virtual minutes takes a fraction of a second.
//
// A run is drawn from a seed (Draw): the number of clients, their
// session timeouts and workloads over a few register znodes (create,
// setData, delete, getData, multi of check and setData, one-shot data and
// child watches), the snapshot interval and walk step, the log's
// preallocation, autopurge's interval, and when the server crashes and
// for how long it stays down. A crash cuts the network first (memnet's
// Crash: the server's sockets die with it), then takes what a power loss
// leaves of the disk (vfs.MemFS.CrashClone, sometimes letting part of
// the unsynced writes through, torn), then stops the old process's
// goroutines; a new server starts on the crash image at the same address.
// An ensemble's members each have their own disk and their own memnet
// Host, whose crash also takes down the connections the member dialled
// (to its leader, its election peers); a crash hits the leader of the
// moment two times in three, and the last one always does.
// The checks (check.go):
//
//   - the history of every register operation, across all crashes and a
//     final one before the last reads, is linearizable (porcupine with
//     verify/sim/model's register): an acknowledged write lost in a crash,
//     or a read of data never acknowledged, shows as a violation. In an
//     ensemble the workload's reads are left out (a follower may answer
//     from behind the leader, as ZooKeeper's do) and the last reads each
//     follow a sync;
//   - a read made after a watch fired sees the change that fired it (a
//     later mzxid or pzxid, or the node gone);
//   - a request gets an answer, and a session is not expired, while the
//     standalone server stays up (an ensemble's members drop their
//     clients during elections, so its runs skip this): a loop that stops
//     (blocked on its own inbox, say) fails here;
//   - every server stops within a virtual minute of Close; one that
//     cannot is reported, and synctest then reports the bubble's
//     goroutines deadlocked, with their stacks.
//
// The Go scheduler still orders the goroutines, so a seed fixes the
// workload, the configuration and the crash times, not the interleaving:
// replaying a seed (go test -run 'TestStandaloneBubble$' ./verify/bubble
// -seed=N; -bubble.log prints the logs) runs the same scenario, which usually, not always, fails the
// same way.
package bubble
