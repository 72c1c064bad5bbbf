package admin_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"keeper/coordination/admin"
	"keeper/coordination/server"
)

// TestStandaloneQuorumCommands checks the ensemble, snapshot and
// configuration commands on a standalone server against what ZooKeeper
// 3.8's standalone server answers.
func TestStandaloneQuorumCommands(t *testing.T) {
	const cfgText = "tickTime=2000\ndataDir=/somewhere\n"
	before := time.Now().Add(-time.Second)
	s := startServer(t, func(c *server.Config) {
		c.Storage = server.StorageConfig{DataDir: t.TempDir()}
		c.InitialConfig = cfgText
		c.SystemProperties = map[string]string{"zookeeper.snapCount": "100000"}
	})
	tests := []struct {
		names []string // primary first
		want  string   // the compacted body holds it
	}{
		{[]string{"initial_configuration", "icfg"}, `"initial_configuration":"tickTime=2000\ndataDir=/somewhere\n","command":"initial_configuration","error":null`},
		{[]string{"leader", "lead"}, `{"error":"serverisnotinitialized","command":"leader"}`},
		{[]string{"observers", "obsr"}, `{"synced_observers":0,"observers":[],"command":"observers","error":null}`},
		{[]string{"observer_connection_stat_reset", "orst"}, `{"command":"observer_connection_stat_reset","error":null}`},
		{[]string{"voting_view"}, `{"current_config":{},"command":"voting_view","error":null}`},
		{[]string{"zabstate"}, `{"voting":false,"zabstate":"","command":"zabstate","error":null}`},
		{[]string{"system_properties", "sysp"}, `"go.version":"` + runtime.Version() + `"`},
		{[]string{"system_properties", "sysp"}, `"zookeeper.snapCount":"100000"`},
		// A fresh data directory gets snapshot.0 at start.
		{[]string{"last_snapshot", "lsnp"}, `{"zxid":"0","timestamp":`},
	}
	for _, tt := range tests {
		for _, name := range tt.names {
			t.Run(name, func(t *testing.T) { wantJSON(t, s, name, strings.ReplaceAll(tt.want, " ", "")) })
		}
	}
	ts, ok := getJSON(t, s, "/commands/last_snapshot")["timestamp"].(float64)
	if !ok || int64(ts) < before.Unix() || int64(ts) > time.Now().Unix()+1 {
		t.Errorf("last_snapshot timestamp %v is not the snapshot's time in seconds", ts)
	}
	// system_properties lists its keys sorted, as ZooKeeper does.
	body := get(t, s, "/commands/system_properties")
	var keys []string
	for _, line := range strings.Split(body, "\n") {
		if k, _, ok := strings.Cut(strings.TrimSpace(line), `": `); ok && k != `"command` && k != `"error` {
			keys = append(keys, strings.TrimPrefix(k, `"`))
		}
	}
	if len(keys) < 5 || !slices.IsSorted(keys) {
		t.Errorf("system_properties keys not sorted or too few: %v", keys)
	}
	// Every ZooKeeper 3.8 command is listed.
	list := get(t, s, "/commands")
	for _, name := range []string{"initial_configuration", "last_snapshot", "leader", "observers",
		"observer_connection_stat_reset", "system_properties", "voting_view", "zabstate"} {
		if !strings.Contains(list, `<a href="/commands/`+name+`">`) {
			t.Errorf("/commands lists no %s", name)
		}
	}
}

// TestLastSnapshotWithoutOne: a server that keeps no files has no snapshot,
// which ZooKeeper reports as zxid -1 in hex and timestamp -1.
func TestLastSnapshotWithoutOne(t *testing.T) {
	s := startServer(t)
	wantJSON(t, s, "last_snapshot", `{"zxid":"ffffffffffffffff","timestamp":-1,`)
	wantJSON(t, s, "initial_configuration", `{"initial_configuration":null,`)
}

// TestQuorumCommandsNotServing checks which of the commands answer once
// the core has stopped: zabstate and system_properties do, as in ZooKeeper.
func TestQuorumCommandsNotServing(t *testing.T) {
	a, err := admin.New(admin.Config{Version: server.Version(), Start: time.Now()}, stopped{})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler()
	for _, tt := range []struct {
		name       string
		notServing bool
	}{
		{"initial_configuration", true}, {"last_snapshot", true}, {"leader", true}, {"observers", true},
		{"observer_connection_stat_reset", true}, {"voting_view", true},
		{"zabstate", false}, {"system_properties", false},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/commands/"+tt.name, nil))
		got := strings.Contains(rec.Body.String(), `"error": "This ZooKeeper instance is not currently serving requests"`)
		if rec.Code != http.StatusOK || got != tt.notServing {
			t.Errorf("%s: %d %s", tt.name, rec.Code, rec.Body)
		}
	}
}
