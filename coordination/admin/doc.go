// Package admin is the operator's view of a coordination server: the
// four-letter words (docs/zookeeper-protocol.md §8.1–8.2), the AdminServer's HTTP commands (docs/zookeeper-protocol.md
// §8.3) and Prometheus metrics.
//
// Every command reads the service core through Core.Inspect, which runs a
// function on the goroutine that owns the core. Commands copy what they
// need there and format it afterwards, so the core's loop is held only for
// the copy. Nothing here keeps a reference to the core.
//
// Output follows Apache ZooKeeper 3.8 byte for byte where tools parse it
// (srvr for go-zookeeper's FLWSrvr and zkServer.sh, cons for FLWCons, envi
// for kazoo's server_version, mntr for monitoring agents). The differences
// that remain are listed in the comments of the functions that produce
// them.
//
// The HTTP side serves
//
//	GET /commands             links to every command, as Jetty's AdminServer does
//	GET /commands/<name>      one command (a primary name or an alias) as JSON:
//	                          {"<field>": ..., "command": "<primary>", "error": null|"msg"}
//	GET /metrics              Prometheus text format, from a registry per Admin
//
// Apache ZooKeeper serves its Prometheus metrics on a separate port
// (metricsProvider.httpPort, 7000); keeper serves them on the admin
// server's /metrics instead, under ZooKeeper's metric names.
package admin
