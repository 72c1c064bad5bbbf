// Package reconfig tests dynamic reconfiguration on real processes with
// clients nobody here wrote: kazoo's own reconfig tests through kazoo's
// harness, against Apache ZooKeeper 3.8 and against keeper in the same
// run, and go-zookeeper's own reconfig integration tests through its
// harness against keeper (docs/configuration.md, Dynamic reconfiguration).
package reconfig
