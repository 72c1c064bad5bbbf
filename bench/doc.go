// Package bench is keeper's load tool. It speaks the ZooKeeper client
// protocol (through keeper's own client, zkclient), so it measures Apache
// ZooKeeper and keeper alike; `keeper bench` is its command line.
//
// # Workloads
//
// Run drives Clients sessions, spread round-robin over the servers, each
// keeping Inflight requests outstanding in a closed loop: a reply's
// callback sends that slot's next request at once. "1×1" (one session,
// one request in flight) measures latency; "16×16" measures throughput.
//
//	get, exists  a random znode of the key space (KeySpace znodes of
//	             SizeBytes, created under /bench-<random> before the run)
//	set          setData of SizeBytes on a random znode, any version
//	create       persistent znodes of SizeBytes at unique paths
//	             /bench-<random>/c-<client>-<seq>
//	mixed        ReadRatio gets, the rest sets, drawn per request
//	watch        fan-out: Watchers sessions leave a data watch on one
//	             shared znode, a writer sets it, and the round lasts until
//	             the last notification arrives; Rounds rounds, each re-arming
//	             the watches first (see watch.go)
//	fill         creates KeySpace znodes of SizeBytes under a fresh root
//	             and leaves them, to build a large tree (see fill.go)
//	ready        retries a getData of ReadyPath until one is served: the
//	             time from a server's process start to its first read,
//	             e.g. a restart with a large tree on disk (see ready.go)
//
// Setup and cleanup (deleting everything under the root) are not timed.
// A Warmup period runs the load without recording it.
//
// # Measurement
//
// A request's latency runs from just before it is handed to zkclient to
// the start of its reply's callback. Each client records into its own
// Histogram (log-linear buckets, relative error below 1%, no allocation
// per value); they are merged when the run ends. Only replies arriving in
// the measured interval count; requests still outstanding when it ends
// are waited for but not counted, except as errors if they fail. Errors
// are counted by result code; an API error (NoNode, say) does not stop the
// loop, a lost connection stops that client.
//
// With Config.CPUPIDs, the servers' CPU time (user + system, from
// /proc/<pid>/stat, 10 ms resolution, summed over the pids: one server, or
// every member of an ensemble) is sampled when the measured interval
// starts and ends, and reported with the CPU time per request.
// The tool's own CPU time is reported the same way: above roughly 50,000
// requests per second on two cores, the client is what is measured, and
// CPU time per request is the comparison that still means something.
//
// # The tool's ceiling and the disk's
//
// NullServer answers every request at once and stores nothing; the same
// workload against it gives the tool's own ceiling, to be measured in the
// same run as the servers. Fsync measures the disk under the servers:
// write plus fdatasync, appending to a growing file and overwriting inside
// a preallocated one.
//
// # Output
//
// Result and FsyncResult marshal as one JSON line each (MarshalLine), for
// scripts to collect:
//
//	{"op":"get","servers":["127.0.0.1:2181"],"clients":16,"inflight":16,
//	 "size_bytes":100,"duration_sec":10,"ops":413000,"ops_per_sec":41300,
//	 "p50_us":5890.1,"p99_us":9120.4,"p999_us":12011.5,"max_us":20123.9,
//	 "errors":0,"client_cpu_seconds":11.2,"server_cpu_seconds":10.4,
//	 "server_cpu_us_per_op":25.2}
//
// (wrapped here; the figures are illustrative.)
package bench
