// Package bubble runs the production coordination server whole inside a
// testing/synctest bubble and checks what it answers.
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
// The checks (check.go):
//
//   - the history of every register operation, across all crashes and a
//     final one before the last reads, is linearizable (porcupine with
//     verify/sim/model's register): an acknowledged write lost in a crash,
//     or a read of data never acknowledged, shows as a violation;
//   - a read made after a watch fired sees the change that fired it (a
//     later mzxid or pzxid, or the node gone);
//   - a request gets an answer, and a session is not expired, while the
//     server stays up: a loop that stops (blocked on its own inbox, say)
//     fails here, and if it cannot even be stopped, synctest reports the
//     deadlock when the run ends.
//
// The Go scheduler still orders the goroutines, so a seed fixes the
// workload, the configuration and the crash times, not the interleaving:
// replaying a seed (go test -run TestStandaloneBubble ./verify/bubble
// -seed=N) runs the same scenario, which usually, not always, fails the
// same way.
package bubble
