package admin

import "slices"

// metricKind is how ZooKeeper's metrics provider holds a metric, which
// decides how mntr prints it and which Prometheus type exports it.
type metricKind int

const (
	// kindGauge is sampled when read: a field of the core or the quorum.
	kindGauge metricKind = iota
	// kindCounter prints as one number, and exports as a counter.
	kindCounter
	// kindCounterSet prints <key>_<name> per key, and exports as a counter
	// labelled key.
	kindCounterSet
	// kindSummary prints avg_, min_, max_, cnt_ and sum_<name> (and p50_,
	// p95_, p99_, p999_ when detailed), and exports as a summary.
	kindSummary
	// kindSummarySet prints a summary per key as <x>_<key>_<name>, and
	// exports as a summary labelled key.
	kindSummarySet
)

// catalogEntry is one of ZooKeeper 3.8's metrics.
type catalogEntry struct {
	name     string
	kind     metricKind
	detailed bool // ZooKeeper's DetailLevel.ADVANCED: percentiles too
}

// catalog lists every metric Apache ZooKeeper 3.8 registers, in the order
// its mntr prints them: gauges, counters, counter sets, summaries, detailed
// summaries, summary sets, detailed summary sets. The default metrics
// provider keeps each kind in a Java ConcurrentHashMap, so the order
// within a kind is the map's bucket order: fixed, not sorted. It was taken
// from a 3.8.0 server's mntr, with the leader's gauges placed by the same
// bucket rule (docs/observability.md).
//
// mntr prints an entry only when keeper measures it: a gauge that
// gauges() returns, or a metric some component registered under that name.
// quorumCatalog is the catalog in a quorum member's order. On an
// ensemble's leader and followers ZooKeeper 3.8 prints avg_latency before
// num_alive_connections, the other way round from a standalone server:
// the two share a bucket of its gauge map (a ConcurrentHashMap, whose
// order within a bucket follows the insertions and the resizes, and a
// quorum member registers more gauges). That is the only difference in
// order verify/compat/mixed's TestMixedEnsemble finds against a ZooKeeper
// leader and follower.
var quorumCatalog = func() []catalogEntry {
	out := slices.Clone(catalog)
	i := slices.IndexFunc(out, func(e catalogEntry) bool { return e.name == "num_alive_connections" })
	j := slices.IndexFunc(out, func(e catalogEntry) bool { return e.name == "avg_latency" })
	out[i], out[j] = out[j], out[i]
	return out
}()

var catalog = []catalogEntry{
	// gauges
	{name: "ephemerals_count", kind: kindGauge},
	{name: "num_alive_connections", kind: kindGauge},
	{name: "avg_latency", kind: kindGauge},
	{name: "min_proposal_size", kind: kindGauge},
	{name: "outstanding_requests", kind: kindGauge},
	{name: "znode_count", kind: kindGauge},
	{name: "global_sessions", kind: kindGauge},
	{name: "non_mtls_remote_conn_count", kind: kindGauge},
	{name: "last_client_response_size", kind: kindGauge},
	{name: "packets_sent", kind: kindGauge},
	{name: "packets_received", kind: kindGauge},
	{name: "max_proposal_size", kind: kindGauge},
	{name: "max_client_response_size", kind: kindGauge},
	{name: "synced_followers", kind: kindGauge},
	{name: "connection_drop_probability", kind: kindGauge},
	{name: "watch_count", kind: kindGauge},
	{name: "synced_non_voting_followers", kind: kindGauge},
	{name: "synced_observers", kind: kindGauge},
	{name: "auth_failed_count", kind: kindGauge},
	{name: "min_latency", kind: kindGauge},
	{name: "max_file_descriptor_count", kind: kindGauge},
	{name: "approximate_data_size", kind: kindGauge},
	{name: "open_file_descriptor_count", kind: kindGauge},
	{name: "last_proposal_size", kind: kindGauge},
	{name: "pending_syncs", kind: kindGauge},
	{name: "leader_uptime", kind: kindGauge},
	{name: "local_sessions", kind: kindGauge},
	{name: "uptime", kind: kindGauge},
	{name: "max_latency", kind: kindGauge},
	{name: "outstanding_tls_handshake", kind: kindGauge},
	{name: "learners", kind: kindGauge},
	{name: "min_client_response_size", kind: kindGauge},
	{name: "non_mtls_local_conn_count", kind: kindGauge},
	{name: "quorum_size", kind: kindGauge},
	// counters
	{name: "proposal_count", kind: kindCounter},
	{name: "watch_bytes", kind: kindCounter},
	{name: "outstanding_changes_removed", kind: kindCounter},
	{name: "throttled_ops", kind: kindCounter},
	{name: "stale_requests_dropped", kind: kindCounter},
	{name: "large_requests_rejected", kind: kindCounter},
	{name: "insecure_admin_count", kind: kindCounter},
	{name: "connection_rejected", kind: kindCounter},
	{name: "cnxn_closed_without_zk_server_running", kind: kindCounter},
	{name: "sessionless_connections_expired", kind: kindCounter},
	{name: "looking_count", kind: kindCounter},
	{name: "dead_watchers_queued", kind: kindCounter},
	{name: "stale_requests", kind: kindCounter},
	{name: "connection_drop_count", kind: kindCounter},
	{name: "learner_proposal_received_count", kind: kindCounter},
	{name: "digest_mismatches_count", kind: kindCounter},
	{name: "dead_watchers_cleared", kind: kindCounter},
	{name: "response_packet_cache_hits", kind: kindCounter},
	{name: "bytes_received_count", kind: kindCounter},
	{name: "add_dead_watcher_stall_time", kind: kindCounter},
	{name: "request_throttle_wait_count", kind: kindCounter},
	{name: "requests_not_forwarded_to_commit_processor", kind: kindCounter},
	{name: "response_packet_cache_misses", kind: kindCounter},
	{name: "ensemble_auth_success", kind: kindCounter},
	{name: "prep_processor_request_queued", kind: kindCounter},
	{name: "learner_commit_received_count", kind: kindCounter},
	{name: "stale_replies", kind: kindCounter},
	{name: "connection_request_count", kind: kindCounter},
	{name: "response_bytes", kind: kindCounter},
	{name: "ensemble_auth_fail", kind: kindCounter},
	{name: "diff_count", kind: kindCounter},
	{name: "response_packet_get_children_cache_misses", kind: kindCounter},
	{name: "connection_revalidate_count", kind: kindCounter},
	{name: "quit_leading_due_to_disloyal_voter", kind: kindCounter},
	{name: "snap_count", kind: kindCounter},
	{name: "unrecoverable_error_count", kind: kindCounter},
	{name: "unsuccessful_handshake", kind: kindCounter},
	{name: "commit_count", kind: kindCounter},
	{name: "stale_sessions_expired", kind: kindCounter},
	{name: "response_packet_get_children_cache_hits", kind: kindCounter},
	{name: "sync_processor_request_queued", kind: kindCounter},
	{name: "outstanding_changes_queued", kind: kindCounter},
	{name: "request_commit_queued", kind: kindCounter},
	{name: "ensemble_auth_skip", kind: kindCounter},
	{name: "skip_learner_request_to_next_processor_count", kind: kindCounter},
	{name: "tls_handshake_exceeded", kind: kindCounter},
	{name: "revalidate_count", kind: kindCounter},
	// counter sets
	{name: "quota_exceeded_error_per_namespace", kind: kindCounterSet},
	// summaries
	{name: "socket_closing_time", kind: kindSummary},
	{name: "proposal_process_time", kind: kindSummary},
	{name: "leader_unavailable_time", kind: kindSummary},
	{name: "node_created_watch_count", kind: kindSummary},
	{name: "session_queues_drained", kind: kindSummary},
	{name: "write_commit_proc_req_queued", kind: kindSummary},
	{name: "connection_token_deficit", kind: kindSummary},
	{name: "read_commit_proc_req_queued", kind: kindSummary},
	{name: "node_deleted_watch_count", kind: kindSummary},
	{name: "startup_txns_load_time", kind: kindSummary},
	{name: "sync_processor_queue_size", kind: kindSummary},
	{name: "follower_sync_time", kind: kindSummary},
	{name: "prep_processor_queue_size", kind: kindSummary},
	{name: "fsynctime", kind: kindSummary},
	{name: "inflight_snap_count", kind: kindSummary},
	{name: "reads_issued_from_session_queue", kind: kindSummary},
	{name: "learner_request_processor_queue_size", kind: kindSummary},
	{name: "snapshottime", kind: kindSummary},
	{name: "unavailable_time", kind: kindSummary},
	{name: "startup_txns_loaded", kind: kindSummary},
	{name: "reads_after_write_in_session_queue", kind: kindSummary},
	{name: "requests_in_session_queue", kind: kindSummary},
	{name: "write_commit_proc_issued", kind: kindSummary},
	{name: "prep_process_time", kind: kindSummary},
	{name: "pending_session_queue_size", kind: kindSummary},
	{name: "time_waiting_empty_pool_in_commit_processor_read_ms", kind: kindSummary},
	{name: "commit_process_time", kind: kindSummary},
	{name: "dbinittime", kind: kindSummary},
	{name: "inflight_diff_count", kind: kindSummary},
	{name: "netty_queued_buffer_capacity", kind: kindSummary},
	{name: "election_time", kind: kindSummary},
	{name: "commit_commit_proc_req_queued", kind: kindSummary},
	{name: "sync_processor_batch_size", kind: kindSummary},
	{name: "node_children_watch_count", kind: kindSummary},
	{name: "write_batch_time_in_commit_processor", kind: kindSummary},
	{name: "read_commit_proc_issued", kind: kindSummary},
	{name: "concurrent_request_processing_in_commit_processor", kind: kindSummary},
	{name: "observer_sync_time", kind: kindSummary},
	{name: "node_changed_watch_count", kind: kindSummary},
	{name: "sync_process_time", kind: kindSummary},
	{name: "startup_snap_load_time", kind: kindSummary},
	// detailed summaries
	{name: "prep_processor_queue_time_ms", kind: kindSummary, detailed: true},
	{name: "jvm_pause_time_ms", kind: kindSummary, detailed: true},
	{name: "close_session_prep_time", kind: kindSummary, detailed: true},
	{name: "read_commitproc_time_ms", kind: kindSummary, detailed: true},
	{name: "updatelatency", kind: kindSummary, detailed: true},
	{name: "local_write_committed_time_ms", kind: kindSummary, detailed: true},
	{name: "request_throttle_queue_time_ms", kind: kindSummary, detailed: true},
	{name: "readlatency", kind: kindSummary, detailed: true},
	{name: "quorum_ack_latency", kind: kindSummary, detailed: true},
	{name: "om_commit_process_time_ms", kind: kindSummary, detailed: true},
	{name: "read_final_proc_time_ms", kind: kindSummary, detailed: true},
	{name: "commit_propagation_latency", kind: kindSummary, detailed: true},
	{name: "dead_watchers_cleaner_latency", kind: kindSummary, detailed: true},
	{name: "write_final_proc_time_ms", kind: kindSummary, detailed: true},
	{name: "proposal_ack_creation_latency", kind: kindSummary, detailed: true},
	{name: "proposal_latency", kind: kindSummary, detailed: true},
	{name: "om_proposal_process_time_ms", kind: kindSummary, detailed: true},
	{name: "sync_processor_queue_and_flush_time_ms", kind: kindSummary, detailed: true},
	{name: "propagation_latency", kind: kindSummary, detailed: true},
	{name: "server_write_committed_time_ms", kind: kindSummary, detailed: true},
	{name: "sync_processor_queue_time_ms", kind: kindSummary, detailed: true},
	{name: "sync_processor_queue_flush_time_ms", kind: kindSummary, detailed: true},
	{name: "write_commitproc_time_ms", kind: kindSummary, detailed: true},
	// summary sets
	{name: "learner_handler_qp_size", kind: kindSummarySet},
	{name: "read_per_namespace", kind: kindSummarySet},
	{name: "write_per_namespace", kind: kindSummarySet},
	// detailed summary sets
	{name: "ack_latency", kind: kindSummarySet, detailed: true},
	{name: "learner_handler_qp_time_ms", kind: kindSummarySet, detailed: true},
}
