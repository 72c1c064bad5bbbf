package admin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"keeper/coordination/admin"
	"keeper/coordination/server"
)

// TestAdminCommands runs every implemented AdminServer command under its
// primary name and each alias, and checks the JSON keys ZooKeeper 3.8's
// admin/Commands.java gives it.
func TestAdminCommands(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		names []string // primary first
		keys  []string
	}{
		{[]string{"ruok"}, nil},
		{[]string{"server_stats", "srvr"}, []string{"version", "read_only", "server_stats", "client_response", "node_count"}},
		{[]string{"stats", "stat"}, []string{"version", "read_only", "server_stats", "client_response", "node_count",
			"connections", "secure_connections"}},
		{[]string{"monitor", "mntr"}, []string{"version", "server_state", "znode_count", "watch_count",
			"ephemerals_count", "approximate_data_size", "num_alive_connections", "outstanding_requests",
			"packets_received", "packets_sent", "avg_latency", "max_latency", "min_latency", "global_sessions",
			"local_sessions", "uptime", "auth_failed_count", "connection_drop_probability"}},
		{[]string{"connections", "cons"}, []string{"connections", "secure_connections"}},
		{[]string{"configuration", "conf", "config"}, []string{"client_port", "data_dir", "data_log_dir",
			"tick_time", "max_client_cnxns", "min_session_timeout", "max_session_timeout", "server_id",
			"client_port_listen_backlog"}},
		{[]string{"environment", "env", "envi"}, []string{"zookeeper.version", "host.name", "os.name", "user.dir"}},
		{[]string{"dirs"}, []string{"datadir_size", "logdir_size"}},
		{[]string{"dump"}, []string{"expiry_time_to_session_ids", "session_id_to_ephemeral_paths"}},
		{[]string{"watch_summary", "wchs"}, []string{"num_connections", "num_paths", "num_total_watches"}},
		{[]string{"watches", "wchc"}, []string{"session_id_to_watched_paths"}},
		{[]string{"watches_by_path", "wchp"}, []string{"path_to_session_ids"}},
		{[]string{"is_read_only", "isro"}, []string{"read_only"}},
		{[]string{"connection_stat_reset", "crst"}, nil},
		{[]string{"stat_reset", "srst"}, nil},
		{[]string{"hash"}, []string{"digests"}},
		{[]string{"get_trace_mask", "gtmk"}, []string{"tracemask"}},
	}
	for _, tt := range tests {
		for _, name := range tt.names {
			t.Run(name, func(t *testing.T) {
				m := getJSON(t, f.s, "/commands/"+name)
				if m["command"] != tt.names[0] {
					t.Errorf("command = %v, want %s", m["command"], tt.names[0])
				}
				if e, ok := m["error"]; !ok || e != nil {
					t.Errorf("error = %v (present %v), want null", e, ok)
				}
				for _, k := range tt.keys {
					if _, ok := m[k]; !ok {
						t.Errorf("no %q in %v", k, m)
					}
				}
			})
		}
	}
}

// TestAdminCommandValues checks the nested fields and values of the
// commands whose content the fixture fixes.
func TestAdminCommandValues(t *testing.T) {
	f := newFixture(t)
	s1, s2 := fmt.Sprint(f.c1.SessionID()), fmt.Sprint(f.c2.SessionID())
	stats := getJSON(t, f.s, "/commands/stats")
	if stats["node_count"] != 9.0 || stats["read_only"] != false {
		t.Errorf("stats: %v", stats)
	}
	ss, _ := stats["server_stats"].(map[string]any)
	for _, k := range []string{"packets_sent", "packets_received", "fsync_threshold_exceed_count", "client_response_stats",
		"uptime", "data_dir_size", "log_dir_size", "provider_null", "server_state", "last_processed_zxid",
		"outstanding_requests", "avg_latency", "max_latency", "min_latency", "num_alive_client_connections",
		"auth_failed_count", "non_mtlsremote_conn_count", "non_mtlslocal_conn_count"} {
		if _, ok := ss[k]; !ok {
			t.Errorf("server_stats has no %q: %v", k, ss)
		}
	}
	if ss["server_state"] != "standalone" || ss["data_dir_size"] != 1234.0 {
		t.Errorf("server_stats: %v", ss)
	}
	cons := getJSON(t, f.s, "/commands/connections")
	conns, _ := cons["connections"].([]any)
	sessions := 0
	for _, c := range conns {
		c := c.(map[string]any)
		for _, k := range []string{"remote_socket_address", "interest_ops", "outstanding_requests", "packets_received",
			"packets_sent", "session_id", "last_operation", "established", "session_timeout", "last_cxid",
			"last_zxid", "last_response_time", "last_latency", "min_latency", "avg_latency", "max_latency"} {
			if _, ok := c[k]; !ok {
				t.Errorf("connection has no %q: %v", k, c)
			}
		}
		if c["session_id"] != 0.0 {
			sessions++
		}
	}
	if sessions != 2 {
		t.Errorf("%d connections with a session, want 2: %v", sessions, conns)
	}
	wantJSON(t, f.s, "watch_summary", `"num_connections":2,"num_paths":2,"num_total_watches":3`)
	wantJSON(t, f.s, "watches", fmt.Sprintf(`"session_id_to_watched_paths":{"%s":["/a"],"%s":["/a","/nope"]}`, s1, s2))
	wantJSON(t, f.s, "watches_by_path", fmt.Sprintf(`"path_to_session_ids":{"/a":[%s,%s],"/nope":[%s]}`, s1, s2, s2))
	wantJSON(t, f.s, "dump", fmt.Sprintf(`"session_id_to_ephemeral_paths":{"%s":["/a/e"],"%s":["/a/f"]}`, s1, s2))
	wantJSON(t, f.s, "dirs", `"datadir_size":1234,"logdir_size":1234`)
	wantJSON(t, f.s, "monitor", `"znode_count":9`)
	// Doubles print as Jackson prints them, with a fraction even when whole.
	monitor := regexp.MustCompile(`\s+`).ReplaceAllString(get(t, f.s, "/commands/monitor"), "")
	if !regexp.MustCompile(`"avg_latency":\d+\.\d+,.*"connection_drop_probability":0\.0,`).MatchString(monitor) {
		t.Errorf("monitor: doubles not in Java form: %s", monitor)
	}
}

// wantJSON fetches a command and checks that its compacted body contains
// want.
func wantJSON(t *testing.T, s *server.Server, name, want string) {
	t.Helper()
	body := regexp.MustCompile(`\s+`).ReplaceAllString(get(t, s, "/commands/"+name), "")
	if !strings.Contains(body, want) {
		t.Errorf("%s: %s does not contain %s", name, body, want)
	}
}

// TestAdminErrors checks the listing, ZooKeeper's error objects and the
// trace-mask arguments.
func TestAdminErrors(t *testing.T) {
	s := startServer(t)
	m := getJSON(t, s, "/commands/no_such_command")
	if m["command"] != "no_such_command" || m["error"] != "Unknown command: no_such_command" {
		t.Errorf("unknown command: %v", m)
	}
	m = getJSON(t, s, "/commands/set_trace_mask")
	if m["command"] != "set_trace_mask" || m["error"] != "setTraceMask requires long traceMask argument" {
		t.Errorf("set_trace_mask without argument: %v", m)
	}
	m = getJSON(t, s, "/commands/stmk?traceMask=x")
	if m["error"] != "setTraceMask requires long traceMask argument, got x" {
		t.Errorf("set_trace_mask with a bad argument: %v", m)
	}
	m = getJSON(t, s, "/commands/stmk?traceMask=42")
	if m["tracemask"] != 42.0 || m["error"] != nil {
		t.Errorf("set_trace_mask: %v", m)
	}
	if got := flw(t, s.Addr(), "gtmk", nil); got != "42" {
		t.Errorf("gtmk after set_trace_mask = %q", got)
	}
	for _, path := range []string{"/commands", "/commands/"} {
		list := get(t, s, path)
		for _, name := range []string{"server_stats", "monitor", "connections", "watches_by_path"} {
			if !strings.Contains(list, fmt.Sprintf(`<a href="/commands/%s">%s</a>`, name, name)) {
				t.Errorf("%s lists no %s:\n%s", path, name, list)
			}
		}
	}
}

// TestAdminNotServing checks the HTTP answers once the core has stopped.
func TestAdminNotServing(t *testing.T) {
	a, err := admin.New(admin.Config{Version: server.Version(), Start: time.Now()}, stopped{})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler()
	for _, tt := range []struct {
		name       string
		notServing bool
	}{
		{"server_stats", true}, {"monitor", true}, {"watches", true}, {"ruok", true}, {"configuration", true},
		{"environment", false}, {"get_trace_mask", false},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/commands/"+tt.name, nil))
		got := strings.Contains(rec.Body.String(), `"error": "This ZooKeeper instance is not currently serving requests"`)
		if rec.Code != http.StatusOK || got != tt.notServing {
			t.Errorf("%s: %d %s", tt.name, rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/commands/ruok", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

// TestMetrics checks /metrics for ZooKeeper's metric names and the values
// the fixture fixes.
func TestMetrics(t *testing.T) {
	f := newFixture(t)
	body := get(t, f.s, "/metrics")
	lines := strings.Split(body, "\n")
	for _, want := range []string{"znode_count 9", "ephemerals_count 2", "global_sessions 2", "watch_count 4",
		"approximate_data_size 60", "outstanding_requests 0", "local_sessions 0"} {
		if !slices.Contains(lines, want) {
			t.Errorf("no %q in /metrics", want)
		}
	}
	for _, name := range []string{"avg_latency", "max_latency", "min_latency", "packets_received", "packets_sent",
		"num_alive_connections", "uptime", "auth_failed_count", "connection_drop_probability",
		"open_file_descriptor_count", "max_file_descriptor_count", "go_goroutines", "process_open_fds"} {
		if !regexp.MustCompile(`(?m)^` + name + ` \S+$`).MatchString(body) {
			t.Errorf("no %s sample in /metrics", name)
		}
	}
	if !strings.Contains(body, "# TYPE znode_count gauge") {
		t.Error("znode_count is not a gauge")
	}
}

// TestAdminLifecycle checks that AdminAddr "" disables the HTTP server and
// that Close stops it.
func TestAdminLifecycle(t *testing.T) {
	off := startServer(t, func(c *server.Config) { c.AdminAddr = "" })
	if off.AdminAddr() != nil {
		t.Errorf("admin server runs at %v with AdminAddr empty", off.AdminAddr())
	}
	if got := flw(t, off.Addr(), "ruok", nil); got != "imok" {
		t.Errorf("ruok without the admin server: %q", got)
	}
	on := startServer(t)
	addr := on.AdminAddr().String()
	if err := on.Close(); err != nil {
		t.Fatal(err)
	}
	client := http.Client{Timeout: testTimeout}
	if resp, err := client.Get("http://" + addr + "/commands/ruok"); err == nil {
		resp.Body.Close()
		t.Errorf("admin server still answers after Close: %s", resp.Status)
	}
}
