package admin

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"

	"keeper/internal/metric"
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
// Apache ZooKeeper 3.8 prints them: version and server_state (and a
// quorum member's peer_state, and an observer's observer_master_id), then
// the catalog, each entry that keeper measures (docs/observability.md
// lists the ones it does not, and why).
// File-descriptor counts appear only where the platform reports them, as
// in ZooKeeper.
func (a *Admin) monitorFields(f facts) []field {
	fields := []field{
		{"version", a.cfg.Version},
		{"server_state", a.state()},
	}
	if f.inQuorum && f.quorum.PeerState != "" {
		fields = append(fields, field{"peer_state", f.quorum.PeerState})
	}
	if f.inQuorum && f.quorum.Observing {
		fields = append(fields, field{"observer_master_id", f.quorum.ObserverMasterID})
	}
	gauges := a.gauges(f)
	entries := catalog
	if f.inQuorum {
		entries = quorumCatalog
	}
	for _, e := range entries {
		if e.kind == kindGauge {
			if v, ok := gauges[e.name]; ok {
				fields = append(fields, field{e.name, v})
			}
			continue
		}
		m, ok := a.cfg.Metrics.Lookup(e.name)
		if !ok {
			continue
		}
		switch m := m.(type) {
		case *metric.Counter:
			fields = append(fields, field{e.name, m.Load()})
		case *metric.CounterSet:
			for _, k := range javaOrder(m.Snapshot()) {
				fields = append(fields, field{k.Key + "_" + e.name, k.Count})
			}
		case *metric.Summary:
			fields = appendSummary(fields, e.name, m.Snapshot(), e.detailed)
		case *metric.SummarySet:
			for _, k := range javaOrder(m.Snapshot()) {
				fields = appendSummary(fields, k.Key+"_"+e.name, k.Snapshot, e.detailed)
			}
		}
	}
	return fields
}

// gauges returns the sampled values of the catalog's gauges that keeper
// measures.
func (a *Admin) gauges(f facts) map[string]any {
	st := f.stats
	g := map[string]any{
		"ephemerals_count":            int64(f.ephemerals),
		"num_alive_connections":       int64(len(f.conns)),
		"avg_latency":                 javaFloat(roundLatency(st.AvgLatencyMs)),
		"outstanding_requests":        int64(f.outstanding),
		"znode_count":                 int64(f.nodeCount),
		"global_sessions":             int64(f.sessions),
		"last_client_response_size":   st.LastResponseBytes,
		"packets_sent":                st.PacketsSent,
		"packets_received":            st.PacketsReceived,
		"max_client_response_size":    st.MaxResponseBytes,
		"connection_drop_probability": javaFloat(0), // keeper has no connection-drop throttle
		"watch_count":                 int64(f.watchCount),
		"auth_failed_count":           st.AuthFailed,
		"min_latency":                 st.MinLatencyMs,
		"approximate_data_size":       f.dataSize,
		"local_sessions":              int64(0), // keeper has no local sessions
		"uptime":                      a.uptime(),
		"max_latency":                 st.MaxLatencyMs,
		"min_client_response_size":    st.MinResponseBytes,
	}
	if a.cfg.Connections != nil {
		c := a.cfg.Connections()
		g["outstanding_tls_handshake"] = c.OutstandingTLSHandshakes
		g["non_mtls_remote_conn_count"] = c.NonMTLSRemote
		g["non_mtls_local_conn_count"] = c.NonMTLSLocal
	}
	if open, limit, ok := fileDescriptors(); ok {
		g["max_file_descriptor_count"] = limit
		g["open_file_descriptor_count"] = open
	}
	if f.inQuorum {
		q := f.quorum
		g["quorum_size"] = int64(q.QuorumSize)
		if q.Leading {
			g["learners"] = int64(q.Followers + q.Observers)
			g["synced_followers"] = int64(q.SyncedFollowers)
			g["synced_observers"] = int64(q.Observers)
			g["pending_syncs"] = int64(q.PendingSyncs)
			g["synced_non_voting_followers"] = int64(0) // keeper's followers all vote
			g["leader_uptime"] = q.LeaderUptimeMs
			g["last_proposal_size"] = q.LastProposalBytes
			g["min_proposal_size"] = q.MinProposalBytes
			g["max_proposal_size"] = q.MaxProposalBytes
		}
	}
	return g
}

// appendSummary adds a summary's avg_, min_, max_, cnt_ and sum_ fields,
// and p50_ to p999_ when detailed, as ZooKeeper's AvgMinMaxCounter and
// AvgMinMaxPercentileCounter print them: the average rounded half up to 4
// decimals, percentiles rounded to whole numbers.
func appendSummary(fields []field, name string, s metric.Snapshot, detailed bool) []field {
	fields = append(fields,
		field{"avg_" + name, javaFloat(roundLatency(s.Avg()))},
		field{"min_" + name, s.Min},
		field{"max_" + name, s.Max},
		field{"cnt_" + name, s.Count},
		field{"sum_" + name, s.Sum},
	)
	if detailed {
		fields = append(fields,
			field{"p50_" + name, int64(math.Round(s.Quantile(0.5)))},
			field{"p95_" + name, int64(math.Round(s.Quantile(0.95)))},
			field{"p99_" + name, int64(math.Round(s.Quantile(0.99)))},
			field{"p999_" + name, int64(math.Round(s.Quantile(0.999)))},
		)
	}
	return fields
}

// javaOrder orders the keys of a summary or counter set as ZooKeeper's
// ConcurrentHashMap iterates them: by bucket, the bucket being the spread
// String.hashCode of the key modulo the table size, which starts at 16 and
// doubles once the map holds three quarters of it. Keys in one bucket keep
// their sorted order.
func javaOrder(keys []metric.Keyed) []metric.Keyed {
	table := 16
	for len(keys) >= table-table/4 {
		table *= 2
	}
	bucket := func(s string) int {
		var h int32
		for _, r := range utf16.Encode([]rune(s)) {
			h = 31*h + int32(r)
		}
		u := uint32(h)
		return int((u ^ u>>16) & 0x7fffffff & uint32(table-1))
	}
	out := slices.Clone(keys)
	slices.SortStableFunc(out, func(x, y metric.Keyed) int { return bucket(x.Key) - bucket(y.Key) })
	return out
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
