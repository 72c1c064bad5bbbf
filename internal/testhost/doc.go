// Package testhost tells tests about the machine they run on: which TCP
// ports they may hand to a server they start, and how much slower than an
// idle machine it runs now, the factor that tests scale their deadlines by
// (docs/development.md, "Tests on a busy machine").
//
// Ports. A test that starts a process (or an in-process server whose
// address must be known before it listens, such as an ensemble member)
// has to name its port in advance. Asking the kernel for one (listen on
// :0, close, hand the number over) races: the port is in the kernel's
// ephemeral range, and any outgoing connection on the machine, of this
// test or of a package tested beside it, may take it before the server
// binds. Ports gives out ports outside the ephemeral range instead
// (/proc/sys/net/ipv4/ip_local_port_range; below it from 10000, and above
// it), which the kernel never picks for an outgoing connection, each at
// most once per process, and from blocks of ports that this process holds
// an flock(2) on for its life, so that two test processes (two packages,
// or two worktrees' suites) never hand out the same port. A port is handed out only if it can be bound
// on every address at that moment.
//
// Time. Timescale is KEEPER_TEST_TIMESCALE when set, else a factor
// measured once per process; Scale multiplies a deadline by it. A
// deadline that bounds how long a test waits for something that must
// happen is scaled; what a test asserts never depends on it.
package testhost
