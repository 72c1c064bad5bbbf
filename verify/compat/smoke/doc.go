// Package smoke runs Apache ZooKeeper's own command-line clients against
// an in-process keeper server and compares what they print with golden
// files recorded from Apache ZooKeeper 3.8:
//
//	zkCli.sh   (Java)   testdata/zkcli.txt    -> testdata/zkcli.golden
//	cli_mt     (C)      testdata/cli_mt.txt   -> testdata/cli_mt.golden
//	kazoo      (Python) testdata/kazoo_smoke.py -> testdata/kazoo.golden
//
// The package has tests only. Output is normalized before comparison
// (zxids become Z1, Z2, ... in order of appearance, times and session ids
// are masked, child lists that the server may return in any order are
// sorted), so a golden file holds exactly the behaviour a client can rely
// on.
//
// Each client runs against Apache ZooKeeper too (verify/compat/zkreal), so the
// golden files are checked against the real thing on every run; without
// ZooKeeper installed that half is skipped. KEEPER_REQUIRE_ZK=1 turns a
// missing client or server into a failure.
//
// After changing a script, re-record its golden file from Apache ZooKeeper
// with
//
//	go test ./verify/compat/smoke -update
package smoke
