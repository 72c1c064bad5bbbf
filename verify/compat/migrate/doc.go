// Package migrate checks that keeper and Apache ZooKeeper 3.8 can each
// start on a data directory the other wrote, and serve exactly the tree
// the other served: every path, its data (null and empty kept apart), its
// ACL and every Stat field.
//
// It is a test-only package (see migrate_test.go). The tests run a real
// ZooKeeper through verify/compat/zkreal and skip without one, unless
// KEEPER_REQUIRE_ZK is set.
package migrate
