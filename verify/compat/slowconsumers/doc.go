// Package slowconsumers runs the slow-consumer attack of package
// verify/slowconsumer — large reads pipelined and never read, a reader of
// a byte a second, a reader that stops half-way through a reply, and a
// thousand connections that each pipeline three large reads and never
// read — against a standalone Apache ZooKeeper 3.8 (verify/compat/zkreal)
// and a standalone keeper, one after the other in the same test, each
// under the same healthy load and ruok probes. It logs one line per
// server,
//
//	slowconsumers: server=zookeeper healthy_p50=… healthy_p99=… ruok_p99=… ruok_max=… peak_rss=…MB serving=yes …
//
// and asserts only what keeper promises (docs/backpressure.md): it keeps
// serving, ruok answers within the bound, the healthy p99 and the peak RSS
// stay under theirs. ZooKeeper's figures are reported, not judged. The
// package has tests only; without ZooKeeper installed the test skips,
// unless KEEPER_REQUIRE_ZK=1.
package slowconsumers
