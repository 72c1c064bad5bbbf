package admin

import (
	"bytes"
	"fmt"
	"strconv"
)

// field is one named value of a command's output. Commands build ordered
// lists of fields so that mntr, the HTTP JSON and the metrics list their
// values in ZooKeeper's order.
type field struct {
	key   string
	value any
}

// javaFloat is a double that prints as Java prints it ("0.0", "2.2917"), in
// mntr and in JSON.
type javaFloat float64

func (f javaFloat) String() string { return javaDouble(float64(f)) }

// MarshalJSON writes f as Jackson writes a double.
func (f javaFloat) MarshalJSON() ([]byte, error) { return []byte(javaDouble(float64(f))), nil }

// monitorFields lists mntr's values without the zk_ prefix, in the order
// Apache ZooKeeper 3.8 prints them (which comes from a Java HashMap, so it
// is fixed but not sorted).
//
// Keeper prints ZooKeeper's core set plus the 3.6 additions it can compute.
// The remaining several hundred 3.6+ metrics (processor queue sizes, fsync
// and commit-processor summaries, response-size and TLS counters) are left
// out rather than printed as zeros. File-descriptor counts appear only
// where the platform reports them, as in ZooKeeper.
func (a *Admin) monitorFields(f facts) []field {
	st := f.stats
	fields := []field{
		{"version", a.cfg.Version},
		{"server_state", a.state()},
		{"ephemerals_count", int64(f.ephemerals)},
		{"num_alive_connections", int64(len(f.conns))},
		{"avg_latency", javaFloat(roundLatency(st.AvgLatencyMs))},
		{"outstanding_requests", int64(f.outstanding)},
		{"znode_count", int64(f.nodeCount)},
		{"global_sessions", int64(f.sessions)},
		{"packets_sent", st.PacketsSent},
		{"packets_received", st.PacketsReceived},
		{"connection_drop_probability", javaFloat(0)},
		{"watch_count", int64(f.watchCount)},
		{"auth_failed_count", st.AuthFailed},
		{"min_latency", st.MinLatencyMs},
	}
	open, limit, fdOK := fileDescriptors()
	if fdOK {
		fields = append(fields, field{"max_file_descriptor_count", limit})
	}
	fields = append(fields, field{"approximate_data_size", f.dataSize})
	if fdOK {
		fields = append(fields, field{"open_file_descriptor_count", open})
	}
	fields = append(fields,
		field{"local_sessions", int64(0)}, // keeper has no local sessions yet
		field{"uptime", a.uptime()},
		field{"max_latency", st.MaxLatencyMs},
	)
	if f.leading {
		q := f.quorum
		fields = append(fields,
			field{"quorum_size", int64(q.QuorumSize)},
			field{"learners", int64(q.Followers + q.Observers)},
			field{"followers", int64(q.Followers)},
			field{"synced_followers", int64(q.SyncedFollowers)},
			field{"synced_observers", int64(q.Observers)},
			field{"pending_syncs", int64(q.PendingSyncs)},
		)
	}
	return fields
}

// mntr renders monitorFields as "zk_<key>\t<value>" lines (docs/zookeeper-protocol.md §8.2).
func (a *Admin) mntr() ([]byte, bool) {
	f, ok := a.facts()
	if !ok {
		return nil, false
	}
	var b bytes.Buffer
	for _, fl := range a.monitorFields(f) {
		fmt.Fprintf(&b, "zk_%s\t%s\n", fl.key, formatValue(fl.value))
	}
	return b.Bytes(), true
}

// formatValue prints a field value as ZooKeeper's MonitorCommand does.
func formatValue(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case javaFloat:
		return v.String()
	case string:
		return v
	}
	return fmt.Sprint(v)
}
