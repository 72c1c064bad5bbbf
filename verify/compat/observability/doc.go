// Package observability compares keeper's mntr keys, Prometheus metrics
// and AdminServer commands with Apache ZooKeeper 3.8's in the same run:
// both servers get
// the same small workload, and the keys only one side prints must be
// exactly the ones docs/observability.md lists, with the reason keeper
// does not measure them.
package observability
