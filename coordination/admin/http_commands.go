package admin

import (
	"net/url"
	"slices"
	"strconv"

	"keeper/coordination/zkcore"
)

// httpCommand is one AdminServer command. run returns the command's fields,
// or an error message for the "error" key.
type httpCommand struct {
	names []string // the primary name first, then the aliases
	run   func(a *Admin, args url.Values) (fields []field, errMsg string)
}

// serverCommands are the AdminServer commands about the server and its
// clients, with ZooKeeper 3.8's names and field names (admin/Commands.java);
// quorumCommands has the rest. Together they are every command ZooKeeper
// 3.8 has.
var serverCommands = []httpCommand{
	{[]string{"connection_stat_reset", "crst"}, func(a *Admin, _ url.Values) ([]field, string) {
		return nil, servingError(a.core.Inspect((*zkcore.Server).ResetConnStats))
	}},
	{[]string{"configuration", "conf", "config"}, func(a *Admin, _ url.Values) ([]field, string) {
		if !a.serving() {
			return nil, notServing
		}
		return a.configurationFields(), ""
	}},
	{[]string{"connections", "cons"}, (*Admin).connectionsCommand},
	{[]string{"dirs"}, func(a *Admin, _ url.Values) ([]field, string) {
		if !a.serving() {
			return nil, notServing
		}
		return []field{{"datadir_size", dirSize(a.cfg.SnapDir)}, {"logdir_size", dirSize(a.cfg.LogDir)}}, ""
	}},
	{[]string{"dump"}, (*Admin).dumpCommand},
	{[]string{"environment", "env", "envi"}, func(a *Admin, _ url.Values) ([]field, string) {
		return a.environment(), ""
	}},
	{[]string{"get_trace_mask", "gtmk"}, func(a *Admin, _ url.Values) ([]field, string) {
		return []field{{"tracemask", a.TraceMask()}}, ""
	}},
	{[]string{"hash"}, (*Admin).hashCommand},
	{[]string{"is_read_only", "isro"}, func(a *Admin, _ url.Values) ([]field, string) {
		if !a.serving() {
			return nil, notServing
		}
		return []field{{"read_only", a.state() == "read-only"}}, ""
	}},
	{[]string{"monitor", "mntr"}, func(a *Admin, _ url.Values) ([]field, string) {
		f, ok := a.facts()
		if !ok {
			return nil, notServing
		}
		return a.monitorFields(f), ""
	}},
	{[]string{"ruok"}, func(a *Admin, _ url.Values) ([]field, string) {
		return nil, servingError(a.serving())
	}},
	{[]string{"set_trace_mask", "stmk"}, (*Admin).setTraceMaskCommand},
	{[]string{"server_stats", "srvr"}, func(a *Admin, _ url.Values) ([]field, string) {
		return a.serverStatsCommand(false)
	}},
	{[]string{"stats", "stat"}, func(a *Admin, _ url.Values) ([]field, string) {
		return a.serverStatsCommand(true)
	}},
	{[]string{"stat_reset", "srst"}, func(a *Admin, _ url.Values) ([]field, string) {
		return nil, servingError(a.core.Inspect((*zkcore.Server).ResetStats))
	}},
	{[]string{"watch_summary", "wchs"}, (*Admin).watchSummaryCommand},
	{[]string{"watches", "wchc"}, (*Admin).watchesCommand},
	{[]string{"watches_by_path", "wchp"}, (*Admin).watchesByPathCommand},
}

// httpCommands are every AdminServer command keeper implements.
var httpCommands = slices.Concat(serverCommands, quorumCommands)

// commandByName finds a command by its primary name or an alias.
func commandByName(name string) (httpCommand, bool) {
	for _, c := range httpCommands {
		if slices.Contains(c.names, name) {
			return c, true
		}
	}
	return httpCommand{}, false
}

// servingError is the error message for a command that needed the core.
func servingError(ok bool) string {
	if ok {
		return ""
	}
	return notServing
}

// serverStatsCommand answers server_stats, and stats when withConns is set
// (brief connection objects added); a leader's adds proposal_stats. Figures keeper does not track are
// given ZooKeeper's "no data" values: -1 for the client response buffer
// sizes, 0 for the fsync-threshold and non-mTLS counters.
func (a *Admin) serverStatsCommand(withConns bool) ([]field, string) {
	f, ok := a.facts()
	if !ok {
		return nil, notServing
	}
	st := f.stats
	responseStats := object{{"last_buffer_size", -1}, {"min_buffer_size", -1}, {"max_buffer_size", -1}}
	stats := object{
		{"packets_sent", st.PacketsSent},
		{"packets_received", st.PacketsReceived},
		{"fsync_threshold_exceed_count", 0},
		{"client_response_stats", responseStats},
		{"uptime", a.uptime()},
		{"data_dir_size", dirSize(a.cfg.SnapDir)},
		{"log_dir_size", dirSize(a.cfg.LogDir)},
		{"provider_null", false},
		{"server_state", a.state()},
		{"last_processed_zxid", int64(f.lastZxid)},
		{"outstanding_requests", f.outstanding},
		{"avg_latency", javaFloat(roundLatency(st.AvgLatencyMs))},
		{"max_latency", st.MaxLatencyMs},
		{"min_latency", st.MinLatencyMs},
		{"num_alive_client_connections", len(f.conns)},
		{"auth_failed_count", st.AuthFailed},
		{"non_mtlsremote_conn_count", 0},
		{"non_mtlslocal_conn_count", 0},
	}
	fields := []field{
		{"version", a.cfg.Version},
		{"read_only", a.state() == "read-only"},
		{"server_stats", stats},
		{"client_response", responseStats},
	}
	if f.inQuorum && f.quorum.Leading {
		// A leader adds the sizes of the txns it proposed, as ZooKeeper's
		// BufferStats: -1 before the first.
		q := f.quorum
		fields = append(fields, field{"proposal_stats", object{{"last_buffer_size", q.LastProposalBytes},
			{"min_buffer_size", q.MinProposalBytes}, {"max_buffer_size", q.MaxProposalBytes}}})
	}
	fields = append(fields, field{"node_count", f.nodeCount})
	if withConns {
		fields = append(fields, field{"connections", connObjects(f.conns, true)}, field{"secure_connections", []object{}})
	}
	return fields, ""
}

// connectionsCommand lists every connection in full.
func (a *Admin) connectionsCommand(url.Values) ([]field, string) {
	var conns []zkcore.ConnInfo
	if !a.core.Inspect(func(core *zkcore.Server) { conns = core.Conns() }) {
		return nil, notServing
	}
	return []field{{"connections", connObjects(conns, false)}, {"secure_connections", []object{}}}, ""
}

// connObjects describes connections as ServerCnxn.getConnectionInfo does.
func connObjects(conns []zkcore.ConnInfo, brief bool) []object {
	out := make([]object, 0, len(conns))
	for _, c := range conns {
		o := object{
			{"remote_socket_address", remoteString(c.Remote)},
			{"interest_ops", 1},
			{"outstanding_requests", c.Queued},
			{"packets_received", c.Received},
			{"packets_sent", c.Sent},
		}
		if !brief {
			o = append(o,
				field{"session_id", c.SessionID},
				field{"last_operation", c.LastOp.ShortName()},
				field{"established", c.EstablishedMs},
				field{"session_timeout", c.TimeoutMs},
				field{"last_cxid", c.LastCxid},
				field{"last_zxid", int64(c.LastZxid)},
				field{"last_response_time", c.LastRespMs},
				field{"last_latency", c.LastLatencyMs},
				field{"min_latency", c.MinLatencyMs},
				field{"avg_latency", connAvgLatency(c)},
				field{"max_latency", c.MaxLatencyMs},
			)
		}
		out = append(out, o)
	}
	return out
}

// dumpCommand maps expiry times (the core's monotonic ms, as ZooKeeper's
// elapsed-time clock) to session ids, and session ids to ephemeral paths.
func (a *Admin) dumpCommand(url.Values) ([]field, string) {
	d, ok := a.gatherDump()
	if !ok {
		return nil, notServing
	}
	expiry := make(map[string][]int64, len(d.buckets))
	for _, b := range d.buckets {
		expiry[strconv.FormatInt(b.ExpiresAtMs, 10)] = b.IDs
	}
	ephemerals := make(map[string][]string, len(d.ephemerals))
	for _, e := range d.ephemerals {
		ephemerals[strconv.FormatInt(e.session, 10)] = e.paths
	}
	return []field{{"expiry_time_to_session_ids", expiry}, {"session_id_to_ephemeral_paths", ephemerals}}, ""
}

// hashCommand lists the digest log.
func (a *Admin) hashCommand(url.Values) ([]field, string) {
	d, ok := a.digests()
	if !ok {
		return nil, notServing
	}
	digests := make([]object, 0, len(d))
	for _, e := range d {
		digests = append(digests, object{{"zxid", int64(e.zxid)}, {"digest_version", 2}, {"digest", e.digest}})
	}
	return []field{{"digests", digests}}, ""
}

// setTraceMaskCommand sets the trace mask from the traceMask argument.
func (a *Admin) setTraceMaskCommand(args url.Values) ([]field, string) {
	// ZooKeeper puts these errors into the response first, so "error"
	// comes before "command".
	if !args.Has("traceMask") {
		return []field{{"error", "setTraceMask requires long traceMask argument"}}, ""
	}
	mask, err := strconv.ParseInt(args.Get("traceMask"), 10, 64)
	if err != nil {
		return []field{{"error", "setTraceMask requires long traceMask argument, got " + args.Get("traceMask")}}, ""
	}
	a.traceMask.Store(mask)
	return []field{{"tracemask", mask}}, ""
}

func (a *Admin) watchSummaryCommand(url.Values) ([]field, string) {
	w, ok := a.gatherWatches(watchSummary)
	if !ok {
		return nil, notServing
	}
	return []field{{"num_connections", w.conns}, {"num_paths", w.paths}, {"num_total_watches", w.total}}, ""
}

func (a *Admin) watchesCommand(url.Values) ([]field, string) {
	w, ok := a.gatherWatches(watchByConn)
	if !ok {
		return nil, notServing
	}
	m := make(map[string][]string, len(w.byConn))
	for _, cw := range w.byConn {
		m[strconv.FormatInt(w.sessions[cw.Conn], 10)] = cw.Paths
	}
	return []field{{"session_id_to_watched_paths", m}}, ""
}

func (a *Admin) watchesByPathCommand(url.Values) ([]field, string) {
	w, ok := a.gatherWatches(watchByPath)
	if !ok {
		return nil, notServing
	}
	m := make(map[string][]int64, len(w.byPath))
	for _, pw := range w.byPath {
		ids := make([]int64, 0, len(pw.Conns))
		for _, c := range pw.Conns {
			ids = append(ids, w.sessions[c])
		}
		m[pw.Path] = ids
	}
	return []field{{"path_to_session_ids", m}}, ""
}
