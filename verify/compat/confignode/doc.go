// Package confignode compares /zookeeper/config, the node that holds an
// ensemble's configuration, between keeper and a real Apache ZooKeeper 3.8
// started with the same zoo.cfg: its bytes, its stat and its ACL, for a
// standalone server and for an ensemble (of one participant, with
// observers that need not run). The tests skip when ZooKeeper is not
// installed, or fail under KEEPER_REQUIRE_ZK (verify/compat/zkreal).
package confignode
